//! `verify check` throughput: the default scope's exploration (unique states/s) with BFS on
//! one and two threads, and DFS with symmetry. Run: `cargo bench -p generators --bench check`.

use criterion::{criterion_group, criterion_main, Criterion};
use generators::check::{run_check, CheckConfig, Search};

fn default_scope(c: &mut Criterion) {
    let mut group = c.benchmark_group("check");
    group.sample_size(10);
    for (name, config) in [
        ("bfs-1-thread", CheckConfig::default()),
        (
            "bfs-2-threads",
            CheckConfig {
                threads: 2,
                ..CheckConfig::default()
            },
        ),
        (
            "dfs-symmetry-2-threads",
            CheckConfig {
                threads: 2,
                search: Search::Dfs,
                symmetry: true,
                ..CheckConfig::default()
            },
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let r = run_check(&config);
                eprintln!(
                    "{name}: {} unique states in {:.2?} ({:.0} unique/s)",
                    r.unique_states,
                    r.wall,
                    r.unique_per_second()
                );
                r.unique_states
            })
        });
    }
    group.finish();
}

criterion_group!(benches, default_scope);
criterion_main!(benches);
