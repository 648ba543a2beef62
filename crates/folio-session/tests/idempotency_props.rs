//! Property: whatever the key and whatever mix of requests race with it, concurrent keyed
//! creates make one session and concurrent keyed follow-ups one message; every request that
//! repeats the winning request gets the winner's answer, and every request that differs from it
//! is refused with `idempotency_key_reused`.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use folio_protocol::{Admission, CreateSession, ErrorCode, EventBody, FollowUp};
use folio_session::{Accepted, ManagerError, SessionManager};
use folio_test_support::{MockModelServer, MockReply};
use proptest::prelude::*;
use support::*;

/// One request body a client may send with the key.
#[derive(Debug, Clone, PartialEq)]
struct Body {
    message: String,
    file: Option<String>,
    /// A create's title, or a follow-up's admission (`Some`: coalesce).
    extra: Option<String>,
}

fn body() -> impl Strategy<Value = Body> {
    (
        "[a-c]{1,2}",
        proptest::option::of("[pq]"),
        proptest::option::of("[xy]"),
    )
        .prop_map(|(message, file, extra)| Body {
            message,
            file,
            extra,
        })
}

fn files(body: &Body) -> BTreeMap<String, String> {
    body.file
        .iter()
        .map(|contents| ("in.txt".to_string(), contents.clone()))
        .collect()
}

fn create(body: &Body, key: &str) -> CreateSession {
    CreateSession {
        title: body.extra.clone(),
        workspace_files: files(body),
        client_message_id: Some(key.to_string()),
        ..CreateSession::message(body.message.clone())
    }
}

fn follow_up(body: &Body, key: &str, token: &str) -> FollowUp {
    FollowUp {
        admission: body.extra.as_ref().map(|_| Admission::Coalesce),
        workspace_files: files(body),
        client_message_id: Some(key.to_string()),
        ..FollowUp::new(token, body.message.clone())
    }
}

/// The answer a client sees: the session and its token (the events each request appended,
/// which its span records, differ by design: a retry may append none).
fn seen(accepted: &Accepted) -> (String, String) {
    (
        accepted.session_id.clone(),
        accepted.continuation_token.clone(),
    )
}

/// Checks the answers of requests that raced with one key: at least one accepted, all accepted
/// ones sent the same body and got the same answer, every other one sent another body and was
/// refused as a reused key. Returns the winning body.
fn check_race(sent: &[Body], answers: &[Result<Accepted, ManagerError>]) -> Body {
    let winner = sent
        .iter()
        .zip(answers)
        .find_map(|(body, answer)| answer.as_ref().ok().map(|accepted| (body, accepted)));
    let Some((winner, accepted)) = winner else {
        panic!("no request was accepted: {answers:?}");
    };
    for (body, answer) in sent.iter().zip(answers) {
        match answer {
            Ok(got) => {
                assert_eq!(body, winner, "two different bodies accepted with one key");
                assert_eq!(seen(got), seen(accepted), "one key, two answers");
            }
            Err(err) => {
                assert_ne!(
                    body, winner,
                    "the winning request repeated was refused: {err}"
                );
                assert_eq!(err.code(), ErrorCode::IdempotencyKeyReused, "{err}");
                assert!(err.to_string().contains("send a new key"), "{err}");
            }
        }
    }
    winner.clone()
}

/// The texts of the session's `message.received` events carrying `key`.
async fn keyed_texts(manager: &SessionManager, id: &str, key: &str) -> Vec<String> {
    manager
        .events()
        .read("local", id)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|event| match event.body {
            EventBody::MessageReceived(m) if m.client_message_id.as_deref() == Some(key) => {
                Some(m.text)
            }
            EventBody::MessageQueued(m) if m.client_message_id.as_deref() == Some(key) => {
                Some(m.text)
            }
            _ => None,
        })
        .collect()
}

async fn race(key: String, bodies: Vec<Body>, picks: Vec<usize>) {
    let mock = MockModelServer::start().await;
    for n in 0..40 {
        mock.push(MockReply::text(format!("reply {n}")).first_byte_delay(Duration::from_millis(5)));
    }
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let sent: Vec<Body> = picks
        .iter()
        .map(|i| bodies[i % bodies.len()].clone())
        .collect();

    // Keyed creates, all at once.
    let tasks: Vec<_> = sent
        .iter()
        .map(|body| {
            let manager = manager.clone();
            let request = create(body, &key);
            tokio::spawn(async move { manager.sessions().create("local", "http", request).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let winner = check_race(&sent, &answers);
    let page = manager
        .sessions()
        .list("local", 200, None, None)
        .await
        .unwrap();
    assert_eq!(page.data.len(), 1, "one key, one session");
    let created = answers.into_iter().find_map(Result::ok).unwrap();
    let id = created.session_id.clone();
    assert_eq!(
        keyed_texts(&manager, &id, &key).await,
        std::slice::from_ref(&winner.message)
    );
    // A later retry of the winner still gets the first answer.
    assert_eq!(
        manager
            .sessions()
            .create("local", "http", create(&winner, &key))
            .await
            .as_ref()
            .map(seen),
        Ok(seen(&created))
    );

    // The create's key names the create: a follow-up sending it again is another request.
    let reused = manager
        .turns()
        .follow_up(
            "local",
            &id,
            follow_up(&winner, &key, &created.continuation_token),
        )
        .await
        .unwrap_err();
    assert_eq!(reused.code(), ErrorCode::IdempotencyKeyReused);

    // Keyed follow-ups with the first token, all at once, under a key of their own. A
    // follow-up's `extra` only says "coalesce": two bodies that differ only in its letter are
    // the same request.
    let key = format!("{key}/f");
    let sent: Vec<Body> = sent
        .iter()
        .map(|body| Body {
            extra: body.extra.as_ref().map(|_| "coalesce".to_string()),
            ..body.clone()
        })
        .collect();
    let tasks: Vec<_> = sent
        .iter()
        .map(|body| {
            let manager = manager.clone();
            let request = follow_up(body, &key, &created.continuation_token);
            let id = id.clone();
            tokio::spawn(async move { manager.turns().follow_up("local", &id, request).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let winner = check_race(&sent, &answers);
    assert_eq!(
        keyed_texts(&manager, &id, &key).await,
        [winner.message],
        "one message carries the key"
    );
    manager.shutdown().await;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn racing_keyed_requests_get_one_answer_and_other_bodies_are_refused(
        key in "[!-~]{1,24}",
        bodies in proptest::collection::vec(body(), 1..4),
        picks in proptest::collection::vec(0usize..4, 2..7),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(race(key, bodies, picks));
    }
}
