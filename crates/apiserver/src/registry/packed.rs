//! Compressed object bytes for the watch cache.
//!
//! Objects of one resource are alike (a ReplicaSet's pods differ in a name, a uid, an IP
//! and a few timestamps), so each cache compresses its objects with zstd against a
//! dictionary made of recent objects of that resource (a raw-content dictionary: zstd
//! finds whole runs of the new object in it). A 4.5 KB pod becomes about 0.45 KB, where
//! zstd alone reaches 1.5 KB. Compressing and decompressing each cost a few µs
//! per pod; small caches (fewer than [`MIN_OBJECTS`] objects) are left plain, since a
//! dictionary costs a few hundred KB.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use zstd::zstd_safe::{CCtx, CDict, DCtx, DDict};

/// A cache compresses once it holds this many objects.
pub const MIN_OBJECTS: usize = 256;
/// How many recent objects make a dictionary, and their total size at most.
const SAMPLES: usize = 16;
const MAX_DICT_BYTES: usize = 64 << 10;
/// Objects smaller than this are not sampled (they teach the dictionary little).
const MIN_SAMPLE_BYTES: usize = 256;
/// A new dictionary from the then-recent objects after this many compressions, so the
/// dictionary follows what the resource's objects look like now (pods go from created to
/// bound to running within seconds: with a dictionary of created pods, running pods
/// compressed to half again as many bytes, 35 instead of 23 MB at 50,000 pods). Each
/// rebuild costs about a millisecond, and a dictionary lives as long as objects use it.
const REBUILD_EVERY: usize = 10_000;
/// zstd's fastest regular level (its `fast` strategy, where level 3 uses `dfast`): against
/// a dictionary of recent objects it packs pods as small as level 3 did (measured at
/// 50,000 pods: 30.5 against 33.3 MB) for less work per object.
const LEVEL: i32 = 1;

/// A dictionary for decompressing. Objects keep the one they were compressed with; only
/// the cache's current dictionary also has a compressor's side (see [`Current`]), which is
/// several times larger and would otherwise live as long as the oldest object using it.
pub struct Dict {
    dec: DDict<'static>,
    size: usize,
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dict").field("size", &self.size).finish()
    }
}

/// The dictionary new objects are compressed with, both ways.
struct Current {
    dict: Arc<Dict>,
    enc: CDict<'static>,
}

impl std::fmt::Debug for Current {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.dict.fmt(f)
    }
}

impl Current {
    fn new(content: &[u8]) -> Option<Current> {
        Some(Current {
            dict: Arc::new(Dict {
                dec: DDict::try_create(content)?,
                size: content.len(),
            }),
            enc: CDict::try_create(content, LEVEL)?,
        })
    }
}

/// An object's JSON, plain or compressed.
#[derive(Debug)]
pub enum Body {
    Plain(Bytes),
    Packed {
        data: Box<[u8]>,
        /// The JSON's length.
        len: u32,
        dict: Arc<Dict>,
    },
}

thread_local! {
    static CCTX: RefCell<Option<CCtx<'static>>> = const { RefCell::new(None) };
    static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

impl Body {
    /// The JSON's length.
    pub fn len(&self) -> usize {
        match self {
            Body::Plain(b) => b.len(),
            Body::Packed { len, .. } => *len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes held.
    pub fn stored(&self) -> usize {
        match self {
            Body::Plain(b) => b.len(),
            Body::Packed { data, .. } => data.len(),
        }
    }

    /// The JSON (a cheap clone when plain; decompressed otherwise).
    pub fn json(&self) -> Bytes {
        match self {
            Body::Plain(b) => b.clone(),
            Body::Packed { data, len, dict } => match decompress(data, *len as usize, dict) {
                Some(v) => Bytes::from(v),
                None => {
                    tracing::error!("a cached object does not decompress");
                    Bytes::new()
                }
            },
        }
    }
}

fn decompress(data: &[u8], len: usize, dict: &Dict) -> Option<Vec<u8>> {
    DCTX.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = DCtx::try_create();
        }
        let dctx = slot.as_mut()?;
        let mut out = Vec::with_capacity(len);
        let n = dctx
            .decompress_using_ddict(&mut out, data, &dict.dec)
            .ok()?;
        (n == len).then_some(out)
    })
}

fn compress(plain: &[u8], dict: &CDict<'static>) -> Option<Vec<u8>> {
    CCTX.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = CCtx::try_create();
        }
        let cctx = slot.as_mut()?;
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(plain.len()));
        cctx.compress_using_cdict(&mut out, plain, dict).ok()?;
        Some(out)
    })
}

