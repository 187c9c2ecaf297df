//! Every property holds on the walkthrough and on small hand-built scenarios, and fails on a
//! deliberately broken input (a mutant, a tampered chain or a fabricated verdict).

mod common;

use common::*;
use model::cluster::Cluster;
use model::derive::{derive_after, Derived};
use model::devices::Mode;
use model::events::{Effect, Event};
use model::lifecycle::Outcome;
use model::mutants::Mutant;
use model::scenario::Scenario;
use oracle::properties::{self, *};

fn hand_built() -> Vec<Scenario> {
    let mut aware = cluster(vec![
        gpu_node("amd-1", AMD_CPU, "amd64", "a10", 2),
        gpu_node("intel-1", INTEL_CPU, "amd64", "a10", 1),
    ]);
    aware.settings.aware_cpu_manufacturer = true;
    vec![
        scenario("walkthrough", model::examples::walkthrough(), vec![]),
        walkthrough_with_events(),
        scenario(
            "nested-products",
            cluster(vec![
                gpu_node("a10", AMD_CPU, "amd64", "a10", 2),
                gpu_node("a100", AMD_CPU, "amd64", "a100", 1),
            ]),
            vec![],
        ),
        scenario(
            "two-arches",
            cluster(vec![
                gpu_node("x86", AMD_CPU, "amd64", "l40", 1),
                gpu_node("arm", AMD_CPU, "arm64", "l40", 1),
            ]),
            vec![],
        ),
        scenario("aware-two-vendors", aware, vec![]),
        scenario(
            "mig",
            cluster(vec![mig_node("mig-1")]),
            vec![submit(workload(
                "part",
                "gpustack--nvidia-a100-sxm4-40gb-linux-amd64",
                1,
                &[
                    ("nvidia.com/gpu.partitioned", "1"),
                    ("nvidia.com/gpu.partitioned.mig-1g.5gb", "1"),
                ],
            ))],
        ),
        scenario("empty", cluster(vec![]), vec![]),
    ]
}

fn with_mutant(s: &Scenario, m: Mutant) -> Scenario {
    let mut s = s.clone();
    s.cluster.settings.mutant = Some(m);
    s
}

fn named(name: &str) -> Scenario {
    hand_built()
        .into_iter()
        .find(|s| s.name == name)
        .expect("a hand-built scenario")
}

fn fails(r: Result<(), Violation>, property: &str) -> String {
    match r {
        Err(v) => {
            assert_eq!(v.property, property, "{v}");
            assert!(v.message.contains("expected"), "{v}");
            // the record beside the words: the deciding check and a row per differing field
            assert!(!v.check.is_empty(), "{v}");
            assert!(!v.differences.is_empty(), "{}: no differences", v.check);
            assert!(
                v.differences
                    .iter()
                    .all(|d| d.expected.is_some() || d.observed.is_some()),
                "{v:?}"
            );
            v.message
        }
        Ok(()) => panic!("{property} should fail"),
    }
}

#[test]
fn every_property_holds_on_the_walkthrough_and_the_hand_built_scenarios() {
    for s in hand_built() {
        let v = check_all(&s);
        assert!(v.is_empty(), "{}: {v:#?}", s.name);
    }
}

#[test]
fn each_property_function_holds_alone_on_the_scenario_with_events() {
    let s = walkthrough_with_events();
    for p in [
        invariance,
        pool_isolation,
        structure,
        accounting,
        admission,
        idempotence,
    ] {
        p(&s).unwrap();
    }
    assert_eq!(properties::PROPERTIES.len(), 6);
}

#[test]
fn structure_fails_on_a_shared_cohort_a_wrong_entrance_and_a_late_namespace() {
    let base = named("walkthrough");
    let m = fails(structure(&with_mutant(&base, Mutant::CohortSet)), STRUCTURE);
    assert!(m.contains("expected no cohort, got `gpustack`"), "{m}");
    let m = fails(
        structure(&with_mutant(&base, Mutant::EntranceWrongHash)),
        STRUCTURE,
    );
    assert!(m.contains("entrance"), "{m}");
    let late = scenario(
        "late",
        model::examples::walkthrough(),
        vec![Event::NamespaceCreate {
            name: "late".into(),
        }],
    );
    structure(&late).unwrap();
    let m = fails(
        structure(&with_mutant(&late, Mutant::LateNamespaceNoLocalQueue)),
        STRUCTURE,
    );
    assert!(m.starts_with("after the events"), "{m}");
    assert!(
        m.contains("namespace late: expected one LocalQueue, got 0"),
        "{m}"
    );
}

