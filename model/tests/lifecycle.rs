//! Workloads through the five gates on the walkthrough cluster: admission charges the ledger
//! (the views move), finishing releases it (the views come back), and bad requests get the
//! webhook's verdict, never a panic.

use model::derive::Derived;
use model::examples;
use model::lifecycle::{AdmissionState, Outcome};
use model::objects::ResourceView;
use model::workload::Workload;

const T4: &str = "gpustack--nvidia-tesla-t4-linux-amd64";
const A10G: &str = "gpustack--nvidia-a10g-linux-amd64";

use model::examples::workload;

fn views(d: &Derived, pool: &str) -> [ResourceView; 3] {
    let it = d.instance_types.iter().find(|i| i.name == pool).unwrap();
    let v = &it.status.views;
    [v.exclusive, v.shared, v.sliced]
}

fn rem(v: &[ResourceView; 3]) -> [i64; 3] {
    [v[0].remaining, v[1].remaining, v[2].remaining]
}

#[test]
fn whole_cards_charge_then_release_the_t4_pool() {
    let mut s = AdmissionState::new(examples::walkthrough());
    let before = views(&s.observe(), T4);
    let four = workload("four", T4, 4, &[("nvidia.com/gpu", "1")]);
    assert_eq!(s.submit(&four), Outcome::Admitted);
    // 4 pods × 1 card: credits 6.4M only fit the 4d flavor (node-t4-b); node-t4-a stays free.
    assert_eq!(rem(&views(&s.observe(), T4)), [1, 10, 100]);
    let one_more = workload("one-more", T4, 1, &[("nvidia.com/gpu", "1")]);
    assert_eq!(s.submit(&one_more), Outcome::Admitted);
    assert_eq!(rem(&views(&s.observe(), T4)), [0, 0, 0]);
    let too_many = workload("too-many", T4, 1, &[("nvidia.com/gpu", "1")]);
    match s.submit(&too_many) {
        Outcome::Pending { reason } => {
            assert!(reason.contains("insufficient unused quota"), "{reason}")
        }
        other => panic!("expected pending, got {other:?}"),
    }
    s.finish("default", "four").unwrap();
    s.finish("default", "one-more").unwrap();
    assert_eq!(views(&s.observe(), T4), before);
    assert!(s.reserved.is_empty());
}

#[test]
fn a_slice_is_folded_charged_and_released() {
    let mut s = AdmissionState::new(examples::walkthrough());
    let slice = workload(
        "slice",
        A10G,
        1,
        &[
            ("nvidia.com/gpu.sliced", "1"),
            ("nvidia.com/gpu.sliced.memory-percentage", "20"),
        ],
    );
    assert_eq!(s.submit(&slice), Outcome::Admitted);
    // Walkthrough: after a 20 % slice the A10G pool reads 0/0 0/0 80/80.
    let v = views(&s.observe(), A10G);
    assert_eq!(
        [
            v[0].once_max_request,
            v[0].remaining,
            v[1].remaining,
            v[2].once_max_request,
            v[2].remaining
        ],
        [0, 0, 0, 80, 80]
    );
    s.finish("default", "slice").unwrap();
    assert_eq!(rem(&views(&s.observe(), A10G)), [1, 10, 100]);
}

#[test]
fn gate_three_holds_what_quota_let_through() {
    // Two shares on two distinct cards of one node: the T4 pool's quota (8M) has room, but no
    // single node other than node-t4-b has two cards; after it is taken whole, Retry. On flavors
    // without a topology (the E2 era) Kueue places nothing, so gate 3 is the gate that says no.
    let mut cluster = examples::walkthrough();
    cluster.settings.era = model::cluster::Era::E2;
    let mut s = AdmissionState::new(cluster);
    let whole = workload("whole", T4, 4, &[("nvidia.com/gpu", "1")]);
    assert_eq!(s.submit(&whole), Outcome::Admitted);
    let shared = workload("shared", T4, 1, &[("nvidia.com/gpu.shared", "2")]);
    match s.submit(&shared) {
        Outcome::Retry { message } => assert!(!message.is_empty()),
        other => panic!("expected a gate-3 Retry, got {other:?}"),
    }
}

