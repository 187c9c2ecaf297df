//! What the shape statistics cost per scenario, next to judging it: generates N scenarios,
//! then times classifying and counting them (`coverage::shown` + `Coverage::observe`) and
//! judging them (`judge_seed`). `cargo run --release -p fuzz --example coverage_cost [N]`.

use std::time::Instant;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(500);
    let config = fuzz::FuzzConfig::default();
    let scenarios: Vec<_> = (0..n)
        .filter_map(|seed| fuzz::scenario_for(seed, &config.shape).ok())
        .collect();
    let started = Instant::now();
    let mut coverage = reports::Coverage::default();
    for s in &scenarios {
        coverage.observe(fuzz::coverage::shown(s, None));
    }
    let classify = started.elapsed();
    let started = Instant::now();
    for seed in 0..n {
        let _ = fuzz::judge_seed(seed, &config);
    }
    let judge = started.elapsed();
    println!(
        "{n} scenarios: coverage {:.1} µs/scenario, judging {:.1} µs/scenario ({:.2}% overhead)",
        classify.as_secs_f64() * 1e6 / n as f64,
        judge.as_secs_f64() * 1e6 / n as f64,
        100.0 * classify.as_secs_f64() / judge.as_secs_f64()
    );
}
