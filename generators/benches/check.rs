//! `verify check` throughput on the default scope (3 nodes × 2 cards, 4 workloads): states
//! generated and unique, depth, wall time and unique states/s, for BFS on one and two threads
//! and DFS with symmetry. One run each (a complete exploration is the unit of work; criterion's
//! repeated sampling would take minutes). Run:
//! `cargo bench -p generators --bench check` (release profile). Pass a scope as
//! `-- NODES CARDS WORKLOADS [MAX_STATES]` to measure another one or to stop each search after
//! about MAX_STATES generated states (0: no bound), and a fifth argument (`bfs1`, `bfs2`,
//! `dfs2`, `floor1` or `floor2`) to run only that search. Also prints where the time went (memo
//! tables: how many times each kind of model work ran and how long it took, summed over
//! threads).
//!
//! `floor1`/`floor2` measure what stateright's BFS costs with no model work left: the scope is
//! explored once (cold), then again by a model sharing the first one's tables, where every
//! model answer is a lookup. The second row is the most unique states/s any model could reach
//! through this checker on this machine.

use generators::check::{explore, run_check, ChainModel, CheckConfig, CheckReport, Search};

/// The model's derivations allocate many small strings; glibc's allocator spent about half the
/// bench's time in malloc/free (perf), mimalloc far less.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<usize> = raw.iter().filter_map(|a| a.parse().ok()).collect();
    let only = raw
        .iter()
        .find(|a| a.parse::<usize>().is_err() && !a.starts_with('-'));
    let scope = CheckConfig {
        nodes: args.first().copied().unwrap_or(3),
        cards: args.get(1).copied().unwrap_or(2),
        workloads: args.get(2).copied().unwrap_or(4),
        max_states: args.get(3).copied().filter(|n| *n > 0),
        ..CheckConfig::default()
    };
    println!(
        "{:<24} {:>12} {:>12} {:>6} {:>10} {:>14}  verdict",
        "search", "generated", "unique", "depth", "wall", "unique/s"
    );
    for (tag, name, config) in [
        (
            "bfs1",
            "bfs, 1 thread",
            CheckConfig {
                threads: 1,
                ..scope.clone()
            },
        ),
        (
            "bfs2",
            "bfs, 2 threads",
            CheckConfig {
                threads: 2,
                ..scope.clone()
            },
        ),
        (
            "dfs2",
            "dfs + symmetry, 2 threads",
            CheckConfig {
                threads: 2,
                search: Search::Dfs,
                symmetry: true,
                ..scope.clone()
            },
        ),
    ] {
        if only.is_some_and(|o| o != tag) {
            continue;
        }
        match run_check(&config) {
            Ok(r) => {
                row(name, &r);
                for m in &r.memo {
                    println!(
                        "    {:<22} {:>9} computed {:>9.2}s",
                        m.name,
                        m.entries,
                        m.busy.as_secs_f64()
                    );
                }
            }
            Err(e) => fail(name, &e),
        }
    }
    for threads in [1, 2] {
        if only.is_some_and(|o| *o != format!("floor{threads}")) {
            continue;
        }
        let config = CheckConfig {
            threads,
            ..scope.clone()
        };
        let label = format!("bfs, {threads} thread(s)");
        let cold = ChainModel::for_check(&config).unwrap_or_else(|e| fail(&label, &e));
        let mut warm = ChainModel::for_check(&config).unwrap_or_else(|e| fail(&label, &e));
        warm.tables = cold.tables.clone();
        row(&format!("{label}, cold"), &explore(&config, cold));
        row(&format!("{label}, no model work"), &explore(&config, warm));
    }
}

fn row(name: &str, r: &CheckReport) {
    println!(
        "{name:<24} {:>12} {:>12} {:>6} {:>9.2}s {:>14.0}  {}",
        r.states_generated,
        r.unique_states,
        r.max_depth,
        r.wall.as_secs_f64(),
        r.unique_per_second(),
        match (r.complete, r.violated()) {
            (_, true) => "VIOLATED",
            (true, false) => "all held",
            (false, false) => "incomplete",
        }
    );
}

fn fail(name: &str, e: &str) -> ! {
    eprintln!("{name}: {e}");
    std::process::exit(2);
}