#[test]
fn gate_three_judges_only_the_node_kueue_picked() {
    // Five 60 % slices: Kueue's TAS puts all five on node-t4-b (its summed `.sliced.units` and
    // the fit label admit them), gate 3 judges that node's four cards, one slice each: Retry
    // naming the node.
    let mut s = AdmissionState::new(examples::walkthrough());
    let frag = workload(
        "frag",
        T4,
        5,
        &[
            ("nvidia.com/gpu.sliced", "1"),
            ("nvidia.com/gpu.sliced.memory-percentage", "60"),
        ],
    );
    match s.submit(&frag) {
        Outcome::Retry { message } => assert!(message.contains("\"node-t4-b\""), "{message}"),
        other => panic!("expected a node-scoped Retry, got {other:?}"),
    }
    assert!(s.reserved.is_empty(), "a Retry gives its reservation back");
}

#[test]
fn bad_requests_get_the_webhook_verdict_not_a_panic() {
    let mut s = AdmissionState::new(examples::walkthrough());
    for (name, requests) in [
        (
            "zero",
            vec![
                ("nvidia.com/gpu.sliced", "1"),
                ("nvidia.com/gpu.sliced.memory-percentage", "0"),
            ],
        ),
        (
            "over",
            vec![
                ("nvidia.com/gpu.sliced", "1"),
                ("nvidia.com/gpu.sliced.memory-percentage", "101"),
            ],
        ),
        ("garbage", vec![("nvidia.com/gpu", "two")]),
        (
            "both",
            vec![
                ("nvidia.com/gpu.sliced", "1"),
                ("nvidia.com/gpu.partitioned", "1"),
            ],
        ),
    ] {
        let w = workload(name, A10G, 1, &requests);
        match s.submit(&w) {
            Outcome::Rejected { message } => assert!(!message.is_empty(), "{name}"),
            other => panic!("{name}: expected a rejection, got {other:?}"),
        }
    }
    assert!(s.holds.is_empty());
    let nowhere = Workload {
        queue: "gpustack-fnv64-0000000000000000".into(),
        ..workload("lost", A10G, 1, &[("nvidia.com/gpu", "1")])
    };
    assert!(matches!(s.submit(&nowhere), Outcome::Pending { .. }));
}

#[test]
fn a_partition_lands_on_the_mig_card_and_moves_the_pt_view() {
    // Card 0 of node-t4-b switches to MIG (A100-40GB catalog); the others stay logical.
    let mut s = AdmissionState::new(examples::walkthrough_with_mig_card());
    let pt = |s: &AdmissionState| {
        let d = s.observe();
        let it = d.instance_types.iter().find(|i| i.name == T4).unwrap();
        it.status.views.partitioned.view
    };
    let before = pt(&s);
    assert_eq!((before.once_max_request, before.capacity), (1, 7));
    // 2g.10gb folds to ⌊9856 MiB · D / the T4 pool's card VRAM⌋ units, within one card's D (a
    // 3g.20gb folds to more than D against a T4's VRAM: no node advertises that many
    // `.partitioned.units`, so Kueue's TAS could never place it).
    let w = workload(
        "mig",
        T4,
        1,
        &[
            ("nvidia.com/gpu.partitioned", "1"),
            ("nvidia.com/gpu.partitioned.mig-2g.10gb", "1"),
        ],
    );
    assert_eq!(s.submit(&w), Outcome::Admitted);
    let hold = s.holds.values().next().unwrap();
    assert_eq!(hold.charges.len(), 1);
    assert_eq!(hold.charges[0].card, "GPU-tesla-t4-0");
    assert!(pt(&s).remaining < before.remaining);
    s.finish("default", "mig").unwrap();
    assert_eq!(pt(&s), before);
}

/// The walkthrough with extra T4 nodes: `name` copies node-t4-a (1 card) or node-t4-b
/// (4 cards) under its own name and hostname, so it joins that node's flavor.
fn with_copy(
    mut cluster: model::cluster::Cluster,
    of: &str,
    name: &str,
) -> model::cluster::Cluster {
    let mut node = cluster.nodes.iter().find(|n| n.name == of).unwrap().clone();
    node.name = name.into();
    node.labels
        .insert(model::labels::HOSTNAME.into(), name.into());
    cluster.nodes.push(node);
    cluster
}

fn hold_of<'a>(s: &'a AdmissionState, name: &str) -> &'a model::lifecycle::Hold {
    s.holds.get(&format!("default/{name}")).unwrap()
}