#[test]
fn accounting_fails_on_short_quota_one_token_pool_and_shares_as_once_max() {
    let base = named("walkthrough");
    let m = fails(
        accounting(&with_mutant(&base, Mutant::QuotaOffByOne)),
        ACCOUNTING,
    );
    assert!(m.contains("nominal quota"), "{m}");
    let mig = named("mig");
    let m = fails(
        accounting(&with_mutant(&mig, Mutant::OneTokenPool)),
        ACCOUNTING,
    );
    assert!(m.contains("sliced capacity: expected 100"), "{m}");
    let m = fails(
        accounting(&with_mutant(&base, Mutant::SharedOnceMaxInShares)),
        ACCOUNTING,
    );
    assert!(m.contains("shared onceMax"), "{m}");
}

#[test]
fn accounting_honours_the_earlier_shared_once_max_contract() {
    let mut s = named("walkthrough");
    s.cluster.settings.shared_once_max = model::SharedOnceMax::Shares;
    accounting(&s).unwrap();
}

#[test]
fn pool_isolation_fails_on_prefix_matching_ignored_os_arch_and_ignored_cpu_groups() {
    let m = fails(
        pool_isolation(&with_mutant(
            &named("nested-products"),
            Mutant::SubstringPoolMatch,
        )),
        POOL_ISOLATION,
    );
    assert!(m.contains("nvidia-a1000"), "{m}");
    // Also on the walkthrough alone: its a10g pool takes the intruder `nvidia-a10g0`.
    fails(
        pool_isolation(&with_mutant(
            &named("walkthrough"),
            Mutant::SubstringPoolMatch,
        )),
        POOL_ISOLATION,
    );
    let m = fails(
        pool_isolation(&with_mutant(&named("two-arches"), Mutant::OsArchIgnored)),
        POOL_ISOLATION,
    );
    assert!(m.contains("kubernetes.io/arch"), "{m}");
    let m = fails(
        pool_isolation(&with_mutant(
            &named("aware-two-vendors"),
            Mutant::CpuGroupIgnored,
        )),
        POOL_ISOLATION,
    );
    assert!(m.contains("CPU group"), "{m}");
}

#[test]
fn the_intruder_nests_with_a_present_key() {
    let (_, key) = with_intruder(&named("nested-products").cluster);
    assert_eq!(key, "nvidia-a1000");
    let (_, key) = with_intruder(&cluster(vec![gpu_node("n", AMD_CPU, "amd64", "l40s", 1)]));
    assert_eq!(key, "nvidia-l40");
    let (_, key) = with_intruder(&cluster(vec![gpu_node("n", AMD_CPU, "amd64", "h20", 1)]));
    assert_eq!(key, "nvidia-h200");
    let (c, key) = with_intruder(&cluster(vec![]));
    assert_eq!((key.as_str(), c.nodes.len()), ("nvidia-a10", 1));
}

/// A chain that publishes each flavor's contributors in cluster order, not sorted.
fn order_dependent(cluster: &Cluster, previous: Option<&Derived>) -> Derived {
    let mut d = derive_after(cluster, previous);
    let position = |n: &model::labels::Text| cluster.nodes.iter().position(|x| x.name == *n);
    for rf in &mut d.resource_flavors {
        rf.nodes.sort_by_key(position);
    }
    d
}

/// Two T4 nodes listed out of name order.
fn two_t4() -> Scenario {
    scenario(
        "t4",
        cluster(vec![
            gpu_node("b", AMD_CPU, "amd64", "tesla-t4", 1),
            gpu_node("a", AMD_CPU, "amd64", "tesla-t4", 1),
        ]),
        vec![],
    )
}

/// A chain whose every re-derivation from a quiescence adds one to a view: not a fixpoint.
fn drifting(cluster: &Cluster, previous: Option<&Derived>) -> Derived {
    let mut d = derive_after(cluster, previous);
    if previous.is_some() {
        for it in &mut d.instance_types {
            it.status.views.exclusive.remaining += 1;
        }
    }
    d
}

/// A chain whose node labels carry the node's name reversed (a name leaking into a value).
fn name_leaking(cluster: &Cluster, previous: Option<&Derived>) -> Derived {
    let mut d = derive_after(cluster, previous);
    for n in &mut d.nodes {
        let r: String = n.name.chars().rev().collect();
        n.labels.insert("example.com/leak".into(), r.into());
    }
    d
}

#[test]
fn invariance_fails_on_an_order_dependent_or_name_dependent_chain() {
    let s = named("walkthrough");
    invariance_with(&s, &derive_after).unwrap();
    let two_t4 = two_t4();
    let m = fails(invariance_with(&two_t4, &order_dependent), INVARIANCE);
    assert!(m.starts_with("nodes listed in reverse order"), "{m}");
    let m = fails(invariance_with(&s, &name_leaking), INVARIANCE);
    assert!(m.starts_with("nodes renamed and mapped back"), "{m}");
}

#[test]
fn idempotence_fails_on_a_chain_that_does_not_settle() {
    let s = named("walkthrough");
    let m = fails(idempotence_with(&s, &drifting), IDEMPOTENCE);
    assert!(m.contains("own quiescence"), "{m}");
    let calls = std::cell::Cell::new(0);
    let counting = |c: &Cluster, previous: Option<&Derived>| {
        calls.set(calls.get() + 1);
        let mut d = derive_after(c, previous);
        d.local_queues.truncate(calls.get());
        d
    };
    let m = fails(idempotence_with(&s, &counting), IDEMPOTENCE);
    assert!(m.contains("twice"), "{m}");
}

