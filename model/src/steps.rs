//! A store for the derivation's per-node, per-flavor and per-pool steps, so a caller that derives many
//! similar clusters (`verify check`: thousands of worlds that differ in one node or one card)
//! re-uses the steps whose inputs did not change. The caller owns the store and hands it to a
//! [`Deriver`](crate::derive::Deriver); the model keeps none. Each step's key fingerprints
//! everything the step reads, so a derivation through a store returns exactly what it returns
//! without one (tested in `derive.rs` and by `generators`' checks).

use std::hash::{Hash, Hasher};

use crate::derive::DerivedNode;
use crate::objects::{ClusterQueue, InstanceType, ResourceFlavor};

/// Where step results are kept, keyed by fingerprints of the steps' inputs.
pub trait StepStore: Send + Sync {
    /// A 64-bit fingerprint of what `write` feeds the hasher. Equal keys are taken for equal
    /// inputs, with the odds of a collision of any 64-bit state fingerprint (stateright
    /// identifies states the same way); the store picks the hash (the model depends on nothing
    /// that has a fast one).
    fn key(&self, write: &dyn Fn(&mut dyn Hasher)) -> u64;
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
}

/// The key of a step whose inputs are `inputs`.
pub(crate) fn step_key<T: Hash + ?Sized>(store: &dyn StepStore, inputs: &T) -> u64 {
    store.key(&|mut h| inputs.hash(&mut h))
}
