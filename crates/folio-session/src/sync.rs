//! Small synchronization helpers every part of the engine uses: a poison-tolerant lock and
//! per-key async locks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// Locks a std mutex, recovering from poisoning (state stays consistent per operation).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// One async lock per key: a second holder of a key waits for the first (a keyed create's
/// retry gets the first one's answer instead of making a second session; one lease
/// acquisition per session at a time).
#[derive(Default)]
pub(crate) struct KeyLocks(Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>);

impl KeyLocks {
    /// Waits until no other holder has `key`; the key is free again when the guard drops.
    pub(crate) async fn lock(&self, key: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let mutex = {
            let mut held = lock(&self.0);
            held.retain(|_, mutex| mutex.strong_count() > 0);
            match held.get(key).and_then(Weak::upgrade) {
                Some(mutex) => mutex,
                None => {
                    let mutex = Arc::new(tokio::sync::Mutex::new(()));
                    held.insert(key.to_string(), Arc::downgrade(&mutex));
                    mutex
                }
            }
        };
        mutex.lock_owned().await
    }
}
