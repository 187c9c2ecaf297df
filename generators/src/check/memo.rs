//! The checker's caches: interners (one copy of each distinct card row, hold and structure,
//! named by a small id the state carries) and bounded memo tables keyed by 64-bit
//! fingerprints. The model's derivation and admission rules depend only on what the keys
//! fingerprint, so a hit returns what the model would compute again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use dashmap::DashMap;

/// Most entries a memo table keeps; past it, misses are computed and not stored (the search
/// stays correct, only slower), so memory stays bounded on large scopes.
pub const MEMO_CAP: usize = 1 << 22;

pub use model::steps::fingerprint;

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
/// Reading a value by its id takes no lock and touches no shared counter (the values sit in an
/// append-only vector): the search reads a state's structure and holds at every step, and the
/// lock and reference count the threads shared doubled that read's share of the time on two
/// threads (`Tables::hold` 2 % of one thread's perf samples, 4 % of two threads').
pub struct Interner<T> {
    values: boxcar::Vec<T>,
    /// Ids by fingerprint; written only when a new value is added.
    by_fingerprint: RwLock<HashMap<u64, Vec<u32>>>,
}

impl<T: PartialEq> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            values: boxcar::Vec::new(),
            by_fingerprint: RwLock::new(HashMap::new()),
        }
    }
}

impl<T: PartialEq> Interner<T> {
    /// The id of `value` (`fp` is its fingerprint), adding it when new.
    pub fn intern(&self, fp: u64, value: T) -> u32 {
        let find = |ids: &HashMap<u64, Vec<u32>>| {
            ids.get(&fp)?
                .iter()
                .copied()
                .find(|id| self.get(*id).is_some_and(|v| *v == value))
        };
        if let Some(id) = find(
            &self
                .by_fingerprint
                .read()
                .unwrap_or_else(|e| e.into_inner()),
        ) {
            return id;
        }
        let mut ids = self
            .by_fingerprint
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(id) = find(&ids) {
            return id;
        }
        // pushed under the write lock: ids are given out in order, each once
        let id = self.values.push(value) as u32;
        ids.entry(fp).or_default().push(id);
        id
    }

    /// The value behind `id` (`None` for an id this interner never gave out).
    pub fn get(&self, id: u32) -> Option<&T> {
        self.values.get(id as usize)
    }

    pub fn len(&self) -> usize {
        self.values.count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        assert_eq!(i.get(b).map(String::as_str), Some("b"));
        assert_eq!(i.get(99), None);
    }

    /// Threads interning the same values at once agree on every id, and every id reads back
    /// its value: ids are given out once each, in order, under the write lock.
    #[test]
    fn threads_interning_alike_values_agree_on_their_ids() {
        let i = Interner::default();
        let ids: Vec<Vec<u32>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|t| {
                    let i = &i;
                    scope.spawn(move || {
                        (0..500u64)
                            .map(|n| (n * 7 + t) % 500)
                            .map(|n| (n, i.intern(n % 13, n)))
                            .collect::<std::collections::BTreeMap<_, _>>()
                            .into_values()
                            .collect()
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert!(ids.iter().all(|each| *each == ids[0]));
        assert_eq!(i.len(), 500);
        for (n, id) in ids[0].iter().enumerate() {
            assert_eq!(i.get(*id), Some(&(n as u64)));
        }
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
