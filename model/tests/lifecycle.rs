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
    // single node other than node-t4-b has two cards; after it is taken whole, Retry.
    let mut s = AdmissionState::new(examples::walkthrough());
    let whole = workload("whole", T4, 4, &[("nvidia.com/gpu", "1")]);
    assert_eq!(s.submit(&whole), Outcome::Admitted);
    let shared = workload("shared", T4, 1, &[("nvidia.com/gpu.shared", "2")]);
    match s.submit(&shared) {
        Outcome::Retry { message } => assert!(!message.is_empty()),
        other => panic!("expected a gate-3 Retry, got {other:?}"),
    }
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
    use model::devices::Card;
    use model::ledger::{catalogs, seed};
    let mut cluster = examples::walkthrough();
    let node = cluster
        .nodes
        .iter_mut()
        .find(|n| n.name == "node-t4-b")
        .unwrap();
    // Card 0 of node-t4-b switches to MIG (A100-40GB catalog); the others stay logical.
    let group = &mut node.devices.as_mut().unwrap().groups[0];
    let mig = catalogs::a100_40gb();
    group.cards[0] = Card {
        ledger: Some(seed(mig.clone()).row),
        capability: Some(mig),
        ..group.cards[0].clone()
    };
    let mut s = AdmissionState::new(cluster);
    let pt = |s: &AdmissionState| {
        let d = s.observe();
        let it = d.instance_types.iter().find(|i| i.name == T4).unwrap();
        it.status.views.partitioned.view
    };
    let before = pt(&s);
    assert_eq!((before.once_max_request, before.capacity), (1, 7));
    let w = workload(
        "mig",
        T4,
        1,
        &[
            ("nvidia.com/gpu.partitioned", "1"),
            ("nvidia.com/gpu.partitioned.mig-3g.20gb", "1"),
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