/// The three checks a model check asks of every shape, one after another, each deriving the
/// cluster itself.
fn shape_one_by_one(s: &Scenario, chain: Chain<'_>) -> Result<(), Violation> {
    invariance_with(s, chain)?;
    pool_isolation_with(s, chain)?;
    idempotence_with(s, chain)
}

#[test]
fn the_shape_checks_find_what_they_find_alone_from_one_base_derivation() {
    let walkthrough = named("walkthrough");
    let two_t4 = two_t4();
    let isolation_broken = with_mutant(&walkthrough, Mutant::SubstringPoolMatch);
    let cases: [(&Scenario, Chain<'_>, Option<&str>); 5] = [
        (&walkthrough, &derive_after, None),
        (&two_t4, &order_dependent, Some(INVARIANCE)),
        (&walkthrough, &name_leaking, Some(INVARIANCE)),
        (&isolation_broken, &derive_after, Some(POOL_ISOLATION)),
        (&walkthrough, &drifting, Some(IDEMPOTENCE)),
    ];
    for (s, chain, broken) in cases {
        let shared = shape_with(s, chain);
        assert_eq!(shared.as_ref().err().map(|v| v.property), broken);
        assert_eq!(shared, shape_one_by_one(s, chain));
    }
    // Two derivations of the cluster as it stands fewer than the checks one by one.
    let calls = std::cell::Cell::new(0);
    let counting = |c: &Cluster, previous: Option<&Derived>| {
        calls.set(calls.get() + 1);
        derive_after(c, previous)
    };
    shape_one_by_one(&walkthrough, &counting).unwrap();
    let alone = calls.replace(0);
    shape_with(&walkthrough, &counting).unwrap();
    assert_eq!(calls.get() + 2, alone);
}

#[test]
fn admission_fails_on_an_unplaceable_verdict_and_a_lost_admission() {
    let unplaceable = Effect::Judged {
        outcome: Outcome::Unplaceable {
            reason: "card gone".into(),
        },
    };
    let m = fails(placeable(3, &unplaceable), ADMISSION);
    assert!(m.contains("event 3"), "{m}");
    let admitted = Effect::Judged {
        outcome: Outcome::Admitted,
    };
    let retry = Effect::Judged {
        outcome: Outcome::Retry {
            message: "no card".into(),
        },
    };
    let pending = Effect::Judged {
        outcome: Outcome::Pending {
            reason: "quota".into(),
        },
    };
    fails(
        monotone_verdict(1, "default/y", &admitted, &retry, false),
        ADMISSION,
    );
    fails(
        monotone_verdict(1, "default/y", &admitted, &pending, true),
        ADMISSION,
    );
    monotone_verdict(1, "default/y", &admitted, &retry, true).unwrap();
    monotone_verdict(1, "default/y", &admitted, &admitted, false).unwrap();
    monotone_verdict(1, "default/y", &retry, &pending, false).unwrap();
}

#[test]
fn admission_reports_an_unplaceable_verdict_on_a_lying_ledger() {
    // A card whose ledger row claims the whole card free while its mode says Exclusive: gate 3
    // reads it free, the charge then refuses it. Found by the property, not by the verdict.
    let mut c = cluster(vec![gpu_node("n", AMD_CPU, "amd64", "a10", 1)]);
    if let Some(l) = c.nodes[0]
        .devices
        .as_mut()
        .and_then(|d| d.groups[0].cards[0].ledger.as_mut())
    {
        l.mode = Mode::Exclusive;
    }
    let s = scenario(
        "lying-ledger",
        c,
        vec![submit(workload(
            "w",
            "gpustack--nvidia-a10-linux-amd64",
            1,
            &[("nvidia.com/gpu", "1")],
        ))],
    );
    let m = fails(admission(&s), ADMISSION);
    assert!(m.contains("Unplaceable"), "{m}");
}

#[test]
fn freeing_an_earlier_flavor_may_turn_admission_into_retry_and_is_excused() {
    // T4 pool: flavor 1d (one card) before 4d. `hold` takes the 1d card whole, so `pair` (two
    // shares on two cards) goes to 4d. With `hold` finished first, Kueue stops at 1d and gate
    // 3 says Retry: not a monotonicity failure, the freed quota sat on an earlier flavor.
    let s = scenario(
        "try-next-flavor",
        model::examples::walkthrough(),
        vec![
            submit(workload("hold", T4, 1, &[("nvidia.com/gpu", "1")])),
            submit(workload("pair", T4, 1, &[("nvidia.com/gpu.shared", "2")])),
        ],
    );
    admission(&s).unwrap();
}
