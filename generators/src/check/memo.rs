//! The checker's caches: interners (one copy of each distinct card row, hold and structure,
//! named by a small id the state carries) and bounded memo tables keyed by 64-bit
//! fingerprints. The model's derivation and admission rules depend only on what the keys
//! fingerprint, so a hit returns what the model would compute again.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use dashmap::DashMap;

/// Most entries a memo table keeps; past it, misses are computed and not stored (the search
/// stays correct, only slower), so memory stays bounded on large scopes.
pub const MEMO_CAP: usize = 1 << 22;

/// A deterministic 64-bit fingerprint (fixed seeds: the same key fingerprints alike in every
/// run and thread). Stateright identifies states by 64-bit fingerprints too; memo keys carry
/// the same collision odds.
pub fn fingerprint<T: Hash + ?Sized>(t: &T) -> u64 {
    HASHER.hash_one(t)
}

/// A fingerprint of what `write` feeds the hasher (the same hash as [`fingerprint`]).
pub fn fingerprint_with(write: &dyn Fn(&mut dyn Hasher)) -> u64 {
    let mut h = HASHER.build_hasher();
    write(&mut h);
    h.finish()
}

static HASHER: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// A bounded, thread-safe fingerprint → value cache.
pub struct Memo<V> {
    map: DashMap<u64, V, ahash::RandomState>,
    len: AtomicUsize,
    /// Most entries kept.
    cap: usize,
    /// Time spent computing misses (where a check's time goes; reported, never asserted).
    busy_nanos: AtomicU64,
}

impl<V: Clone> Default for Memo<V> {
    fn default() -> Self {
        Memo::with_cap(MEMO_CAP)
    }
}

impl<V: Clone> Memo<V> {
    /// A table keeping at most `cap` entries (for large values: what a full table may hold).
    pub fn with_cap(cap: usize) -> Self {
        Memo {
            map: DashMap::with_hasher(ahash::RandomState::new()),
            len: AtomicUsize::new(0),
            cap,
            busy_nanos: AtomicU64::new(0),
        }
    }

    /// The value stored under `key`, computing (and, below the cap, storing) it on a miss.
    pub fn get_or(&self, key: u64, compute: impl FnOnce() -> V) -> V {
        if let Some(v) = self.map.get(&key) {
            return v.clone();
        }
        let start = Instant::now();
        let v = compute();
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos.fetch_add(nanos, Ordering::Relaxed);
        if self.len.load(Ordering::Relaxed) < self.cap && self.map.insert(key, v.clone()).is_none()
        {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
        v
    }

    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total time spent computing misses (summed over threads).
    pub fn busy(&self) -> Duration {
        Duration::from_nanos(self.busy_nanos.load(Ordering::Relaxed))
    }
}

/// One copy of each distinct value, named by its index. Values are bucketed by a
/// caller-given fingerprint and compared in full, so two different values never share an id.
pub struct Interner<T> {
    inner: RwLock<InternTable<T>>,
}

struct InternTable<T> {
    by_fingerprint: HashMap<u64, Vec<u32>>,
    values: Vec<Arc<T>>,
}

impl<T: PartialEq> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            inner: RwLock::new(InternTable {
                by_fingerprint: HashMap::new(),
                values: Vec::new(),
            }),
        }
    }
}

impl<T: PartialEq> Interner<T> {
    /// The id of `value` (`fp` is its fingerprint), adding it when new.
    pub fn intern(&self, fp: u64, value: T) -> u32 {
        {
            let table = self.inner.read().unwrap_or_else(|e| e.into_inner());
            if let Some(id) = table.find(fp, &value) {
                return id;
            }
        }
        let mut table = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = table.find(fp, &value) {
            return id;
        }
        let id = table.values.len() as u32;
        table.values.push(Arc::new(value));
        table.by_fingerprint.entry(fp).or_default().push(id);
        id
    }

    /// The value behind `id` (`None` for an id this interner never gave out).
    pub fn get(&self, id: u32) -> Option<Arc<T>> {
        let table = self.inner.read().unwrap_or_else(|e| e.into_inner());
        table.values.get(id as usize).cloned()
    }

    pub fn len(&self) -> usize {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: PartialEq> InternTable<T> {
    fn find(&self, fp: u64, value: &T) -> Option<u32> {
        self.by_fingerprint.get(&fp).and_then(|ids| {
            ids.iter()
                .copied()
                .find(|id| self.values.get(*id as usize).is_some_and(|v| **v == *value))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interner_names_equal_values_alike_even_when_fingerprints_collide() {
        let i = Interner::default();
        let a = i.intern(7, "a".to_string());
        let b = i.intern(7, "b".to_string());
        assert_ne!(a, b);
        assert_eq!(i.intern(7, "a".to_string()), a);
        assert_eq!(i.get(b).as_deref().map(String::as_str), Some("b"));
        assert_eq!(i.get(99), None);
    }

    #[test]
    fn a_full_memo_computes_without_storing() {
        let m = Memo::with_cap(1);
        assert_eq!(m.get_or(1, || 10), 10);
        assert_eq!(m.get_or(2, || 20), 20);
        assert_eq!(m.get_or(2, || 30), 30);
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn memo_computes_once_per_key() {
        let m = Memo::default();
        assert_eq!(m.get_or(1, || 10), 10);
        assert_eq!(m.get_or(1, || 20), 10);
        assert_eq!(m.len(), 1);
    }
}
