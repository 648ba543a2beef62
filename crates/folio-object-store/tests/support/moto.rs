//! A real S3 server for tests: PyPI's `moto` in server mode (installed by
//! `scripts/install-test-deps` under `target/test-deps/tools`), started once per test process on
//! a free loopback port, plus a plain HTTP client to seed and inspect buckets as another program
//! would.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The moto server of this test process.
pub struct Moto {
    addr: SocketAddr,
}

impl Moto {
    /// The shared server, started on first use. It dies with the test process.
    pub fn shared() -> &'static Moto {
        static MOTO: OnceLock<Moto> = OnceLock::new();
        MOTO.get_or_init(Moto::start)
    }

    fn start() -> Moto {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let bin = root.join("target/test-deps/tools/bin/moto_server");
        assert!(
            bin.is_file(),
            "{} is missing: run scripts/install-test-deps first",
            bin.display()
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        // The server is the child of a thread that lives as long as the process, and is killed
        // when that thread's process exits (PR_SET_PDEATHSIG), so no test run leaves it behind.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut command = Command::new(&bin);
            command
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // SAFETY: prctl is async-signal-safe; it only sets this child's parent-death signal.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let spawned = command.spawn();
            let ok = spawned.is_ok();
            let _ = tx.send(spawned.map(drop).map_err(|e| e.to_string()));
            if ok {
                loop {
                    std::thread::park();
                }
            }
        });
        rx.recv()
            .expect("moto thread")
            .unwrap_or_else(|err| panic!("cannot start moto_server: {err}"));
        let started = Instant::now();
        while TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "moto_server did not listen on {addr}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let moto = Moto { addr };
        // Public read/write, so the plain (unsigned) client below can seed and inspect it as
        // any other program would; the trees under test sign their requests.
        let (status, _) = moto.request(
            "PUT",
            &format!("/{BUCKET}"),
            "x-amz-acl: public-read-write\r\n",
            b"",
        );
        assert_eq!(status, 200, "create bucket {BUCKET}");
        moto
    }

    /// `http://127.0.0.1:P`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The store options that reach this server (any credentials do).
    pub fn options(&self) -> Vec<(String, String)> {
        [
            ("endpoint", self.endpoint()),
            ("allow_http", "true".into()),
            ("region", "us-east-1".into()),
            ("access_key_id", "testing".into()),
            ("secret_access_key", "testing".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Stores `bytes` at `key` of [`BUCKET`] with a plain, unconditional HTTP PUT.
    pub fn put(&self, key: &str, bytes: &[u8]) {
        let (status, _) = self.request(
            "PUT",
            &format!("/{BUCKET}/{key}"),
            "Content-Type: application/octet-stream\r\n",
            bytes,
        );
        assert_eq!(status, 200, "PUT {key}");
    }

    /// The bytes at `key` of [`BUCKET`], or `None` when there is no such object.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let (status, body) = self.request("GET", &format!("/{BUCKET}/{key}"), "", b"");
        (status == 200).then_some(body)
    }

    /// One HTTP/1.1 request (`headers`: extra `Name: value\r\n` lines); the status and body
    /// of the answer.
    fn request(&self, method: &str, path: &str, headers: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let mut stream = TcpStream::connect(self.addr).expect("connect to moto");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n{headers}Connection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("send");
        stream.write_all(body).expect("send body");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).expect("read answer");
        let split = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("an HTTP answer");
        let head = String::from_utf8_lossy(&answer[..split]).to_string();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status");
        let mut body = answer[split + 4..].to_vec();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body = dechunk(&body);
        }
        (status, body)
    }
}

/// The bucket every test uses (each under its own prefix).
pub const BUCKET: &str = "folio-tests";

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&body[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[end + 2 + size + 2..];
    }
    out
}

/// A prefix no other test uses.
pub fn fresh_prefix() -> String {
    format!("t-{}", uuid::Uuid::new_v4().simple())
}
