//! Runs the model over ../shared/conformance (the operator's own unit-test vectors).
//! Skips, saying why, when that folder is absent.

use outcome::{Concluded, Outcome};
use std::path::PathBuf;

/// Vector files whose every vector the model must reproduce ([M1]).
const MUST_PASS: &[&str] = &[
    "four_view",
    "cpu_view",
    "clusterqueue_quota",
    "flavor_name_count",
    "pool_labels",
    "pool_devices_selector",
    "nodefeature_labels",
    "instancetype_detail",
    "instancetype_entrance",
    "instancetype_lifecycle",
    "instancetype_stop_policy",
    "instancetype_webhook_validation",
    "runtime_versions",
    "partition_profile_publish",
    "device_allocation_mode",
    "populations",
];

fn shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    dir.is_dir().then_some(dir)
}

#[test]
fn every_required_vector_file_passes_completely() {
    let Some(dir) = shared_dir() else {
        println!("skipped: ../shared/conformance is absent beside the checkout");
        return;
    };
    let report = conformance::run_dir(&dir).expect("conformance folder readable");
    println!("{}", report.render());
    assert_eq!(report.malformed(), 0, "malformed vectors or files");
    assert_eq!(report.failed(), 0, "failing vectors");
    for stem in MUST_PASS {
        let file = report
            .files
            .iter()
            .find(|f| f.file.file_stem().is_some_and(|s| s == *stem))
            .unwrap_or_else(|| panic!("{stem}.json missing from {}", dir.display()));
        assert!(file.error.is_none(), "{stem}: {:?}", file.error);
        assert_eq!(
            file.passed(),
            file.results.len(),
            "{stem}.json: every vector must be run and pass"
        );
    }
}

#[test]
fn a_malformed_file_is_reported_not_panicked_on() {
    let dir = std::env::temp_dir().join(format!("verify-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cpu_view.json"), r#"[{"name": "x", "source": "a#TestClusterQueueCPUResource", "input": {}, "expected": {}}]"#).unwrap();
    std::fs::write(dir.join("four_view.json"), "{not json").unwrap();
    let report = conformance::run_dir(&dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(report.outcome(), Outcome::Usage);
    let text = report.render();
    assert!(text.contains("four_view.json: MALFORMED"), "{text}");
    assert!(text.contains("vector 0 (x), field `flavors`"), "{text}");
}
