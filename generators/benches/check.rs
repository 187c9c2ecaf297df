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
//! model answer is a lookup. `graph1`/`graph2` go further: the scope's state graph is
//! recorded once, then stateright explores it through a model whose every step is an array
//! index (same states, same successors in the same order, one property that always holds).
//! That row is what stateright's BFS alone costs for this scope on this machine: no model,
//! however fast, can make the check faster than it.
//!
//! `own1`/`own2` measure what replacing stateright would give: a plain breadth-first search
//! written for this bench ([`plain_bfs`]) on one or two threads explores the recorded graph
//! (the floor a replacement would have) and then the scope itself, cold, through `ChainModel`
//! (what `verify check` would cost on it). Both must visit exactly stateright's states.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::time::Instant;

use generators::check::{explore, run_check, ChainModel, CheckConfig, CheckReport, Search, State};
use stateright::{Checker, Expectation, Model, Property};

/// The `verify` binary's allocator, so that the floor and `verify check` are timed alike (the
/// model's derivations allocate many small strings; glibc's allocator spent about half the
/// bench's time in malloc/free, perf).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
    // Opt-in: recording the graph explores the scope once with the model.
    if only.is_some_and(|o| o.starts_with("graph") || o.starts_with("own")) {
        let model = ChainModel::for_check(&scope).unwrap_or_else(|e| fail("graph", &e));
        let graph = Graph::record(&model);
        for threads in [1, 2] {
            if only.is_some_and(|o| *o == format!("graph{threads}")) {
                let start = Instant::now();
                let checker = graph.clone().checker().threads(threads).spawn_bfs().join();
                print_row(
                    &format!("stateright alone, {threads}t"),
                    (checker.state_count(), checker.unique_state_count()),
                    checker.max_depth(),
                    start.elapsed().as_secs_f64(),
                    if checker.is_done() {
                        "complete"
                    } else {
                        "incomplete"
                    },
                );
            }
            if only.is_some_and(|o| *o == format!("own{threads}")) {
                plain_bfs(&format!("plain BFS alone, {threads}t"), &graph, threads);
                let cold = ChainModel::for_check(&scope).unwrap_or_else(|e| fail("own", &e));
                plain_bfs(&format!("plain BFS, model, {threads}t"), &cold, threads);
            }
        }
    }
}

/// The scope's state graph: each unique state and the ids of the successors `ChainModel`
/// generates from it, in its action order (duplicates kept, as stateright sees them).
#[derive(Clone)]
struct Graph {
    states: std::sync::Arc<Vec<State>>,
    successors: std::sync::Arc<Vec<Vec<u32>>>,
}

impl Graph {
    fn record(model: &ChainModel) -> Graph {
        let start = model.init_states()[0];
        let mut ids = HashMap::from([(start, 0u32)]);
        let mut states = vec![start];
        let mut successors = Vec::new();
        let mut queue = VecDeque::from([start]);
        let mut actions = Vec::new();
        while let Some(s) = queue.pop_front() {
            model.actions(&s, &mut actions);
            let mut next_ids = Vec::new();
            for a in actions.drain(..) {
                let Some(next) = model.next_state(&s, a) else {
                    continue;
                };
                let id = *ids.entry(next).or_insert_with(|| {
                    states.push(next);
                    queue.push_back(next);
                    (states.len() - 1) as u32
                });
                next_ids.push(id);
            }
            successors.push(next_ids);
        }
        Graph {
            states: states.into(),
            successors: successors.into(),
        }
    }
}

/// A state of the recorded graph: its id, and the checker's state itself, which is what is
/// hashed and moved (so fingerprints and queue entries cost what they cost in `verify check`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Recorded {
    id: u32,
    state: State,
}

impl Hash for Recorded {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.state.hash(h);
    }
}

impl Model for Graph {
    type State = Recorded;
    type Action = u32;

    fn init_states(&self) -> Vec<Recorded> {
        vec![Recorded {
            id: 0,
            state: self.states[0],
        }]
    }

    fn actions(&self, s: &Recorded, actions: &mut Vec<u32>) {
        actions.extend(0..self.successors[s.id as usize].len() as u32);
    }

    fn next_state(&self, s: &Recorded, k: u32) -> Option<Recorded> {
        let id = self.successors[s.id as usize][k as usize];
        Some(Recorded {
            id,
            state: self.states[id as usize],
        })
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always("holds", |_, _| true)]
    }
}

