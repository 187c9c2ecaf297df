//! Times `model::derive::derive` on the three reference shapes: the 1,000-node × 8-card mixed
//! cluster, one node × 8 cards, and the 4-node walkthrough (chain.md §15).
//! Run: `cargo run --release -p model --example derive_timing [seconds-per-shape] [shape-filter]`
//! (the filter, e.g. `walkthrough`, keeps the shapes whose name contains it: handy under perf).

use std::hint::black_box;
use std::time::{Duration, Instant};

use model::cluster::Cluster;

/// Runs `derive` for about `budget` and returns the mean and the best time of one call.
fn time(cluster: &Cluster, budget: Duration) -> (Duration, Duration) {
    let start = Instant::now();
    let mut runs = 0u32;
    let mut best = Duration::MAX;
    while start.elapsed() < budget || runs < 5 {
        let t = Instant::now();
        black_box(model::derive::derive(black_box(cluster)));
        best = best.min(t.elapsed());
        runs += 1;
    }
    (start.elapsed() / runs, best)
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2.0);
    let budget = Duration::from_secs_f64(secs);
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
        let (mean, best) = time(cluster, budget);
        println!("{name:<24} mean {mean:>10.1?}  best {best:>10.1?}");
    }
}
