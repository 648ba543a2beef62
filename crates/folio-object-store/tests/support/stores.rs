//! Real object-store servers for tests, each started once per test process on a free loopback
//! port and killed with it (installed by `scripts/install-test-deps` under `target/test-deps`):
//! - [`Moto`]: PyPI's `moto` in server mode, an S3 server;
//! - [`Azurite`]: npm's `azurite`, Microsoft's Azure Blob emulator;
//!
//! plus [`Bucket`], a plain `object_store` client of one of them, to seed and inspect objects as
//! another program would.

#![allow(dead_code)]

use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use folio_fs::FileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

/// The bucket (S3, GCS) or container (Azure) every test uses, each test under its own prefix.
pub const BUCKET: &str = "folio-tests";

/// `target/test-deps` of the workspace.
fn test_deps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps")
}

/// Starts `bin` with `args` (`{port}` replaced by a free loopback port) and waits until it
/// listens there. The server is the child of a thread that lives as long as the test process,
/// and is killed when the process exits (PR_SET_PDEATHSIG), so no test run leaves it behind.
fn start_server(bin: PathBuf, args: &[&str]) -> SocketAddr {
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
    let args: Vec<String> = args
        .iter()
        .map(|arg| arg.replace("{port}", &port.to_string()))
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let shown = bin.display().to_string();
    std::thread::spawn(move || {
        let mut command = Command::new(&bin);
        command
            .args(&args)
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
        .expect("server thread")
        .unwrap_or_else(|err| panic!("cannot start {shown}: {err}"));
    let started = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{shown} did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    addr
}

/// One HTTP/1.1 request to `addr` (`headers`: extra `Name: value\r\n` lines); the status and
/// body of the answer.
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect to the server");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n{headers}Connection: close\r\n\r\n",
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

fn pairs(options: &[(&str, String)]) -> Vec<(String, String)> {
    options
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// The moto server of this test process.
pub struct Moto {
    addr: SocketAddr,
}

impl Moto {
    /// The shared server, started on first use. It dies with the test process.
    pub fn shared() -> &'static Moto {
        static MOTO: OnceLock<Moto> = OnceLock::new();
        MOTO.get_or_init(|| {
            let bin = test_deps().join("tools/bin/moto_server");
            let moto = Moto {
                addr: start_server(bin, &["-H", "127.0.0.1", "-p", "{port}"]),
            };
            // Public read/write, so the plain (unsigned) client below can seed and inspect it
            // as any other program would; the trees under test sign their requests.
            let (status, _) = request(
                moto.addr,
                "PUT",
                &format!("/{BUCKET}"),
                "x-amz-acl: public-read-write\r\n",
                b"",
            );
            assert_eq!(status, 200, "create bucket {BUCKET}");
            moto
        })
    }

    /// `http://127.0.0.1:P`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The store options that reach this server (any credentials do).
    pub fn options(&self) -> Vec<(String, String)> {
        pairs(&[
            ("endpoint", self.endpoint()),
            ("allow_http", "true".into()),
            ("region", "us-east-1".into()),
            ("access_key_id", "testing".into()),
            ("secret_access_key", "testing".into()),
        ])
    }

    /// The bucket of this server.
    pub fn bucket(&self) -> Bucket {
        Bucket::new(&format!("s3://{BUCKET}"), self.options())
    }

    /// Stores `bytes` at `key` of [`BUCKET`] with a plain, unconditional HTTP PUT.
    pub fn put(&self, key: &str, bytes: &[u8]) {
        let (status, _) = request(
            self.addr,
            "PUT",
            &format!("/{BUCKET}/{key}"),
            "Content-Type: application/octet-stream\r\n",
            bytes,
        );
        assert_eq!(status, 200, "PUT {key}");
    }

    /// The bytes at `key` of [`BUCKET`], or `None` when there is no such object.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let (status, body) = request(self.addr, "GET", &format!("/{BUCKET}/{key}"), "", b"");
        (status == 200).then_some(body)
    }
}

/// The Azurite blob server of this test process, with container [`BUCKET`].
pub struct Azurite {
    addr: SocketAddr,
}

/// Azurite's well-known development account and its key.
const AZURITE_ACCOUNT: &str = "devstoreaccount1";
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

impl Azurite {
    /// The shared server, started on first use. It dies with the test process.
    pub fn shared() -> &'static Azurite {
        static AZURITE: OnceLock<Azurite> = OnceLock::new();
        AZURITE.get_or_init(|| {
            let bin = test_deps().join("objstore/node_modules/.bin/azurite-blob");
            // A fresh in-memory server has no container: `409` means another test process's
            // Azurite took the same free port first (ours then fails to bind), so start again
            // on another port rather than share that server.
            for _ in 0..5 {
                let addr = start_server(
                    bin.clone(),
                    &[
                        "--blobHost",
                        "127.0.0.1",
                        "--blobPort",
                        "{port}",
                        "--inMemoryPersistence",
                        "--silent",
                        "--skipApiVersionCheck",
                    ],
                );
                let azurite = Azurite { addr };
                if azurite.create_container() != 409 {
                    return azurite;
                }
            }
            panic!("Azurite: five free ports in a row were taken by other test processes' servers")
        })
    }

    /// Creates [`BUCKET`] with a request signed by the account key (Shared Key), as Azure's
    /// own clients do (`object_store` has no call for it); `201`, or `409` when it exists.
    fn create_container(&self) -> u16 {
        let date = httpdate::fmt_http_date(std::time::SystemTime::now());
        let version = "2021-08-06";
        let to_sign = format!(
            "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{version}\n/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{BUCKET}\nrestype:container"
        );
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let key = ring::hmac::Key::new(
            ring::hmac::HMAC_SHA256,
            &engine
                .decode(AZURITE_KEY)
                .expect("the account key is base64"),
        );
        let signature = engine.encode(ring::hmac::sign(&key, to_sign.as_bytes()).as_ref());
        let (status, body) = request(
            self.addr,
            "PUT",
            &format!("/{AZURITE_ACCOUNT}/{BUCKET}?restype=container"),
            &format!(
                "x-ms-date: {date}\r\nx-ms-version: {version}\r\nAuthorization: SharedKey {AZURITE_ACCOUNT}:{signature}\r\n"
            ),
            b"",
        );
        assert!(
            status == 201 || status == 409,
            "create container {BUCKET}: {status} {}",
            String::from_utf8_lossy(&body)
        );
        status
    }

    /// The store options that reach this server.
    pub fn options(&self) -> Vec<(String, String)> {
        pairs(&[
            ("account_name", AZURITE_ACCOUNT.into()),
            ("access_key", AZURITE_KEY.into()),
            (
                "endpoint",
                format!("http://{}/{AZURITE_ACCOUNT}", self.addr),
            ),
            ("allow_http", "true".into()),
        ])
    }

    /// The container of this server.
    pub fn bucket(&self) -> Bucket {
        Bucket::new(&format!("az://{BUCKET}"), self.options())
    }
}

