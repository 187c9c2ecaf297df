//! Connecting safely, preflight, `verify audit --context` and `verify cleanup`, against the
//! embedded twin: the live audit writes nothing (the store's resourceVersion is unchanged),
//! mutating commands refuse a real cluster without `--context`, the kubeconfig is never
//! written, the twin is recognised by asking it (never by its context's name), preflight
//! names each missing piece, and cleanup leaves nothing labelled.

use std::path::{Path, PathBuf};

use kube::config::Kubeconfig;
use live::audit::{audit, Snapshot};
use live::client::preflight::{choose_context, load_kubeconfig, Refused};
use live::client::{connect, mocked_cluster, Access, Client, RunId, Runs, TWIN_CONTEXT};
use live::operator::{reconcile, write_mock};
use live::server::http::{spawn_with_store, TwinHandle};
use live::server::kubeconfig::kubeconfig_yaml;
use live::server::store::{Store, StoreConfig};
use live::wire::kinds::{self, Kind};
use model::examples::walkthrough;
use model::labels::NODE_DEVICES_CHECK;
use model::Settings;
use outcome::{Concluded, Outcome};
use serde_json::json;

/// A directory removed on drop.
struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(tag: &str) -> Dir {
    let dir = std::env::temp_dir().join(format!("verify-preflight-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    Dir(dir)
}

/// The walkthrough reconciled by the reference operator, which also creates the operator's
/// AdmissionCheck (as the operator's chart and controller do), with the joint check Active
/// (its controller is not the twin's; the queues reference it).
fn operator_store() -> Store {
    let c = walkthrough();
    let mut store = Store::default();
    assert_eq!(write_mock(&mut store, &c), Ok(()));
    assert!(live::operator::admission::write_joint_check(&mut store, true).is_ok());
    assert!(reconcile(&mut store, &c.settings, None).is_ok());
    assert!(
        store
            .get(&kinds::ADMISSION_CHECK, None, NODE_DEVICES_CHECK)
            .is_ok(),
        "the reference operator creates {NODE_DEVICES_CHECK}"
    );
    store
}

/// A kubeconfig for `handle` under `context`, written in `dir`.
fn kubeconfig(dir: &Dir, handle: &TwinHandle, context: &str) -> PathBuf {
    let path = dir.0.join(format!("kubeconfig-{context}"));
    std::fs::write(&path, kubeconfig_yaml(handle.url(), context)).expect("write kubeconfig");
    path
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn loaded(path: &Path) -> live::client::preflight::Loaded {
    load_kubeconfig(Some(path)).expect("kubeconfig reads")
}

/// `verify audit --context verify-twin`: list through the client, then audit.
fn live_audit(kubeconfig: &Path) -> live::audit::Audit {
    runtime().block_on(async {
        let client = Client::connect(kubeconfig, TWIN_CONTEXT)
            .await
            .expect("connects");
        let snapshot = Snapshot::list(&client).await.expect("lists");
        audit(&snapshot, &Settings::default()).expect("audits")
    })
}

#[test]
fn the_live_audit_lists_only_and_writes_nothing() {
    let handle = spawn_with_store(None, operator_store()).expect("twin");
    let dir = temp_dir("audit");
    let path = kubeconfig(&dir, &handle, TWIN_CONTEXT);
    let before = handle.store().read(|s| s.resource_version());
    let report = live_audit(&path);
    assert_eq!(report.differences, [], "{}", report.render());
    assert!(report.render().starts_with("audit: context verify-twin"));
    assert_eq!(handle.store().read(|s| s.resource_version()), before);

    // a divergence planted in the cluster is found through the same path
    let flavor = handle.store().write(|s| {
        let rf = s
            .list(
                &kinds::RESOURCE_FLAVOR,
                None,
                &live::server::store::Selector::everything(),
            )
            .expect("lists")
            .items
            .remove(0);
        let name = rf["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let patch = json!({"spec": {"nodeLabels": {"verify.gpustack.ai/edited": "yes"}}});
        s.patch(
            &kinds::RESOURCE_FLAVOR,
            None,
            &name,
            live::server::store::Subresource::Main,
            &live::server::store::Patch::Merge(patch),
        )
        .expect("patched");
        name
    });
    let report = live_audit(&path);
    assert_eq!(report.findings.len(), 1, "{}", report.render());
    assert_eq!(report.findings[0].root.object.name, flavor);
}

#[test]
fn a_mutating_command_refuses_a_real_cluster_without_context() {
    let dir = temp_dir("refuse");
    let path = dir.0.join("kubeconfig");
    std::fs::write(
        &path,
        kubeconfig_yaml("https://10.0.0.1:6443", "docker-desktop"),
    )
    .expect("write");
    let l = loaded(&path);
    let refused = choose_context(&l, None, Access::Mutating);
    let Err(Refused(why)) = refused else {
        panic!("expected a refusal, got {refused:?}")
    };
    assert!(why.contains("`docker-desktop`"), "{why}");
    assert!(why.contains("--context docker-desktop"), "{why}");
    assert_eq!(
        choose_context(&l, Some("docker-desktop"), Access::Mutating).ok(),
        Some("docker-desktop".to_string())
    );
    assert_eq!(
        choose_context(&l, None, Access::ReadOnly).ok(),
        Some("docker-desktop".to_string())
    );
    let err = runtime()
        .block_on(connect(Some(&path), None, Access::Mutating))
        .err()
        .expect("refused");
    assert_eq!(err.outcome(), Outcome::Usage);
}

#[test]
fn the_twin_context_needs_no_flag_and_the_kubeconfig_is_never_written() {
    let handle = spawn_with_store(None, operator_store()).expect("twin");
    let dir = temp_dir("twin");
    let path = kubeconfig(&dir, &handle, TWIN_CONTEXT);
    // a second context, current, so that pinning another one would show as a change
    let mut config = Kubeconfig::read_from(&path).expect("reads");
    let mut other = config.contexts[0].clone();
    other.name = "other".into();
    config.contexts.push(other);
    config.current_context = Some("other".into());
    std::fs::write(&path, serde_norway::to_string(&config).expect("yaml")).expect("write");
    let bytes = std::fs::read(&path).expect("read");
    let lines = runtime().block_on(async {
        let client = connect(Some(&path), Some(TWIN_CONTEXT), Access::Mutating)
            .await
            .expect("connects");
        client.banner().await
    });
    assert_eq!(lines[0], format!("context: {TWIN_CONTEXT}"));
    assert_eq!(lines[1], format!("server: {}", handle.url()));
    assert!(lines[2].starts_with("operator: unknown"), "{lines:?}");
    assert_eq!(std::fs::read(&path).expect("read"), bytes);

    let l = loaded(&kubeconfig(&dir, &handle, TWIN_CONTEXT));
    assert_eq!(
        choose_context(&l, None, Access::Mutating).ok(),
        Some(TWIN_CONTEXT.to_string())
    );
}

/// The twin is recognised by asking it, never by a context's name: a kubeconfig context named
/// `verify-twin` spares a mutating command `--context` only when its server answers with the
/// token that kubeconfig carries.
#[test]
fn a_context_named_like_the_twin_is_taken_only_if_its_server_answers_as_the_twin() {
    let dir = temp_dir("identity");
    let token = live::wire::identity::new_token();
    let twin = live::server::http::spawn_configured(
        None,
        operator_store(),
        live::server::http::ServeConfig {
            identity: Some(token.clone()),
            ..Default::default()
        },
    )
    .expect("twin");
    let write = |name: &str, url: &str, token: Option<&str>| {
        let path = dir.0.join(name);
        let yaml = live::server::kubeconfig::kubeconfig_yaml_with_token(url, TWIN_CONTEXT, token);
        std::fs::write(&path, yaml).expect("write kubeconfig");
        path
    };
    let issued = write("issued", twin.url(), Some(&token));
    let unissued = write("unissued", twin.url(), None);
    let forged = write("forged", twin.url(), Some("verify-twin-0"));
    // a server that is no twin: another twin playing a cluster issues no token
    let cluster = spawn_with_store(None, operator_store()).expect("cluster");
    let elsewhere = write("elsewhere", cluster.url(), Some(&token));
    runtime().block_on(async {
        let client = connect(Some(&issued), None, Access::Mutating)
            .await
            .expect("the issuing twin is taken without --context");
        assert!(client.is_embedded_twin().await);
        for path in [&unissued, &forged, &elsewhere] {
            let err = connect(Some(path), None, Access::Mutating)
                .await
                .err()
                .unwrap_or_else(|| panic!("{} was taken as the twin", path.display()));
            assert_eq!(err.outcome(), Outcome::Usage, "{err}");
            assert!(err.to_string().contains("--context verify-twin"), "{err}");
            // named explicitly, it is the user's choice (and the confirmation's)
            let client = connect(Some(path), Some(TWIN_CONTEXT), Access::Mutating)
                .await
                .expect("connects with --context");
            assert!(!client.is_embedded_twin().await);
        }
    });
}

#[test]
fn preflight_passes_on_the_operators_twin() {
    let handle = spawn_with_store(None, operator_store()).expect("twin");
    let dir = temp_dir("pass");
    let path = kubeconfig(&dir, &handle, TWIN_CONTEXT);
    let missing = runtime().block_on(async {
        let client = Client::connect(&path, TWIN_CONTEXT)
            .await
            .expect("connects");
        client.preflight(Access::Mutating, true).await
    });
    assert_eq!(missing, Vec::<String>::new());
}

/// A server nobody answers on: one line naming it and the cause, not a line per check.
#[test]
fn an_unreachable_server_is_one_preflight_line_naming_it() {
    let dir = temp_dir("unreachable");
    let path = dir.0.join("kubeconfig-nowhere");
    std::fs::write(&path, kubeconfig_yaml("https://127.0.0.1:1", "nowhere")).expect("write");
    let (reached, missing) = runtime().block_on(async {
        let client = Client::connect(&path, "nowhere").await.expect("connects");
        (
            client.reachable().await,
            client.preflight(Access::Mutating, true).await,
        )
    });
    let e = reached.expect_err("nothing listens on port 1");
    assert_eq!(e.server, "https://127.0.0.1:1");
    assert!(e.cause.to_lowercase().contains("refused"), "{e}");
    assert_eq!(missing, vec![e.to_string()]);
}

#[test]
fn preflight_names_each_missing_piece() {
    let served: Vec<Kind> = kinds::ALL
        .into_iter()
        .filter(|k| *k != kinds::DEVICES)
        .collect();
    let store = Store::new(StoreConfig {
        kinds: served,
        ..StoreConfig::default()
    });
    let handle = spawn_with_store(None, store).expect("twin");
    let dir = temp_dir("missing");
    let path = kubeconfig(&dir, &handle, TWIN_CONTEXT);
    let missing = runtime().block_on(async {
        let client = Client::connect(&path, TWIN_CONTEXT)
            .await
            .expect("connects");
        client.preflight(Access::ReadOnly, true).await
    });
    assert!(
        missing.iter().any(|l| l.starts_with(
            "Devices (devices.worker.gpustack.ai) is not served at worker.gpustack.ai/v1alpha1"
        )),
        "{missing:?}"
    );
    assert!(
        missing.iter().any(|l| l.starts_with(&format!(
            "AdmissionCheck {NODE_DEVICES_CHECK} does not exist"
        ))),
        "{missing:?}"
    );
    assert!(
        missing
            .iter()
            .any(|l| l.starts_with("no ClusterQueue named gpustack--")),
        "{missing:?}"
    );
    assert!(missing.iter().all(|l| !l.contains('\n')), "{missing:?}");

    // without the operator's objects required (cleanup), only the CRD is missing
    let missing = runtime().block_on(async {
        let client = Client::connect(&path, TWIN_CONTEXT)
            .await
            .expect("connects");
        client.preflight(Access::Mutating, false).await
    });
    assert_eq!(missing.len(), 1, "{missing:?}");
}

#[test]
fn access_reviews_are_asked_under_any_context_and_the_twin_allows_them() {
    // the twin reached under a real-looking context name: the reviews are asked, and the
    // twin answers them as an API server without RBAC does (allowed)
    let handle = spawn_with_store(None, operator_store()).expect("twin");
    let dir = temp_dir("ssar");
    let path = kubeconfig(&dir, &handle, "kind-real");
    let missing = runtime().block_on(async {
        let client = Client::connect(&path, "kind-real").await.expect("connects");
        client.preflight(Access::Mutating, true).await
    });
    assert_eq!(missing, Vec::<String>::new());
    let reviews = handle
        .counters()
        .requests("create", live::server::routes::ACCESS_REVIEWS);
    assert!(reviews > 0, "no access review was asked");
}

#[test]
fn cleanup_removes_one_run_then_all_and_leaves_nothing() {
    let handle = spawn_with_store(None, Store::default()).expect("twin");
    let dir = temp_dir("cleanup");
    let path = kubeconfig(&dir, &handle, TWIN_CONTEXT);
    runtime().block_on(async {
        let client = Client::connect(&path, TWIN_CONTEXT)
            .await
            .expect("connects");
        let (a, b) = (
            RunId::new("killed-a").expect("id"),
            RunId::new("killed-b").expect("id"),
        );
        client
            .mock(&mocked_cluster(&walkthrough(), &a), &a)
            .await
            .expect("mock");
        // a second killed run's Node (two full mocks would share their Namespaces' names)
        handle.store().write(|s| {
            let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {
                "name": "killed-b-node", "labels": {live::client::RUN_LABEL: b.as_str()}}});
            s.create(&kinds::NODE, None, node).expect("created");
        });
        assert!(!client.labelled(&a).await.expect("lists").is_empty());
        assert_eq!(
            client
                .run_ids()
                .await
                .expect("ids")
                .into_iter()
                .collect::<Vec<_>>(),
            ["killed-a", "killed-b"]
        );

        let one = client
            .cleanup(&Runs::One(a.clone()))
            .await
            .expect("cleanup");
        assert!(one.leftovers().is_empty(), "{}", one.render());
        assert!(!one.runs[0].1.deleted.is_empty());
        assert_eq!(
            client.labelled(&a).await.expect("lists"),
            Vec::<String>::new()
        );
        assert!(!client.labelled(&b).await.expect("lists").is_empty());

        let all = client.cleanup(&Runs::All).await.expect("cleanup");
        assert_eq!(all.runs.len(), 1, "{}", all.render());
        assert!(all.leftovers().is_empty(), "{}", all.render());
        assert!(client.run_ids().await.expect("ids").is_empty());
        let none = client.cleanup(&Runs::All).await.expect("cleanup");
        assert!(none.render().starts_with("no objects labelled"));
    });
}

#[test]
fn inside_a_pod_the_service_account_is_the_kubeconfig() {
    use live::client::preflight::{in_cluster_kubeconfig, IN_CLUSTER_CONTEXT};
    let kubeconfig = in_cluster_kubeconfig("10.96.0.1", "443", std::path::Path::new("/sa"))
        .expect("a kubeconfig");
    assert_eq!(
        kubeconfig.current_context.as_deref(),
        Some(IN_CLUSTER_CONTEXT)
    );
    let cluster = kubeconfig.clusters[0].cluster.as_ref().expect("a cluster");
    assert_eq!(cluster.server.as_deref(), Some("https://10.96.0.1:443"));
    assert_eq!(cluster.certificate_authority.as_deref(), Some("/sa/ca.crt"));
    let user = kubeconfig.auth_infos[0].auth_info.as_ref().expect("a user");
    assert_eq!(user.token_file.as_deref(), Some("/sa/token"));
    let v6 = in_cluster_kubeconfig("fd00::1", "6443", std::path::Path::new("/sa")).expect("v6");
    assert_eq!(
        v6.clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.server.as_deref()),
        Some("https://[fd00::1]:6443")
    );
}
