//! Soak runs bounded by events (never by time): a clean model holds and writes its series,
//! checkpoint and history; a mutated model is caught, shrunk and replayable.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use model::events::World;
use model::mutants::Mutant;
use scenario::RunDir;
use soak::series::{append_history, read_history, read_series};
use soak::stream::EventStream;
use soak::{judge_stretch, SoakConfig, Verdict};
use tier::ModelTarget;

fn config(seed: u64, events: u64) -> SoakConfig {
    SoakConfig {
        seed,
        max_events: Some(events),
        duration: Duration::from_secs(24 * 3600),
        sample_every: Duration::ZERO,
        checkpoint_every: 25,
        ..SoakConfig::default()
    }
}

fn soak_run(
    config: &SoakConfig,
    mutant: Option<Mutant>,
    base: &Path,
) -> (soak::SoakReport, RunDir) {
    let dir = RunDir::create(base, "run").expect("run directory");
    let mut target = ModelTarget::new(mutant);
    let report = soak::run(
        config,
        &mut target,
        &mut || Box::new(ModelTarget::new(mutant)),
        &dir,
        &mut |_| {},
    )
    .expect("soak run");
    (report, dir)
}

#[test]
fn a_clean_soak_holds_and_writes_series_and_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let (report, dir) = soak_run(&config(2, 120), None, tmp.path());
    assert_eq!(report.verdict, Verdict::Held, "{:?}", report.failure);
    assert_eq!(report.events, 120);
    assert_eq!(report.leftovers, 0);
    let rows = read_series(&dir.path().join("series.csv")).unwrap();
    // One row per event (sampling every event) and one at the end.
    assert_eq!(rows.len() as u64, report.samples);
    assert!(rows.len() >= 120, "{} rows", rows.len());
    assert!(rows
        .windows(2)
        .all(|w| w[0].events_applied <= w[1].events_applied));
    assert_eq!(rows.last().unwrap().events_applied, 120);
    assert!(rows
        .iter()
        .all(|r| r.objects_alive > 0 && r.divergences == 0));
    assert!(report.checkpoints >= 1, "no checkpoint was exact");
    // One plot per series column, each with one marker per row.
    let svg = std::fs::read_to_string(dir.path().join("plots/events.svg")).unwrap();
    assert_eq!(svg.matches("<circle").count(), rows.len());
    assert!(svg.contains("Events applied"));
    for plot in ["divergences", "latency", "api-calls", "objects", "memory"] {
        assert!(
            dir.path().join(format!("plots/{plot}.svg")).is_file(),
            "{plot}"
        );
    }
    let checkpoint = scenario::load(&dir.path().join("checkpoint.yaml")).unwrap();
    assert!(checkpoint.published.is_some());
    assert_eq!(
        judge_stretch(&checkpoint, &mut ModelTarget::new(None)).unwrap(),
        None
    );
}

#[test]
fn a_mutated_model_is_caught_shrunk_and_replayable() {
    let tmp = tempfile::tempdir().unwrap();
    let m = Mutant::LateNamespaceNoLocalQueue;
    let (report, _) = soak_run(&config(1, 300), Some(m), tmp.path());
    assert_eq!(report.verdict, Verdict::Failed);
    let f = report.failure.expect("a failure");
    assert_eq!(f.finding.property, format!("mutant-{m}"));
    assert!(f.shrunk_events <= f.stretch_events);
    assert!(
        f.shrunk_events >= 1,
        "the mutant needs a namespace created later"
    );
    let s = scenario::load(&f.counterexample).unwrap();
    let replayed = oracle::replay(&s);
    assert_eq!(replayed.recorded, vec![(format!("mutant-{m}"), true)]);
}

#[test]
fn a_soak_asked_to_stop_applies_nothing_and_tears_down() {
    let tmp = tempfile::tempdir().unwrap();
    let c = config(4, 50);
    c.stop.store(true, Ordering::Relaxed);
    let (report, dir) = soak_run(&c, None, tmp.path());
    assert_eq!(report.events, 0);
    assert_eq!(report.verdict, Verdict::Held);
    assert_eq!(
        read_series(&dir.path().join("series.csv")).unwrap().len(),
        1
    );
}

#[test]
fn the_stream_is_the_same_for_the_same_seed() {
    let initial = fuzz::scenario_for(2, &generators::ShapeConfig::default()).unwrap();
    let draw = || {
        let mut world = World::new(initial.cluster.clone());
        let mut stream = EventStream::new(2, generators::ShapeConfig::default());
        (0..200)
            .map(|_| {
                let e = stream.next(&world).unwrap();
                world.apply(&e);
                e
            })
            .collect::<Vec<_>>()
    };
    let first = draw();
    assert_eq!(first, draw());
    assert!(first
        .iter()
        .any(|e| matches!(e, model::events::Event::Finish { .. })));
}

/// Seed 3 once reported `[M3] structure` after an awareness flip off: the per-CPU
/// InstanceType created while awareness was on kept a queue that, like every CPU queue with
/// awareness off, selects all CPU flavors (chain.md §7.2–7.3). The property now judges only
/// aware queues.
#[test]
fn a_stale_aware_pool_after_awareness_turns_off_is_not_a_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let (report, _) = soak_run(&config(3, 120), None, tmp.path());
    assert_eq!(report.verdict, Verdict::Held, "{:?}", report.failure);
}

#[test]
fn the_history_gets_one_row_per_run() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(".verify/soak-history.csv");
    let (report, dir) = soak_run(&config(5, 10), None, tmp.path());
    append_history(&path, &report.history_row(dir.id(), "model", 5)).unwrap();
    append_history(&path, &report.history_row("second", "model", 5)).unwrap();
    let rows = read_history(&path).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].events, 10);
    assert_eq!(rows[1].run, "second");
    assert_eq!(rows[0].verdict, "held");
}
