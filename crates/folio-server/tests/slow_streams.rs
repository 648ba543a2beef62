//! Slow stream readers: a reader that stops reading while a turn appends far more events than
//! the session's broadcast (256) and a stream's buffer (256) hold holds up neither the turn nor
//! the other streams, and once it reads again it gets every event in order, without a gap or a
//! duplicate (what it missed is re-read from the log). In the engine and over real HTTP.
//! A hang is the failure these tests look for: each wait has a generous limit that fails the
//! test, not a measured time.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use folio_protocol::{CreateSession, Event, EventBody};
use folio_session::StreamReceiver;
use folio_test_support::{MockModelServer, MockReply, assert_contiguous, read_ndjson};
use futures::StreamExt;
use pretty_assertions::assert_eq;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Events the follow-up's turn appends at least: far more than the broadcast and a stream's
/// buffer hold together, so that a reader that does not read must fall behind both.
const MANY: usize = 3_000;

/// Fails the test when `wait` does not finish in a minute: a stalled turn or stream hangs.
async fn within<T>(what: &str, wait: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen: something is stalled"))
}

/// A reply of `words` words of `width` characters each: one streamed delta, so one
/// `message.appended` event, per word.
fn long_reply(words: usize, width: usize) -> MockReply {
    let word = "w".repeat(width);
    MockReply::text(vec![word; words].join(" "))
}

/// Reads `rx` until it has seen `count` `session.waiting` events; returns the events read.
async fn read_waiting(rx: &mut StreamReceiver, count: usize) -> Vec<Event> {
    let mut events = Vec::new();
    let mut waiting = 0;
    while waiting < count {
        let Some(item) = rx.recv().await else {
            panic!("the stream ended after {} events", events.len());
        };
        let Some(event) = item else { continue };
        if matches!(event.body, EventBody::SessionWaiting(_)) {
            waiting += 1;
        }
        events.push(event);
    }
    events
}

/// NDJSON read so far, and how many of its complete lines are `session.waiting` events
/// (counted as lines complete, so that megabytes of events are scanned once).
#[derive(Default)]
struct Received {
    text: Vec<u8>,
    scanned: usize,
    waiting: usize,
}

impl Received {
    /// Takes `bytes` read from a stream.
    fn push(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
        while let Some(end) = self.text[self.scanned..].iter().position(|b| *b == b'\n') {
            let line = &self.text[self.scanned..self.scanned + end];
            // An event's line starts with its type.
            if line.starts_with(br#"{"type":"session.waiting""#) {
                self.waiting += 1;
            }
            self.scanned += end + 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_nobody_reads_holds_up_neither_the_turn_nor_other_streams() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hi"));
    mock.push(long_reply(MANY, 1));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let id = manager
        .sessions()
        .create("local", "http", CreateSession::message("hello"))
        .await
        .unwrap()
        .session_id;
    let mut fast = manager.events().stream("local", &id, 0).await.unwrap();
    let mut seen = within("the first turn's end", read_waiting(&mut fast.rx, 1)).await;
    // Subscribed before the follow-up, and never read until the turn has ended.
    let mut slow = manager.events().stream("local", &id, 0).await.unwrap();
    // One that resumes where the first turn ended (`startIndex`), also never read meanwhile.
    let resume = seen.len();
    let mut late = manager
        .events()
        .stream("local", &id, resume as u64)
        .await
        .unwrap();
    manager
        .turns()
        .send("local", &id, "more", None)
        .await
        .unwrap();
    seen.extend(
        within(
            "the follow-up's end on a fast stream",
            read_waiting(&mut fast.rx, 1),
        )
        .await,
    );
    assert_contiguous(&seen, 0);
    assert!(seen.len() > MANY, "the turn appended {} events", seen.len());
    assert_eq!(seen, manager.events().read("local", &id).await.unwrap());

    let slow_seen = within("the slow stream's catch-up", read_waiting(&mut slow.rx, 2)).await;
    assert_eq!(slow_seen, seen);
    let late_seen = within(
        "the second slow stream's catch-up",
        read_waiting(&mut late.rx, 1),
    )
    .await;
    assert_eq!(late_seen, seen[resume..]);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_client_that_stops_reading_holds_up_neither_the_turn_nor_other_clients() {
    let mock = MockModelServer::start().await;
    mock.push(MockReply::text("hi"));
    // About 1 KB per event, so several MB in all: more than the kernel's socket buffers
    // (`tcp_wmem` allows 4 MB) and the server's write buffer hold, so the server's side of
    // the stream that is not read must wait.
    mock.push(long_reply(MANY, 1_000));
    let dir = project("");
    let state = tempfile::tempdir().unwrap();
    let manager = manager(agent(&mock, dir.path()).await, state.path()).await;
    let url = http(manager.clone()).await;
    let id = manager
        .sessions()
        .create("local", "http", CreateSession::message("hello"))
        .await
        .unwrap()
        .session_id;

    // The slow client: a small receive buffer, and HTTP/1.0 so that the body is the NDJSON
    // itself (no chunked encoding); it reads only until the first turn's end.
    let addr: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut slow = socket.connect(addr).await.unwrap();
    slow.write_all(
        format!("GET /v1/session/{id}/stream HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut received = Received::default();
    let mut buffer = vec![0; 64 * 1024];
    within("the first turn's end on the slow client", async {
        while received.waiting < 1 {
            let n = slow.read(&mut buffer).await.unwrap();
            assert!(
                n > 0,
                "the server closed the slow stream: {}",
                String::from_utf8_lossy(&received.text)
            );
            received.push(&buffer[..n]);
        }
    })
    .await;

    let response = reqwest::get(format!("{url}/v1/session/{id}/stream"))
        .await
        .unwrap();
    let mut fast = response.bytes_stream();
    let mut fast_text = Received::default();
    manager
        .turns()
        .send("local", &id, "more", None)
        .await
        .unwrap();
    within("the follow-up's end on the fast client", async {
        while fast_text.waiting < 2 {
            let chunk = fast.next().await.expect("the fast stream ended").unwrap();
            fast_text.push(&chunk);
        }
    })
    .await;
    let seen = read_ndjson(std::str::from_utf8(&fast_text.text).unwrap());
    assert_contiguous(&seen, 0);
    assert!(seen.len() > MANY, "the turn appended {} events", seen.len());

    within("the slow client's catch-up", async {
        while received.waiting < 2 {
            let n = slow.read(&mut buffer).await.unwrap();
            assert!(n > 0, "the server closed the slow stream");
            received.push(&buffer[..n]);
        }
    })
    .await;
    let text = std::str::from_utf8(&received.text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    let end = body.rfind('\n').map_or(0, |i| i + 1);
    assert_eq!(read_ndjson(&body[..end]), seen);
    manager.shutdown().await;
}
