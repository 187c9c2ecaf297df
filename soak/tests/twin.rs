//! Soak on the twin tier, bounded by events: the churn goes through the kube-rs client into an
//! embedded twin with faults on; the clean operator holds and is torn down to zero leftovers,
//! and a mutated operator is caught.

use std::time::Duration;

use live::server::faults::FaultConfig;
use model::mutants::Mutant;
use scenario::RunDir;
use soak::series::read_series;
use soak::{SoakConfig, Verdict};
use tier::{ApiConfig, ApiTarget, Target, TWIN_PROPERTY};

fn twin_config(faults: Option<u64>) -> ApiConfig {
    ApiConfig {
        faults: faults.map(FaultConfig::with_seed),
        ..ApiConfig::default()
    }
}

fn twin(faults: Option<u64>, mutant: Option<Mutant>) -> ApiTarget {
    ApiTarget::start(twin_config(faults))
        .expect("a twin")
        .with_mutant(mutant)
}

fn soak_twin(
    events: u64,
    faults: Option<u64>,
    mutant: Option<Mutant>,
) -> (soak::SoakReport, RunDir, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = RunDir::create(tmp.path(), "run").unwrap();
    let config = SoakConfig {
        seed: 2,
        max_events: Some(events),
        duration: Duration::from_secs(24 * 3600),
        sample_every: Duration::ZERO,
        awareness_flips: false,
        shrink_budget: 4,
        ..SoakConfig::default()
    };
    let mut target = twin(faults, mutant);
    assert!(target
        .describe()
        .starts_with("tier: twin (embedded Kubernetes-API twin on 127.0.0.1"));
    let report = soak::run(
        &config,
        &mut target,
        &mut || Box::new(twin(faults, mutant)),
        &dir,
        &mut |_| {},
    )
    .expect("soak run");
    (report, dir, tmp)
}

#[test]
fn a_clean_twin_with_faults_holds_and_is_torn_down_to_nothing() {
    let (report, dir, _tmp) = soak_twin(12, Some(7), None);
    assert_eq!(report.verdict, Verdict::Held, "{:?}", report.failure);
    assert_eq!(report.events, 12);
    assert_eq!(report.leftovers, 0);
    let rows = read_series(&dir.path().join("series.csv")).unwrap();
    let last = rows.last().unwrap();
    assert_eq!(last.events_applied, 12);
    assert!(last.api_calls > 0, "the series counts the twin's requests");
    assert!(rows.iter().any(|r| r.objects_alive > 0));
}

#[test]
fn a_mutated_operator_is_caught_on_the_twin() {
    let (report, _dir, _tmp) = soak_twin(20, None, Some(Mutant::QuotaOffByOne));
    assert_eq!(report.verdict, Verdict::Failed);
    let f = report.failure.unwrap();
    assert_eq!(f.finding.property, TWIN_PROPERTY);
    assert!(
        f.finding.message.contains("nominalQuota"),
        "{}",
        f.finding.message
    );
    assert!(f.counterexample.is_file());
}
