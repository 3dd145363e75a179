//! Bounded memos: keyed by SHA-256, for results that are pure functions of their input
//! (a token's verified claims, a create's managedFields) and dear to recompute; keyed by
//! an object's key and revision, for objects parsed from the watch cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

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

/// Parsed objects by key, each good for one revision of its object: what admission
/// plugins read on every request (the request's namespace, its service account, the
/// priority classes) is parsed once per change rather than once per read. Past `MAX` keys
/// the memo starts over; a copy starts empty.
#[derive(Debug)]
pub struct ParsedMemo<const MAX: usize>(Mutex<HashMap<Box<str>, Parsed>>);

/// An object's revision and its parsed form.
type Parsed = (i64, Arc<Value>);

impl<const MAX: usize> Default for ParsedMemo<MAX> {
    fn default() -> Self {
        ParsedMemo(Mutex::new(HashMap::new()))
    }
}

impl<const MAX: usize> ParsedMemo<MAX> {
    /// The object `key` at revision `rv`: the memo's copy, or `parse`'s result (kept).
    pub fn get_or_parse(
        &self,
        key: &str,
        rv: i64,
        parse: impl FnOnce() -> Option<Value>,
    ) -> Option<Arc<Value>> {
        if let Ok(memo) = self.0.lock()
            && let Some((at, v)) = memo.get(key)
            && *at == rv
        {
            return Some(Arc::clone(v));
        }
        // Parsed outside the lock: readers of other objects need not wait.
        let parsed = Arc::new(parse()?);
        if let Ok(mut memo) = self.0.lock() {
            if memo.len() >= MAX && !memo.contains_key(key) {
                memo.clear();
            }
            memo.insert(key.into(), (rv, Arc::clone(&parsed)));
        }
        Some(parsed)
    }

    /// How many objects are held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.lock().map(|m| m.len()).unwrap_or_default()
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
    fn parsed_objects_are_shared_per_revision_and_bounded() {
        let memo: ParsedMemo<2> = ParsedMemo::default();
        let parses = std::cell::Cell::new(0);
        let parse = |v: u32| {
            parses.set(parses.get() + 1);
            Some(serde_json::json!(v))
        };
        let first = memo.get_or_parse("/a", 5, || parse(1)).unwrap();
        let again = memo.get_or_parse("/a", 5, || parse(99)).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(parses.get(), 1);
        // A new revision is parsed again and replaces the old one.
        let newer = memo.get_or_parse("/a", 6, || parse(2)).unwrap();
        assert_eq!(
            (&*newer, parses.get(), memo.len()),
            (&serde_json::json!(2), 2, 1)
        );
        // What fails to parse is not kept.
        assert!(memo.get_or_parse("/b", 1, || None).is_none());
        memo.get_or_parse("/b", 1, || parse(3));
        assert_eq!(memo.len(), 2);
        // Full: a third key starts the memo over.
        memo.get_or_parse("/c", 1, || parse(4));
        assert_eq!(memo.len(), 1);
        memo.get_or_parse("/a", 6, || parse(2));
        assert_eq!(parses.get(), 5);
    }

    #[test]
    fn streamed_digest_is_the_digest_of_the_bytes() {
        let mut h = Sha256::default();
        serde_json::to_writer(&mut h, &serde_json::json!({"a": [1, "x"]})).unwrap();
        assert_eq!(h.finish(), Sha256::of(br#"{"a":[1,"x"]}"#));
        assert_ne!(Sha256::of(b"a"), Sha256::of(b"b"));
    }
}
