//! Picking a cluster's pool by a case's shape (`probe::pools_of_shape`, cases.md §1 "Does this
//! pool back the node?"), on the walkthrough cluster as an embedded twin's operator derives it
//! and the live tier lists it (`live::audit::Snapshot::list`).

use cases::index::PoolShape;
use cases::probe::{pool_rows, pools_of_shape, PoolChoice, POOL_CHECK};
use cases::Status;
use live::client::Client;
use live::operator::spawn_twin_with_operator;
use live::server::store::{Store, StoreConfig};

fn walkthrough_snapshot() -> live::audit::Snapshot<'static> {
    let cluster = model::examples::walkthrough();
    let mut store = Store::new(StoreConfig::default());
    live::server::schemas::install_validators(&mut store);
    live::operator::write_mock(&mut store, &cluster).expect("mocks");
    // the joint AdmissionCheck, Active as an installed operator keeps it (the audit reads it)
    live::operator::admission::write_joint_check(&mut store, true).expect("the joint check");
    let (twin, operator) =
        spawn_twin_with_operator(None, store, cluster.settings.clone()).expect("a twin");
    let yaml = live::server::kubeconfig::kubeconfig_yaml(twin.url(), "pools");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let snapshot = runtime.block_on(async {
        let client = Client::from_kubeconfig_yaml(&yaml, "pools")
            .await
            .expect("connects");
        // the operator has derived once its InstanceTypes are there (bounded, not timed)
        for _ in 0..500 {
            let s = live::audit::Snapshot::list(&client).await.expect("lists");
            let its = s
                .items
                .iter()
                .filter(|(_, k, _)| *k == live::wire::kinds::INSTANCE_TYPE)
                .count();
            if its >= 3 {
                return s;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("the operator derived no InstanceTypes");
    });
    operator.stop();
    snapshot
}

#[test]
fn pools_are_picked_by_shape_and_pool_backs_node() {
    let snapshot = walkthrough_snapshot();
    let pick = |shape: PoolShape| pools_of_shape(&snapshot, &shape);
    assert_eq!(
        pick(PoolShape {
            sliceable: true,
            cards: Some(1),
            ..PoolShape::default()
        }),
        vec![PoolChoice {
            pool: "gpustack--nvidia-a10g-linux-amd64".into(),
            nodes: vec![("node-a10g".into(), 1)],
        }]
    );
    let two_on_a_node = pick(PoolShape {
        min_cards_on_a_node: Some(2),
        ..PoolShape::default()
    });
    assert_eq!(
        two_on_a_node.first().map(|c| c.pool.as_str()),
        Some("gpustack--nvidia-tesla-t4-linux-amd64"),
        "{two_on_a_node:?}"
    );
    // no pool of the walkthrough has exactly three cards, nor AMD cards
    assert_eq!(
        pick(PoolShape {
            cards: Some(3),
            ..PoolShape::default()
        }),
        vec![]
    );
    assert_eq!(
        pick(PoolShape {
            manufacturer: Some("amd".into()),
            ..PoolShape::default()
        }),
        vec![]
    );
}

#[test]
fn a_shape_no_pool_has_is_a_skip_row_naming_it() {
    let snapshot = walkthrough_snapshot();
    let audit = live::audit::audit(&snapshot, &model::Settings::default()).expect("audits");
    assert_eq!(pool_rows(&snapshot, &audit, None), vec![]);
    let shape = PoolShape {
        cards: Some(3),
        ..PoolShape::default()
    };
    let rows = pool_rows(&snapshot, &audit, Some(&shape));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0].status, rows[0].check.as_str()),
        (Status::Skip, POOL_CHECK)
    );
    assert!(rows[0]
        .object
        .contains("a pool of exactly 3 accelerator card(s)"));
}
