//! An optional store for the derivation's per-node and per-pool steps, so a caller that derives
//! many similar clusters (`verify check`: thousands of worlds that differ in one node or one
//! card) re-uses the steps whose inputs did not change. The model stays pure: each step's key
//! fingerprints everything the step reads, and a derivation with a store installed returns
//! exactly what it returns without one (tested in `derive.rs` and by `generators`' checks).

use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::derive::DerivedNode;
use crate::objects::{ClusterQueue, InstanceType};

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
}

thread_local! {
    static STORE: RefCell<Option<Arc<dyn StepStore>>> = const { RefCell::new(None) };
}

/// Runs `f` with `store` serving this thread's derivations (the previous store, if any, is
/// restored afterwards, also on unwind).
pub fn with_store<R>(store: &Arc<dyn StepStore>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<dyn StepStore>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            STORE.with(|s| *s.borrow_mut() = previous);
        }
    }
    let _restore = Restore(STORE.with(|s| s.borrow_mut().replace(Arc::clone(store))));
    f()
}

/// The store installed on this thread, if any (cloned out, so a step computing on a miss never
/// holds the thread's slot).
pub(crate) fn installed() -> Option<Arc<dyn StepStore>> {
    STORE.with(|s| s.borrow().clone())
}

/// The key of a step whose inputs are `inputs`.
pub(crate) fn step_key<T: Hash + ?Sized>(store: &dyn StepStore, inputs: &T) -> u64 {
    store.key(&|mut h| inputs.hash(&mut h))
}