/// Runs `future` to its end on this process's helper runtime (the contract suite's factories
/// are sync, and one runtime keeps the clients' pooled connections alive between calls).
pub fn block_on<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> T {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime")
    });
    futures::executor::block_on(runtime.spawn(future)).expect("helper task")
}

/// A bucket of one of the servers: Folio trees over its prefixes, and a plain `object_store`
/// client of it (unconditional puts, as another program would write).
#[derive(Clone)]
pub struct Bucket {
    url: String,
    options: Vec<(String, String)>,
    raw: Arc<dyn ObjectStore>,
}

impl Bucket {
    /// The bucket at `url` (`s3://b`, `az://c`, `gs://b`) reached with `options`.
    pub fn new(url: &str, options: Vec<(String, String)>) -> Bucket {
        let parsed = url::Url::parse(url).expect("a bucket URL");
        let (raw, _) =
            object_store::parse_url_opts(&parsed, options.clone()).expect("a client of the bucket");
        Bucket {
            url: url.to_string(),
            options,
            raw: Arc::from(raw),
        }
    }

    /// The mount URL of `prefix` in this bucket.
    pub fn url(&self, prefix: &str) -> String {
        format!("{}/{prefix}", self.url)
    }

    /// The options a mount of this bucket needs.
    pub fn options(&self) -> Vec<(String, String)> {
        self.options.clone()
    }

    /// A Folio tree over `prefix` of this bucket (the tree every session of a mount shares).
    pub fn tree(&self, prefix: &str) -> Arc<dyn FileSystem> {
        folio_object_store::object_store_fs(&self.url(prefix), self.options())
            .expect("open the bucket")
    }

    /// Stores `bytes` at `key`, unconditionally.
    pub fn put(&self, key: &str, bytes: &[u8]) {
        let (raw, location, payload) = (
            self.raw.clone(),
            ObjectPath::from(key),
            PutPayload::from(bytes.to_vec()),
        );
        block_on(async move { raw.put(&location, payload).await }).expect("put an object");
    }

    /// The bytes at `key`, or `None` when there is no such object.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let (raw, location) = (self.raw.clone(), ObjectPath::from(key));
        block_on(async move {
            match raw.get(&location).await {
                Ok(result) => Some(result.bytes().await.expect("read an object").to_vec()),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(err) => panic!("get {location}: {err}"),
            }
        })
    }

    /// Removes `key`, unconditionally (a missing object is fine).
    pub fn delete(&self, key: &str) {
        let (raw, location) = (self.raw.clone(), ObjectPath::from(key));
        match block_on(async move { raw.delete(&location).await }) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(err) => panic!("delete {key}: {err}"),
        }
    }
}

/// A prefix no other test uses.
pub fn fresh_prefix() -> String {
    format!("t-{}", uuid::Uuid::new_v4().simple())
}