/// A breadth-first search of `model` on `threads` threads doing what any checker must per state
/// and no more: evaluate the properties, generate the successors, fingerprint each
/// (stateright's hash: ahash with fixed seeds) and keep each new one with its parent's
/// fingerprint (from which a counterexample's path is rebuilt). stateright's BFS also clones
/// the path of every successor it generates and keeps its maps and counters shared between
/// threads. One thread runs a plain queue and map; several go level by level sharing nothing
/// while they work: each expands its share of the frontier, then each keeps the new states
/// whose fingerprints it owns in a map of its own. Prints a row like the others, the verdict
/// being the properties that did not hold as expected.
fn plain_bfs<M>(name: &str, model: &M, threads: usize)
where
    M: Model + Sync,
    M::State: Hash + Send + Sync,
{
    let start = Instant::now();
    let properties = model.properties();
    // Always: held in every state so far; sometimes: held in some state.
    let mut met: Vec<bool> = properties
        .iter()
        .map(|p| p.expectation != Expectation::Sometimes)
        .collect();
    let (generated, unique, depth) = if threads <= 1 {
        queue_bfs(model, &properties, &mut met)
    } else {
        level_bfs(model, &properties, &mut met, threads)
    };
    let wall = start.elapsed().as_secs_f64();
    let unmet: Vec<&str> = properties
        .iter()
        .zip(&met)
        .filter(|(_, met)| !**met)
        .map(|(p, _)| p.name)
        .collect();
    let verdict = if unmet.is_empty() {
        "all held".to_string()
    } else {
        format!("not as expected: {}", unmet.join(", "))
    };
    print_row(name, (generated, unique), depth, wall, &verdict);
}

/// Parent fingerprints by fingerprint.
type Parents = HashMap<u64, u64, nohash_hasher::BuildNoHashHasher<u64>>;

/// Folds one state's verdicts (`holds[i]` for property i) into `met`.
fn fold_verdicts<M: Model>(
    properties: &[Property<M>],
    met: &mut [bool],
    holds: impl Fn(usize) -> bool,
) {
    for (i, (p, met)) in properties.iter().zip(met).enumerate() {
        match p.expectation {
            Expectation::Always => *met &= holds(i),
            Expectation::Sometimes => *met |= holds(i),
            Expectation::Eventually => {}
        }
    }
}

/// Judges `state` and hands each successor within the boundary, with its fingerprint, to
/// `found`; returns how many it generated.
fn expand<M: Model>(
    model: &M,
    properties: &[Property<M>],
    met: &mut [bool],
    state: &M::State,
    actions: &mut Vec<M::Action>,
    mut found: impl FnMut(M::State, u64),
) -> usize
where
    M::State: Hash,
{
    fold_verdicts(properties, met, |i| (properties[i].condition)(model, state));
    model.actions(state, actions);
    let mut generated = 0;
    for a in actions.drain(..) {
        let Some(next) = model.next_state(state, a) else {
            continue;
        };
        if model.within_boundary(&next) {
            generated += 1;
            let fp = generators::check::memo::fingerprint(&next);
            found(next, fp);
        }
    }
    generated
}

/// One thread: a FIFO queue and one map. Returns (generated, unique, depth).
fn queue_bfs<M: Model>(
    model: &M,
    properties: &[Property<M>],
    met: &mut [bool],
) -> (usize, usize, usize)
where
    M::State: Hash,
{
    let mut parents = Parents::default();
    let mut queue = VecDeque::new();
    for s in model.init_states() {
        let fp = generators::check::memo::fingerprint(&s);
        if parents.insert(fp, fp).is_none() {
            queue.push_back((s, fp, 1usize));
        }
    }
    let (mut generated, mut depth) = (parents.len(), 0);
    let mut actions = Vec::new();
    while let Some((state, fp, d)) = queue.pop_front() {
        depth = depth.max(d);
        generated += expand(
            model,
            properties,
            met,
            &state,
            &mut actions,
            |next, next_fp| {
                if let std::collections::hash_map::Entry::Vacant(e) = parents.entry(next_fp) {
                    e.insert(fp);
                    queue.push_back((next, next_fp, d + 1));
                }
            },
        );
    }
    (generated, parents.len(), depth)
}

