//! Sessions sharing one object-store mount: each session's view remembers only what that
//! session read, so no session's write ever silently replaces a version it did not see.
//!
//! A generated test drives interleavings of sessions' reads and writes (plus sessions forgetting
//! what they saw, as after a restart, and another program writing and deleting) against a model,
//! over `object_store`'s in-memory store (many cases) and over real S3 (moto) and Azure
//! (Azurite) servers (fewer). Every write must succeed exactly when its session saw the current
//! version (or, for a file it never saw, when there is none), and fail otherwise with the
//! message telling the model to read the file again.

#[path = "support/stores.rs"]
mod stores;

use std::collections::HashMap;
use std::sync::Arc;

use folio_fs::{Content, FileSystem, PathError};
use folio_object_store::object_store_tree;
use object_store::memory::InMemory;
use proptest::prelude::*;
use stores::{Azurite, Bucket, Moto, fresh_prefix};

fn text(content: Content) -> String {
    match content {
        Content::Text(text) => text,
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn two_sessions_of_one_mount_never_overwrite_each_others_newer_version() {
    let bucket = Moto::shared().bucket();
    let prefix = fresh_prefix();
    let key = format!("{prefix}/plan.md");
    bucket.put(&key, b"v1\n");
    // One mount, as a server loads it once; each session is handed its own view.
    let mount = bucket.tree(&prefix);
    let (a, b) = (mount.session_view().unwrap(), mount.session_view().unwrap());
    assert_eq!(text(a.read("/plan.md").await.unwrap()), "v1\n");
    assert_eq!(text(b.read("/plan.md").await.unwrap()), "v1\n");
    a.write("/plan.md", "a's plan\n").await.unwrap();
    let refused = b.write("/plan.md", "b's plan\n").await.unwrap_err();
    assert!(matches!(refused, PathError::WriteFailed { .. }));
    assert_eq!(
        refused.to_string(),
        "write failed: /plan.md: the file changed remotely since it was last read; read it again before writing"
    );
    assert_eq!(bucket.get(&key).unwrap(), b"a's plan\n");
    // Reading again shows b a's version, and then b's write is on that version.
    assert_eq!(text(b.read("/plan.md").await.unwrap()), "a's plan\n");
    b.write("/plan.md", "both plans\n").await.unwrap();
    assert_eq!(bucket.get(&key).unwrap(), b"both plans\n");
    // The shared mount itself vouches for nothing either session read.
    assert_eq!(
        mount
            .write("/plan.md", "blind\n")
            .await
            .unwrap_err()
            .to_string(),
        "write failed: /plan.md: the file exists and was not read in this session; read it before writing it"
    );
}

/// One step of an interleaving.
#[derive(Debug, Clone)]
enum Step {
    /// Session `.0` reads file `.1`.
    Read(usize, usize),
    /// Session `.0` writes file `.1` (with text no other write uses).
    Write(usize, usize),
    /// Session `.0` loses its view (a restart, or its root dropped from the agent's cache).
    Forget(usize),
    /// Another program overwrites file `.0`, unconditionally.
    OtherWrite(usize),
    /// Another program deletes file `.0`.
    OtherDelete(usize),
}

const SESSIONS: usize = 3;
const FILES: [&str; 2] = ["/a.md", "/dir/b.md"];

fn step() -> impl Strategy<Value = Step> {
    let session = 0..SESSIONS;
    let file = 0..FILES.len();
    prop_oneof![
        4 => (session.clone(), file.clone()).prop_map(|(s, f)| Step::Read(s, f)),
        4 => (session.clone(), file.clone()).prop_map(|(s, f)| Step::Write(s, f)),
        1 => session.prop_map(Step::Forget),
        1 => file.clone().prop_map(Step::OtherWrite),
        1 => file.prop_map(Step::OtherDelete),
    ]
}

/// Where the objects live, seen from outside the trees under test.
trait Objects {
    fn put(&self, key: &str, text: &str);
    fn get(&self, key: &str) -> Option<String>;
    fn delete(&self, key: &str);
}

impl Objects for Bucket {
    fn put(&self, key: &str, text: &str) {
        Bucket::put(self, key, text.as_bytes());
    }
    fn get(&self, key: &str) -> Option<String> {
        Bucket::get(self, key).map(|bytes| String::from_utf8(bytes).unwrap())
    }
    fn delete(&self, key: &str) {
        Bucket::delete(self, key);
    }
}

/// Runs `steps` on the mount `mount` (over `prefix` of `objects`) against the model.
async fn check_interleaving(
    mount: Arc<dyn FileSystem>,
    objects: &dyn Objects,
    prefix: &str,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let key = |file: usize| format!("{prefix}{}", FILES[file]);
    let mut sessions: Vec<Arc<dyn FileSystem>> = (0..SESSIONS)
        .map(|_| mount.session_view().expect("a session view"))
        .collect();
    // The model: each file's text, and the text of the version each session last saw of it.
    let mut current: Vec<Option<String>> = vec![None; FILES.len()];
    let mut seen: HashMap<(usize, usize), String> = HashMap::new();
    for (n, step) in steps.iter().enumerate() {
        match *step {
            Step::Read(s, f) => match sessions[s].read(FILES[f]).await {
                Ok(content) => {
                    let got = text(content);
                    prop_assert_eq!(Some(&got), current[f].as_ref(), "step {}", n);
                    seen.insert((s, f), got);
                }
                Err(PathError::FileNotFound { .. }) => {
                    prop_assert_eq!(current[f].as_ref(), None, "step {}", n);
                    seen.remove(&(s, f));
                }
                Err(err) => return Err(TestCaseError::fail(format!("step {n}: {err}"))),
            },
            Step::Write(s, f) => {
                let mine = format!("session {s} step {n}\n");
                let outcome = sessions[s].write(FILES[f], &mine).await;
                let saw = seen.get(&(s, f));
                // The one rule: a write lands exactly when it replaces what its session saw
                // (nothing, for a file it never saw).
                let allowed = saw == current[f].as_ref();
                match outcome {
                    Ok(()) => {
                        prop_assert!(
                            allowed,
                            "step {}: session {} replaced {:?} having seen {:?}",
                            n,
                            s,
                            current[f],
                            saw
                        );
                        current[f] = Some(mine.clone());
                        seen.insert((s, f), mine);
                    }
                    Err(err) => {
                        prop_assert!(!allowed, "step {}: refused for no reason: {}", n, err);
                        let why = if saw.is_some() {
                            "the file changed remotely since it was last read; read it again before writing"
                        } else {
                            "the file exists and was not read in this session; read it before writing it"
                        };
                        prop_assert_eq!(
                            err.to_string(),
                            format!("write failed: {}: {why}", FILES[f])
                        );
                    }
                }
            }
            Step::Forget(s) => {
                sessions[s] = mount.session_view().expect("a session view");
                seen.retain(|(session, _), _| *session != s);
            }
            Step::OtherWrite(f) => {
                let theirs = format!("another program, step {n}\n");
                objects.put(&key(f), &theirs);
                current[f] = Some(theirs);
            }
            Step::OtherDelete(f) => {
                objects.delete(&key(f));
                current[f] = None;
            }
        }
        for (f, expected) in current.iter().enumerate() {
            prop_assert_eq!(&objects.get(&key(f)), expected, "after step {}", n);
        }
    }
    Ok(())
}

/// `object_store`'s in-memory store as [`Objects`].
struct Memory(Arc<InMemory>);

impl Objects for Memory {
    fn put(&self, key: &str, text: &str) {
        let (store, key, text) = (self.0.clone(), key.to_string(), text.to_string());
        stores::block_on(async move {
            object_store::ObjectStoreExt::put(&*store, &key.into(), text.into_bytes().into()).await
        })
        .unwrap();
    }
    fn get(&self, key: &str) -> Option<String> {
        let (store, key) = (self.0.clone(), key.to_string());
        stores::block_on(async move {
            match object_store::ObjectStoreExt::get(&*store, &key.into()).await {
                Ok(result) => {
                    Some(String::from_utf8(result.bytes().await.unwrap().to_vec()).unwrap())
                }
                Err(object_store::Error::NotFound { .. }) => None,
                Err(err) => panic!("{err}"),
            }
        })
    }
    fn delete(&self, key: &str) {
        let (store, key) = (self.0.clone(), key.to_string());
        stores::block_on(async move {
            object_store::ObjectStoreExt::delete(&*store, &key.into()).await
        })
        .unwrap();
    }
}

fn run(
    check: impl std::future::Future<Output = Result<(), TestCaseError>>,
) -> Result<(), TestCaseError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(check)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_write_is_silently_lost_in_memory(steps in proptest::collection::vec(step(), 1..40)) {
        let store = Arc::new(InMemory::new());
        let mount = object_store_tree(store.clone(), "p");
        run(check_interleaving(mount, &Memory(store), "p", &steps))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn no_write_is_silently_lost_on_s3(steps in proptest::collection::vec(step(), 1..30)) {
        let bucket = Moto::shared().bucket();
        let prefix = fresh_prefix();
        run(check_interleaving(bucket.tree(&prefix), &bucket, &prefix, &steps))?;
    }

    #[test]
    fn no_write_is_silently_lost_on_azure(steps in proptest::collection::vec(step(), 1..30)) {
        let bucket = Azurite::shared().bucket();
        let prefix = fresh_prefix();
        run(check_interleaving(bucket.tree(&prefix), &bucket, &prefix, &steps))?;
    }
}