/// One cache's compression: the recent objects a dictionary is made of, and the current
/// dictionary.
#[derive(Debug, Default)]
pub struct Packer {
    samples: VecDeque<Bytes>,
    current: Option<Current>,
    since: usize,
}

impl Packer {
    /// `plain` as the cache should hold it, given how many objects the cache holds.
    pub fn pack(&mut self, plain: Bytes, held: usize) -> Body {
        if plain.len() >= MIN_SAMPLE_BYTES {
            if self.samples.len() == SAMPLES {
                self.samples.pop_front();
            }
            self.samples.push_back(plain.clone());
        }
        if held < MIN_OBJECTS {
            return Body::Plain(plain);
        }
        if self.current.is_none() || self.since >= REBUILD_EVERY {
            self.rebuild();
        }
        let Some(current) = &self.current else {
            return Body::Plain(plain);
        };
        self.since += 1;
        match (compress(&plain, &current.enc), u32::try_from(plain.len())) {
            (Some(data), Ok(len)) if data.len() < plain.len() => Body::Packed {
                data: data.into_boxed_slice(),
                len,
                dict: Arc::clone(&current.dict),
            },
            _ => Body::Plain(plain),
        }
    }

    /// The current dictionary's size (0: none).
    pub fn dict_bytes(&self) -> usize {
        self.current.as_ref().map_or(0, |c| c.dict.size)
    }

    fn rebuild(&mut self) {
        // The most recent objects last: zstd prefers matches near the dictionary's end.
        let mut content = Vec::new();
        for s in self.samples.iter().rev() {
            if content.len() + s.len() > MAX_DICT_BYTES {
                break;
            }
            content.splice(0..0, s.iter().copied());
        }
        self.since = 0;
        if content.is_empty() {
            return;
        }
        self.current = Current::new(&content);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn pod(i: usize) -> Bytes {
        Bytes::from(
            serde_json::to_vec(&serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("web-7957885594-{i:05}"), "namespace": "default",
                    "uid": format!("6b1c0d1e-0000-4000-8000-{i:012}"),
                    "labels": {"app": "web", "pod-template-hash": "7957885594"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "name": "web-7957885594", "uid": "0f0e0d0c-0000-4000-8000-000000000001",
                        "controller": true, "blockOwnerDeletion": true}]},
                "spec": {"containers": [{"name": "nginx", "image": "nginx",
                    "resources": {}, "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
                    "nodeName": format!("sim-node-{}", i % 1000),
                    "schedulerName": "default-scheduler"},
                "status": {"phase": "Running", "podIP": format!("10.42.{}.{}", i / 250, i % 250)},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn small_caches_stay_plain_then_objects_compress_and_come_back_identical() {
        let mut p = Packer::default();
        for i in 0..10 {
            assert!(matches!(p.pack(pod(i), i), Body::Plain(_)));
        }
        assert_eq!(p.dict_bytes(), 0);
        let original = pod(12345);
        let body = p.pack(original.clone(), MIN_OBJECTS);
        let Body::Packed { data, len, .. } = &body else {
            panic!("not compressed: {body:?}");
        };
        assert_eq!(*len as usize, original.len());
        assert!(
            data.len() * 4 < original.len(),
            "{} → {}",
            original.len(),
            data.len()
        );
        assert!(p.dict_bytes() > 0);
        assert_eq!(body.json(), original);
        assert_eq!((body.len(), body.stored()), (original.len(), data.len()));
    }

    #[test]
    fn objects_keep_their_dictionary_across_rebuilds() {
        let mut p = Packer::default();
        let first = p.pack(pod(1), MIN_OBJECTS);
        for i in 2..(REBUILD_EVERY + 10) {
            p.pack(pod(i), MIN_OBJECTS);
            if i % 1000 == 0 {
                // Objects from long before still decode (they hold their dictionary).
                assert_eq!(first.json(), pod(1));
            }
        }
        assert_eq!(first.json(), pod(1));
        let last = p.pack(pod(7), MIN_OBJECTS);
        assert_eq!(last.json(), pod(7));
    }

    #[test]
    fn incompressible_or_tiny_objects_stay_plain() {
        let mut p = Packer::default();
        for i in 0..20 {
            p.pack(pod(i), MIN_OBJECTS);
        }
        let tiny = Bytes::from_static(b"{}");
        assert!(matches!(p.pack(tiny.clone(), MIN_OBJECTS), Body::Plain(b) if b == tiny));
        let noise: Vec<u8> = (0..2000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let noise = Bytes::from(noise);
        let body = p.pack(noise.clone(), MIN_OBJECTS);
        assert_eq!(body.json(), noise);
    }
}
