//! API requests per seed against the minimum a seed needs (issue 7: ≤ 1.2 ×): the minimum is
//! every write the mocks take plus one list of each observed kind per write step
//! (`ApiTarget::minimum_requests`); served is what the twin counted for the seed.
//!
//! `cargo run --release -p fuzz --example api_calls [SEEDS]`

use fuzz::scenario_for;
use generators::ShapeConfig;
use tier::{ApiConfig, ApiTarget, Target};

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let mut twin = ApiTarget::start(ApiConfig::default()).expect("the twin starts");
    let (mut served, mut needed) = (0u64, 0u64);
    let mut ratios = Vec::new();
    for seed in 0..seeds {
        let s = scenario_for(seed, &ShapeConfig::default()).expect("a scenario");
        let before = twin.api_calls();
        let verdict = twin.judge(&s, None);
        let spent = twin.api_calls() - before;
        let minimum = twin.minimum_requests();
        if !matches!(verdict, Ok(None)) {
            eprintln!("seed {seed}: {verdict:?} (left out)");
            continue;
        }
        served += spent;
        needed += minimum;
        ratios.push(spent as f64 / minimum.max(1) as f64);
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q) as usize];
    println!(
        "{} seeds: {served} requests served, {needed} needed: {:.3} x overall; per seed median {:.3} x, p90 {:.3} x, max {:.3} x",
        ratios.len(),
        served as f64 / needed.max(1) as f64,
        at(0.5),
        at(0.9),
        at(1.0)
    );
}
