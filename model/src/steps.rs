//! A store for the derivation's per-node, per-flavor and per-pool steps, so a caller that derives
//! many similar clusters (`verify check`: thousands of worlds that differ in one node or one card)
//! re-uses the steps whose inputs did not change; a store may keep gate 1's verdicts (a Workload
//! and the InstanceType fronting its queue) and gate 2's TAS view of a node (the node and its
//! derived labels) the same way. The caller owns the store and hands it to
//! a [`Deriver`](crate::derive::Deriver); the model keeps none. Each step's key fingerprints
//! everything the step reads, so a derivation through a store returns exactly what it returns
//! without one (tested in `derive.rs` and by `generators`' checks).
//!
//! [`LatestSteps`] is the model's own store: the incremental derivation. It keeps the steps of
//! the latest derivation only, so the next one re-derives just what changed since and memory
//! stays one derivation's.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::derive::DerivedNode;
use crate::lifecycle::PodWebhookVerdict;
use crate::objects::{ClusterQueue, InstanceType, ResourceFlavor};
use crate::placement::TasNode;

/// Where step results are kept, keyed by fingerprints of the steps' inputs.
pub trait StepStore: Send + Sync {
    /// The node step's result under `key`, computing it on a miss.
    fn node(&self, key: u64, compute: &mut dyn FnMut() -> DerivedNode) -> DerivedNode;
    /// The pool step's result under `key`, computing it on a miss.
    fn pool(
        &self,
        key: u64,
        compute: &mut dyn FnMut() -> (InstanceType, ClusterQueue),
    ) -> (InstanceType, ClusterQueue);
    /// The flavor step's result (one ResourceFlavor, rule 9) under `key`, computing it on a
    /// miss.
    fn flavor(&self, key: u64, compute: &mut dyn FnMut() -> ResourceFlavor) -> ResourceFlavor;
    /// Gate 1's verdict on a Workload (its pod sets as the pod webhooks admit them, or the
    /// refusal) under `key`, computing it on a miss. Not a derivation step: a store that keeps
    /// only those computes it every time.
    fn pod_webhook(
        &self,
        _key: u64,
        compute: &mut dyn FnMut() -> PodWebhookVerdict,
    ) -> PodWebhookVerdict {
        compute()
    }
    /// Gate 2's view of one node as Kueue's TAS sees it (labels with the current fit labels,
    /// free accelerators, `cpu`) under `key`, computing it on a miss. Like gate 1's verdict, not
    /// a derivation step.
    fn tas_node(&self, _key: u64, compute: &mut dyn FnMut() -> TasNode) -> TasNode {
        compute()
    }
    /// A pool's selection under `key`, computing it on a miss: the positions of the flavors it
    /// selects (rule 7.3) or of the nodes whose Devices it reads (rule 18) in the derivation's
    /// lists. Part of a pool step's key, which a hit then needs no selector for.
    fn selection(&self, _key: u64, compute: &mut dyn FnMut() -> Vec<usize>) -> Vec<usize> {
        compute()
    }
    /// A derivation through the store has ended. A store that keeps only the steps the latest
    /// derivation used ([`LatestSteps`]) drops the older ones here; others keep everything.
    fn settled(&self) {}
}

/// A deterministic 64-bit fingerprint (fixed seeds: a value fingerprints alike in every run
/// and thread). A step's key is the fingerprint of its inputs; `verify check` keys its memo
/// tables and interners with it too. Equal fingerprints are taken for equal inputs, with the odds
/// of a collision of any 64-bit state fingerprint (stateright identifies states the same way).
/// The inputs' `Hash` impls run against this concrete hasher, not a `dyn Hasher`, where the
/// virtual call per field cost a step key about as much as the hashing.
pub fn fingerprint<T: Hash + ?Sized>(inputs: &T) -> u64 {
    FINGERPRINT.hash_one(inputs)
}

/// ahash rather than foldhash here: a check's first 10,000 states ran 2.6 % fewer instructions
/// with it (its keys hash mostly short label strings).
static FINGERPRINT: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// The incremental derivation's store: the steps the latest derivation used, and those of the
/// one before while the next derivation runs. A derivation after a change (a node joined, left
/// or changed; a card's ledger moved; a setting flipped) is then served every node whose
/// inputs are unchanged, every flavor whose contributors are, and every pool whose flavors,
/// nodes and Devices are; it computes only the rest. Which steps a change touches is found by
/// the keys, not told by the caller: a world's ledgers move between its derivations (each
/// admission charges cards), and a description of the change would be a second account of
/// that which could drift from the cluster.
#[derive(Default)]
pub struct LatestSteps {
    generations: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    /// Steps the running (or last finished) derivation used.
    current: Steps,
    /// Steps of the derivation before it, not yet asked for again.
    previous: Steps,
}

/// Keys are fingerprints already: the maps spread them with the cheapest hash.
type Table<V> = HashMap<u64, V, foldhash::fast::FixedState>;

#[derive(Default)]
struct Steps {
    nodes: Table<DerivedNode>,
    flavors: Table<ResourceFlavor>,
    pools: Table<(InstanceType, ClusterQueue)>,
    selections: Table<Vec<usize>>,
}

impl LatestSteps {
    /// The generations; a panic in another holder's compute cannot leave them half-written
    /// (inserts are whole), so a poisoned lock is taken as it is.
    fn lock(&self) -> MutexGuard<'_, Generations> {
        self.generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The step under `key` from the current generation, or moved up from the previous one,
    /// or computed (outside the lock: a step never re-enters the store, but a panic in it
    /// should not poison it) and kept in the current one.
    fn served<V: Clone>(
        &self,
        table: fn(&mut Steps) -> &mut Table<V>,
        key: u64,
        compute: &mut dyn FnMut() -> V,
    ) -> V {
        {
            let mut guard = self.lock();
            let Generations { current, previous } = &mut *guard;
            if let Some(v) = table(current).get(&key) {
                return v.clone();
            }
            if let Some(v) = table(previous).remove(&key) {
                table(current).insert(key, v.clone());
                return v;
            }
        }
        let v = compute();
        table(&mut self.lock().current).insert(key, v.clone());
        v
    }

    /// How many steps of each kind (nodes, flavors, pools) the store holds now.
    pub fn held(&self) -> (usize, usize, usize) {
        let g = self.lock();
        let count = |s: &Steps| (s.nodes.len(), s.flavors.len(), s.pools.len());
        let (a, b) = (count(&g.current), count(&g.previous));
        (a.0 + b.0, a.1 + b.1, a.2 + b.2)
    }
}

impl StepStore for LatestSteps {
    fn node(&self, key: u64, compute: &mut dyn FnMut() -> DerivedNode) -> DerivedNode {
        self.served(|s| &mut s.nodes, key, compute)
    }

    fn pool(
        &self,
        key: u64,
        compute: &mut dyn FnMut() -> (InstanceType, ClusterQueue),
    ) -> (InstanceType, ClusterQueue) {
        self.served(|s| &mut s.pools, key, compute)
    }

    fn flavor(&self, key: u64, compute: &mut dyn FnMut() -> ResourceFlavor) -> ResourceFlavor {
        self.served(|s| &mut s.flavors, key, compute)
    }

    fn selection(&self, key: u64, compute: &mut dyn FnMut() -> Vec<usize>) -> Vec<usize> {
        self.served(|s| &mut s.selections, key, compute)
    }

    /// The steps this derivation did not ask for are dropped; its own become the previous
    /// generation the next derivation draws from.
    fn settled(&self) {
        let mut g = self.lock();
        g.previous = std::mem::take(&mut g.current);
    }
}