/// Several threads, level by level; each owns the fingerprints `fp % threads` names and reads
/// the others' maps only while no thread writes. Returns (generated, unique, depth).
fn level_bfs<M>(
    model: &M,
    properties: &[Property<M>],
    met: &mut [bool],
    threads: usize,
) -> (usize, usize, usize)
where
    M: Model + Sync,
    M::State: Hash + Send + Sync,
{
    /// A generated state, its fingerprint and its parent's.
    type Found<S> = (S, u64, u64);
    /// What a thread expanding its share returns: its verdicts, how many states it
    /// generated, and those of them new so far, by owner.
    type Expanded<S> = (Vec<bool>, usize, Vec<Vec<Found<S>>>);
    let owner = |fp: u64| (fp % threads as u64) as usize;
    let mut parents: Vec<Parents> = (0..threads).map(|_| Parents::default()).collect();
    let mut frontier = Vec::new();
    for s in model.init_states() {
        let fp = generators::check::memo::fingerprint(&s);
        if parents[owner(fp)].insert(fp, fp).is_none() {
            frontier.push((s, fp));
        }
    }
    let (mut generated, mut depth) = (frontier.len(), 0);
    while !frontier.is_empty() {
        depth += 1;
        let share = frontier.len().div_ceil(threads);
        // Each thread expands its share, sorting by owner what it generates that its owner has
        // not seen.
        let expanded: Vec<Expanded<M::State>> = std::thread::scope(|scope| {
            let workers: Vec<_> = frontier
                .chunks(share)
                .map(|chunk| {
                    let (seen, mut met) = (&parents, met.to_vec());
                    scope.spawn(move || {
                        let mut out: Vec<Vec<Found<M::State>>> =
                            (0..threads).map(|_| Vec::new()).collect();
                        let (mut actions, mut generated) = (Vec::new(), 0);
                        for (state, fp) in chunk {
                            generated += expand(
                                model,
                                properties,
                                &mut met,
                                state,
                                &mut actions,
                                |next, next_fp| {
                                    if !seen[owner(next_fp)].contains_key(&next_fp) {
                                        out[owner(next_fp)].push((next, next_fp, *fp));
                                    }
                                },
                            );
                        }
                        (met, generated, out)
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut by_owner: Vec<Vec<Vec<Found<M::State>>>> =
            (0..threads).map(|_| Vec::new()).collect();
        for (worker_met, worker_generated, out) in expanded {
            fold_verdicts(properties, met, |i| worker_met[i]);
            generated += worker_generated;
            for (o, found) in out.into_iter().enumerate() {
                by_owner[o].push(found);
            }
        }
        // Each owner keeps the states it had not seen: the next frontier.
        frontier = std::thread::scope(|scope| {
            let workers: Vec<_> = parents
                .iter_mut()
                .zip(by_owner)
                .map(|(parents, found)| {
                    scope.spawn(move || {
                        let mut new = Vec::new();
                        for (next, next_fp, parent) in found.into_iter().flatten() {
                            if let std::collections::hash_map::Entry::Vacant(e) =
                                parents.entry(next_fp)
                            {
                                e.insert(parent);
                                new.push((next, next_fp));
                            }
                        }
                        new
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap())
                .collect()
        });
    }
    (generated, parents.iter().map(HashMap::len).sum(), depth)
}

fn row(name: &str, r: &CheckReport) {
    print_row(
        name,
        (r.states_generated, r.unique_states),
        r.max_depth,
        r.wall.as_secs_f64(),
        match (r.complete, r.violated()) {
            (_, true) => "VIOLATED",
            (true, false) => "all held",
            (false, false) => "incomplete",
        },
    );
}

/// One row of the table: (generated, unique) states, depth, wall seconds, unique/s, verdict.
fn print_row(
    name: &str,
    (generated, unique): (usize, usize),
    depth: usize,
    wall: f64,
    verdict: &str,
) {
    println!(
        "{name:<24} {generated:>12} {unique:>12} {depth:>6} {wall:>9.2}s {:>14.0}  {verdict}",
        unique as f64 / wall.max(1e-9)
    );
}

fn fail(name: &str, e: &dyn std::fmt::Display) -> ! {
    eprintln!("{name}: {e}");
    std::process::exit(2);
}
