//! Artifacts: kinds with schemas, upsert by key, the retention cap, `tag_artifact` in a turn,
//! and `artifact.tagged` events.

mod part_b;

use folio_agent::{ArtifactStore, TagRequest};
use folio_agent::{TurnOutcome, discover};
use folio_project::ArtifactsConfig;
use folio_protocol::{ArtifactTagged, EventBody};
use folio_test_support::{MockModelServer, MockReply};
use part_b::*;
use pretty_assertions::assert_eq;
use serde_json::json;

const REGISTRY: &str = r#"
agent_tool = true
max = 2
[kinds.review]
description = "A submitted PR review"
schema = { type = "object", required = ["verdict"], properties.verdict = { type = "string", enum = ["approve", "reject"] } }
[kinds.note]
"#;

fn store(dir: &std::path::Path) -> ArtifactStore {
    let project = project(&[("agent/artifacts.toml", REGISTRY)]);
    let config = discover(project.path())
        .definition
        .unwrap()
        .artifacts
        .unwrap();
    assert_eq!(config.max, 2);
    ArtifactStore::open(dir.join("artifacts"), config).unwrap()
}

fn review(key: &str, title: &str, verdict: &str) -> TagRequest {
    TagRequest {
        kind: Some("review".into()),
        key: key.into(),
        title: title.into(),
        data: json!({"verdict": verdict}),
        ..TagRequest::default()
    }
}

#[tokio::test]
async fn tagging_upserts_by_key_and_the_cap_evicts_the_least_recently_updated() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let first = store.tag(review("pr-1", "PR 1", "approve")).await.unwrap();
    let again = store
        .tag(TagRequest {
            contents: Some("LGTM, ship it".into()),
            content_type: Some("text/markdown".into()),
            ..review("pr-1", "PR 1 (updated)", "reject")
        })
        .await
        .unwrap();
    assert_eq!(again.id, first.id, "same kind and key: same record");
    assert_eq!(again.created_at, first.created_at);
    assert!(again.updated_at >= first.updated_at);
    assert_eq!(store.list().await.unwrap(), std::slice::from_ref(&again));
    assert_eq!(
        store.get(&first.id).await.unwrap().unwrap().title,
        "PR 1 (updated)"
    );
    assert_eq!(
        store.content(&first.id).await.unwrap(),
        Some(("text/markdown".to_string(), b"LGTM, ship it".to_vec()))
    );
    // The same key under another kind is another record.
    let note = store
        .tag(TagRequest {
            kind: Some("note".into()),
            key: "pr-1".into(),
            title: "a note".into(),
            data: json!("free-form"),
            ..TagRequest::default()
        })
        .await
        .unwrap();
    assert_ne!(note.id, first.id);
    // A third record exceeds max = 2: the least recently updated (pr-1 review) goes, contents too.
    let third = store.tag(review("pr-2", "PR 2", "approve")).await.unwrap();
    let ids: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, [third.id.clone(), note.id.clone()]);
    assert_eq!(store.get(&first.id).await.unwrap(), None);
    assert_eq!(store.content(&first.id).await.unwrap(), None);
    assert!(
        !dir.path()
            .join(format!("artifacts/{}.content", first.id))
            .exists()
    );
    // Records persist: a new store over the same folder sees them.
    let reopened =
        ArtifactStore::open(dir.path().join("artifacts"), store.config().clone()).unwrap();
    assert_eq!(reopened.list().await.unwrap().len(), 2);
    assert_eq!(reopened.get("../../etc/passwd").await.unwrap(), None);
}

#[tokio::test]
async fn schema_violations_and_unknown_kinds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let err = store.tag(review("pr-1", "PR", "maybe")).await.unwrap_err();
    assert!(
        err.to_string().starts_with("data.verdict: ")
            && err.to_string().ends_with("(schema of kind \"review\")"),
        "{err}"
    );
    let err = store
        .tag(TagRequest {
            data: json!({}),
            ..review("pr-1", "PR", "x")
        })
        .await
        .unwrap_err();
    assert!(err.to_string().starts_with("data: "), "{err}");
    assert!(err.to_string().contains("verdict"), "{err}");
    let err = store
        .tag(TagRequest {
            kind: Some("bug".into()),
            ..review("k", "t", "approve")
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "kind: unknown kind \"bug\"; one of note, review"
    );
    assert!(store.list().await.unwrap().is_empty());

    // Without artifacts.toml any kind is accepted and an omitted kind is `artifact`.
    let open = ArtifactStore::open(dir.path().join("open"), ArtifactsConfig::default()).unwrap();
    let record = open
        .tag(TagRequest {
            key: "k".into(),
            title: "t".into(),
            data: json!(1),
            ..TagRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(record.kind, "artifact");
}

#[tokio::test]
async fn the_model_tags_artifacts_and_the_session_records_artifact_tagged() {
    let mock = MockModelServer::start().await;
    let dir = project(&[("agent/artifacts.toml", REGISTRY)]);
    let agent = load_agent(dir.path(), &mock.openai_base_url(), env_of(&[])).await;
    assert!(agent.harness.tools.get("tag_artifact").is_some());
    mock.push(MockReply::tool_calls([
        (
            "tag_artifact",
            json!({"kind": "review", "key": "pr-7", "title": "Review of PR 7", "data": {"verdict": "approve"}, "contents": "Looks good."}),
        ),
        (
            "tag_artifact",
            json!({"kind": "review", "key": "pr-8", "title": "Bad", "data": {"verdict": 3}}),
        ),
    ]));
    mock.push(MockReply::text("tagged"));
    let sink = MemorySink::default();
    let outcome = run_turn(&agent, &sink, &dir.path().join("workspace"), "review").await;
    assert_eq!(
        outcome,
        TurnOutcome::Completed {
            reply: "tagged".into()
        }
    );
    let events = sink.events();
    let records = agent.artifacts.list().await.unwrap();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record.session_id.as_deref(), Some("ses_test"));
    let tagged: Vec<&EventBody> = events
        .iter()
        .map(|e| &e.body)
        .filter(|b| matches!(b, EventBody::ArtifactTagged(_)))
        .collect();
    assert_eq!(
        tagged,
        [&EventBody::ArtifactTagged(ArtifactTagged {
            id: record.id.clone(),
            kind: "review".into(),
            key: "pr-7".into(),
            title: "Review of PR 7".into(),
        })]
    );
    let results = results(&events);
    assert_eq!(
        results[0],
        (
            "tag_artifact".into(),
            false,
            json!({"id": record.id, "kind": "review", "key": "pr-7"})
        )
    );
    let (tool, is_error, error) = &results[1];
    assert_eq!((tool.as_str(), *is_error), ("tag_artifact", true));
    assert!(
        error.as_str().unwrap().starts_with("data.verdict: "),
        "{error}"
    );
    // The store lives under the state root.
    assert!(
        dir.path()
            .join(format!("state/artifacts/{}.json", record.id))
            .is_file()
    );
    assert_eq!(
        agent.artifacts.content(&record.id).await.unwrap(),
        Some(("text/plain".into(), b"Looks good.".to_vec()))
    );
}

#[test]
fn a_registry_with_agent_tool_needs_kinds() {
    let dir = project(&[("agent/artifacts.toml", "agent_tool = true\n")]);
    let lines: Vec<String> = discover(dir.path())
        .diagnostics
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "error: agent/artifacts.toml: agent_tool: tag_artifact needs at least one kind; add a [kinds.<name>] table or set agent_tool = false"
        ]
    );
}
