//! Bounded memos keyed by SHA-256, for results that are pure functions of their input
//! (a token's verified claims, a create's managedFields) and dear to recompute.

use std::collections::HashMap;
use std::sync::Mutex;

/// Results by the SHA-256 of what they are a function of; past `MAX` entries the memo
/// starts over. A copy starts empty (a memo only ever spares work).
#[derive(Debug)]
pub struct DigestMemo<V, const MAX: usize>(Mutex<HashMap<[u8; 32], V>>);

impl<V, const MAX: usize> Default for DigestMemo<V, MAX> {
    fn default() -> Self {
        DigestMemo(Mutex::new(HashMap::new()))
    }
}

impl<V, const MAX: usize> Clone for DigestMemo<V, MAX> {
    fn clone(&self) -> Self {
        DigestMemo::default()
    }
}

impl<V: Clone, const MAX: usize> DigestMemo<V, MAX> {
    pub fn get(&self, key: &[u8; 32]) -> Option<V> {
        self.0.lock().ok()?.get(key).cloned()
    }

    pub fn put(&self, key: [u8; 32], value: V) {
        if let Ok(mut memo) = self.0.lock() {
            if memo.len() >= MAX {
                memo.clear();
            }
            memo.insert(key, value);
        }
    }

    /// How many results are held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.lock().map(|m| m.len()).unwrap_or_default()
    }

    /// Whether none is held.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A SHA-256 written to as a stream (`serde_json::to_writer` hashes a value without
/// serializing it to memory first).
pub struct Sha256(ring::digest::Context);

impl Default for Sha256 {
    fn default() -> Self {
        Sha256(ring::digest::Context::new(&ring::digest::SHA256))
    }
}

impl Sha256 {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> [u8; 32] {
        let mut h = Sha256::default();
        h.update(bytes);
        h.finish()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> [u8; 32] {
        let mut key = [0u8; 32];
        key.copy_from_slice(self.0.finish().as_ref());
        key
    }
}

impl std::io::Write for Sha256 {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_at_most_max_and_copies_start_empty() {
        let memo: DigestMemo<u32, 2> = DigestMemo::default();
        let (a, b, c) = (Sha256::of(b"a"), Sha256::of(b"b"), Sha256::of(b"c"));
        memo.put(a, 1);
        memo.put(b, 2);
        assert_eq!(
            (memo.get(&a), memo.get(&b), memo.len()),
            (Some(1), Some(2), 2)
        );
        memo.put(c, 3);
        assert_eq!((memo.get(&a), memo.get(&c), memo.len()), (None, Some(3), 1));
        assert!(memo.clone().is_empty());
    }

    #[test]
    fn streamed_digest_is_the_digest_of_the_bytes() {
        let mut h = Sha256::default();
        serde_json::to_writer(&mut h, &serde_json::json!({"a": [1, "x"]})).unwrap();
        assert_eq!(h.finish(), Sha256::of(br#"{"a":[1,"x"]}"#));
        assert_ne!(Sha256::of(b"a"), Sha256::of(b"b"));
    }
}
