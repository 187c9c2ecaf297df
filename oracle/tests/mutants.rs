//! `compare_runs(s, s + mutant)` finds every mutant of the catalog on a small hand-built
//! scenario (≤ 3 nodes) and reports the first step at which the runs part.

mod common;

use common::*;
use model::events::Event;
use model::mutants::Mutant;
use model::scenario::Scenario;
use oracle::{compare_runs, render_table, ObjectKind};

/// A scenario that shows `m`, and the step at which it first shows.
fn witness(m: Mutant) -> (Scenario, usize) {
    let one_a10 = || cluster(vec![gpu_node("a10", AMD_CPU, "amd64", "a10", 1)]);
    match m {
        // The a10 pool is clean until an a100 node joins (step 1).
        Mutant::SubstringPoolMatch => (
            scenario(
                "a10-then-a100",
                one_a10(),
                vec![Event::NodeJoin {
                    node: gpu_node("a100", AMD_CPU, "amd64", "a100", 1),
                }],
            ),
            1,
        ),
        Mutant::OsArchIgnored => (
            scenario(
                "two-arches",
                cluster(vec![
                    gpu_node("x86", AMD_CPU, "amd64", "l40", 1),
                    gpu_node("arm", AMD_CPU, "arm64", "l40", 1),
                ]),
                vec![],
            ),
            0,
        ),
        Mutant::CpuGroupIgnored => {
            let mut c = cluster(vec![
                gpu_node("amd", AMD_CPU, "amd64", "h20", 1),
                gpu_node("intel", INTEL_CPU, "amd64", "h20", 1),
            ]);
            c.settings.aware_cpu_manufacturer = true;
            (scenario("aware-two-vendors", c, vec![]), 0)
        }
        Mutant::OneTokenPool => (scenario("mig", cluster(vec![mig_node("mig")]), vec![]), 0),
        Mutant::CohortSet | Mutant::QuotaOffByOne | Mutant::SharedOnceMaxInShares => {
            (scenario("one-a10", one_a10(), vec![]), 0)
        }
        Mutant::EntranceWrongHash => (scenario("one-a10", one_a10(), vec![]), 0),
        // Clean at start and after the first namespace event; a namespace created later
        // gets no LocalQueues (step 2).
        Mutant::LateNamespaceNoLocalQueue => (
            scenario(
                "late-namespace",
                one_a10(),
                vec![
                    Event::NamespaceDelete {
                        name: "kube-system".into(),
                    },
                    Event::NamespaceCreate {
                        name: "late".into(),
                    },
                ],
            ),
            2,
        ),
    }
}

#[test]
fn every_mutant_diverges_at_its_first_step() {
    for m in Mutant::ALL {
        let (s, step) = witness(m);
        assert!(s.cluster.nodes.len() <= 3, "{m}: small scenarios only");
        let mut mutated = s.clone();
        mutated.cluster.settings.mutant = Some(m);
        let d = compare_runs(&s, &mutated).unwrap_or_else(|| panic!("{m}: no divergence"));
        assert_eq!(d.step, step, "{m}:\n{}", render_table(&d.differences));
        assert!(!d.differences.is_empty(), "{m}");
    }
}

#[test]
fn the_divergence_names_the_object_and_field_the_mutant_touches() {
    let touched = |m: Mutant| {
        let (s, _) = witness(m);
        let mut mutated = s.clone();
        mutated.cluster.settings.mutant = Some(m);
        compare_runs(&s, &mutated)
            .map(|d| d.differences)
            .unwrap_or_default()
    };
    let cohort = touched(Mutant::CohortSet);
    assert!(
        cohort
            .iter()
            .any(|d| d.kind == ObjectKind::ClusterQueue && d.field == "cohort"),
        "{}",
        render_table(&cohort)
    );
    let quota = touched(Mutant::QuotaOffByOne);
    assert!(
        quota.iter().any(|d| d.field.contains("nominal_quota")),
        "{}",
        render_table(&quota)
    );
    let late = touched(Mutant::LateNamespaceNoLocalQueue);
    assert!(
        late.iter().all(|d| d.kind == ObjectKind::LocalQueue
            && d.name.starts_with("late/")
            && d.observed.is_none()),
        "{}",
        render_table(&late)
    );
    let shares = touched(Mutant::SharedOnceMaxInShares);
    assert!(
        shares
            .iter()
            .any(|d| d.field == "status.views.shared.once_max_request"),
        "{}",
        render_table(&shares)
    );
}

#[test]
fn an_unmutated_run_never_diverges_from_itself() {
    for m in Mutant::ALL {
        let (s, _) = witness(m);
        assert_eq!(compare_runs(&s, &s), None, "{m}");
    }
    let s = walkthrough_with_events();
    assert_eq!(compare_runs(&s, &s), None);
}
