//! Times `model::derive::derive` on the three reference shapes: the 1,000-node × 8-card mixed
//! cluster, one node × 8 cards, and the 4-node walkthrough (chain.md §15); then the incremental
//! derivation (`Deriver::incremental`) of the 1,000 × 8 cluster after one node changed (each
//! call flips one label on one node, so every call re-derives that node and its pools).
//! Run: `cargo run --release -p model --example derive_timing [seconds-per-shape] [shape-filter]`
//! (the filter, e.g. `walkthrough`, keeps the shapes whose name contains it: handy under perf).
//! A budget written `<n>x` (e.g. `2000x`) makes exactly n calls per shape, so that
//! `perf stat -e instructions:u` compares two builds without this machine's timing noise.

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use model::derive::{Derived, Deriver};

/// The `verify` binary's allocator (jemalloc), counting allocations: the derivation is
/// allocation-bound, and the count per call is exact where this machine's timings are not.
struct Counting;

#[cfg(not(target_env = "msvc"))]
static INNER: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
#[cfg(target_env = "msvc")]
static INNER: std::alloc::System = std::alloc::System;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { INNER.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { INNER.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { INNER.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// How long to run each shape: about a duration, or an exact number of calls.
#[derive(Clone, Copy)]
enum Budget {
    Time(Duration),
    Calls(u32),
}

/// Runs `derive` within `budget` and returns the mean and the best time of one call.
fn time(mut derive: impl FnMut() -> Derived, budget: Budget) -> (Duration, Duration) {
    let start = Instant::now();
    let mut runs = 0u32;
    let mut best = Duration::MAX;
    let more = |runs: u32| match budget {
        Budget::Time(t) => start.elapsed() < t || runs < 5,
        Budget::Calls(n) => runs < n.max(1),
    };
    while more(runs) {
        let t = Instant::now();
        black_box(derive());
        best = best.min(t.elapsed());
        runs += 1;
    }
    (start.elapsed() / runs, best)
}

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    let budget = match arg.strip_suffix('x').and_then(|n| n.parse().ok()) {
        Some(calls) => Budget::Calls(calls),
        None => Budget::Time(Duration::from_secs_f64(arg.parse().unwrap_or(2.0))),
    };
    let filter = std::env::args().nth(2).unwrap_or_default();
    let shapes = [
        (
            "1000 nodes x 8 cards",
            model::examples::large_mixed(1000, 8),
        ),
        ("1 node x 8 cards", model::examples::large_mixed(1, 8)),
        ("walkthrough (4 nodes)", model::examples::walkthrough()),
    ];
    for (name, cluster) in shapes.iter().filter(|(n, _)| n.contains(filter.as_str())) {
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        black_box(model::derive::derive(cluster));
        let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        let (mean, best) = time(|| model::derive::derive(black_box(cluster)), budget);
        report(name, mean, best, allocations);
    }
    let name = "1000 x 8, one node changed (incremental)";
    if name.contains(filter.as_str()) {
        let before = model::examples::large_mixed(1000, 8);
        let mut after = before.clone();
        after.nodes[500]
            .labels
            .insert("example.com/rack".into(), "r500".into());
        let deriver = Deriver::incremental();
        deriver.derive(&before);
        let mut calls = 0u64;
        let mut next = || {
            calls += 1;
            deriver.derive(black_box(if calls % 2 == 1 { &after } else { &before }))
        };
        let counted = ALLOCATIONS.load(Ordering::Relaxed);
        black_box(next());
        let allocations = ALLOCATIONS.load(Ordering::Relaxed) - counted;
        let (mean, best) = time(next, budget);
        report(name, mean, best, allocations);
    }
}

fn report(name: &str, mean: Duration, best: Duration, allocations: u64) {
    println!("{name:<42} mean {mean:>10.2?}  best {best:>10.2?}  {allocations:>9} allocations");
}