#[test]
fn a_pod_above_every_node_but_within_the_pool_stays_pending() {
    // Two 4-card nodes share the 4d flavor (12.8M credits): one Pod of 5 whole cards fits the
    // quota (8M) but no single node; Kueue's TAS places it nowhere.
    let mut s = AdmissionState::new(with_copy(examples::walkthrough(), "node-t4-b", "node-t4-c"));
    let five = workload("five", T4, 1, &[("nvidia.com/gpu", "5")]);
    match s.submit(&five) {
        Outcome::Pending { reason } => assert!(
            reason.contains("doesn't allow to fit any of 1 pod(s). Total nodes: 2; excluded: resource \"nvidia.com/gpu\": 2"),
            "{reason}"
        ),
        other => panic!("expected pending, got {other:?}"),
    }
    assert!(s.reserved.is_empty() && s.holds.is_empty());
    // Two Pods of 3 cards fit the same quota: one on each node.
    let two = workload("two", T4, 2, &[("nvidia.com/gpu", "3")]);
    assert_eq!(s.submit(&two), Outcome::Admitted);
    let nodes: std::collections::BTreeMap<&str, usize> =
        hold_of(&s, "two")
            .charges
            .iter()
            .fold(Default::default(), |mut m, c| {
                *m.entry(c.node.as_str()).or_default() += 1;
                m
            });
    assert_eq!(nodes, [("node-t4-b", 3), ("node-t4-c", 3)].into());
}

#[test]
fn the_flavor_whose_nodes_host_the_pod_is_picked_over_an_earlier_one_with_quota() {
    // Three 1-card nodes give the 1d flavor 4.8M credits: a Pod of 2 cards (3.2M) fits its
    // quota but none of its nodes, so Kueue tries the next flavor (4d, node-t4-b).
    let cluster = with_copy(
        with_copy(examples::walkthrough(), "node-t4-a", "node-t4-a2"),
        "node-t4-a",
        "node-t4-a3",
    );
    let mut s = AdmissionState::new(cluster);
    let pair = workload("pair", T4, 1, &[("nvidia.com/gpu", "2")]);
    assert_eq!(s.submit(&pair), Outcome::Admitted);
    let hold = hold_of(&s, "pair");
    assert!(
        hold.quota.iter().all(|q| q.flavor.contains("-4d")),
        "{:?}",
        hold.quota
    );
    assert!(
        hold.charges.iter().all(|c| c.node == "node-t4-b"),
        "{hold:?}"
    );
}

#[test]
fn cpu_beyond_every_node_stays_pending_and_cpu_picks_the_flavor() {
    let mut s = AdmissionState::new(examples::walkthrough());
    // node-t4-a has 4 cores, node-t4-b 48: 8 cores go to the 4d flavor's node.
    let eight = workload("eight", T4, 1, &[("nvidia.com/gpu", "1"), ("cpu", "8")]);
    assert_eq!(s.submit(&eight), Outcome::Admitted);
    assert!(hold_of(&s, "eight")
        .charges
        .iter()
        .all(|c| c.node == "node-t4-b"));
    // 64 cores fit no node of the pool.
    let huge = workload("huge", T4, 1, &[("nvidia.com/gpu", "1"), ("cpu", "64")]);
    match s.submit(&huge) {
        Outcome::Pending { reason } => assert!(
            reason.matches("excluded: resource \"cpu\": 1").count() == 2,
            "{reason}"
        ),
        other => panic!("expected pending, got {other:?}"),
    }
}

#[test]
fn a_pinned_slice_no_card_can_hold_stays_pending_not_retry() {
    // admission.md §11.4: every T4 card keeps 640,000 units free (a 60 % slice on each); a
    // 50 % slice (800,000) is pinned `sliced-max-free-units… Gt 799999`, which no node's label
    // meets, although node-t4-b's summed `.sliced.units` (2.56M) would hold it.
    let mut s = AdmissionState::new(examples::walkthrough());
    let slice = |name: &str, n: u32, pct: &str| {
        workload(
            name,
            T4,
            n,
            &[
                ("nvidia.com/gpu.sliced", "1"),
                ("nvidia.com/gpu.sliced.memory-percentage", pct),
            ],
        )
    };
    assert_eq!(s.submit(&slice("a", 1, "60")), Outcome::Admitted);
    assert_eq!(s.submit(&slice("b", 4, "60")), Outcome::Admitted);
    assert!(hold_of(&s, "b")
        .charges
        .iter()
        .all(|c| c.node == "node-t4-b"));
    match s.submit(&slice("half", 1, "50")) {
        Outcome::Pending { reason } => {
            assert!(reason.contains("excluded: affinity: 1"), "{reason}")
        }
        other => panic!("expected pending, got {other:?}"),
    }
}
