//! `verify operator`'s controller process (`live::operator::controller::run`) against a served twin
//! that runs no operator of its own: from the walkthrough's mocks alone it writes every object
//! the model derives, through watches and replayed writes, and then settles.

use std::time::Duration;

use live::operator::controller::{run, ControllerConfig};
use live::operator::{render, write_mock, QuotaBy};
use live::server::http::spawn_with_store;
use live::server::kubeconfig::kubeconfig_yaml;
use live::server::store::Store;
use model::derive::derive;
use model::examples::walkthrough;

#[test]
fn the_controller_process_writes_what_the_model_derives() {
    let cluster = walkthrough();
    let mut store = Store::default();
    live::server::schemas::install_validators(&mut store);
    assert_eq!(write_mock(&mut store, &cluster), Ok(()));
    assert!(live::operator::admission::write_joint_check(&mut store, true).is_ok());
    let twin = spawn_with_store(None, store).expect("a twin");
    let shared = twin.store();
    let wanted = render(&derive(&cluster));
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let all_there = runtime.block_on(async {
        let client = live::client::Client::from_kubeconfig_yaml(
            &kubeconfig_yaml(twin.url(), "verify-twin"),
            "verify-twin",
        )
        .await
        .expect("a client");
        let config = ControllerConfig {
            quota_by: QuotaBy::Model,
            ..ControllerConfig::default()
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let process = tokio::spawn(run(
            client.kube().clone(),
            config,
            async {
                let _ = stop_rx.await;
            },
            |_: &str| {},
        ));
        // a wait for the outcome within a generous budget, not a timing assertion
        let mut all_there = false;
        for _ in 0..600 {
            all_there = shared.read(|s| {
                wanted
                    .iter()
                    .filter(|(k, _, _)| *k != live::wire::kinds::NODE)
                    .all(|(k, ns, o)| {
                        let name = live::wire::read::name_of(o);
                        s.get(k, ns.as_deref(), &name)
                            .is_ok_and(|got| got.get("spec") == o.get("spec"))
                    })
            });
            if all_there {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = stop_tx.send(());
        let ended = process.await.expect("the controller task");
        assert!(ended.is_ok(), "the controller stopped with {ended:?}");
        all_there
    });
    assert!(
        all_there,
        "the controller never wrote every derived object ({} expected)",
        wanted.len()
    );
    // the labels the Worker applies are on the Nodes, by its field manager
    let labelled = shared.read(|s| {
        wanted
            .iter()
            .filter(|(k, _, _)| *k == live::wire::kinds::NODE)
            .all(|(k, _, o)| {
                let name = live::wire::read::name_of(o);
                let got = s.get(k, None, &name).unwrap_or_default();
                o.pointer("/metadata/labels")
                    .and_then(|l| l.as_object())
                    .into_iter()
                    .flatten()
                    .all(|(key, v)| {
                        got.pointer("/metadata/labels").and_then(|l| l.get(key)) == Some(v)
                    })
            })
    });
    assert!(labelled, "every derived Node label is applied");
}
