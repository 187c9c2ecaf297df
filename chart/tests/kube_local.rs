//! The chart crate's cluster-facing functions against a real API server: the local control
//! plane `scripts/kube start DIR` brings up (`VERIFY_KUBE_LOCAL=DIR`; without it each test
//! prints why and passes). Objects are planted with kubectl under a per-run token and removed
//! afterwards; nothing depends on timing.

use std::path::PathBuf;
use std::process::Command;

use cases::Status;

struct Server {
    kubeconfig: PathBuf,
    context: String,
    /// `kubectl apply` flags (the twin serves no OpenAPI document to validate against).
    apply_flags: Vec<&'static str>,
    /// A built-in API's APIService, Available on a real server (the aggregator's local ones).
    local_apiservice: Option<&'static str>,
    /// Ready, schedulable Nodes: `scripts/kube start` registers one worker; the twin has none.
    ready_nodes: usize,
    /// The in-process twin, served while the server lives.
    _twin: Option<live::server::http::TwinHandle>,
}

fn kube_local() -> Option<Server> {
    let dir = PathBuf::from(std::env::var_os("VERIFY_KUBE_LOCAL")?);
    let kubeconfig = dir.join("kubeconfig");
    kubeconfig.is_file().then(|| Server {
        kubeconfig,
        context: "kube-local".into(),
        apply_flags: vec![],
        local_apiservice: Some("v1.apps"),
        ready_nodes: 1,
        _twin: None,
    })
}

/// An embedded twin on loopback, its kubeconfig in a file for kubectl.
fn twin() -> Server {
    let handle = live::server::http::spawn_with_store(None, live::server::store::Store::default())
        .expect("serve a twin");
    let dir = std::env::temp_dir().join(format!("verify-chart-checks-{}", token()));
    std::fs::create_dir_all(&dir).expect("a dir");
    let kubeconfig = dir.join("kubeconfig");
    let text = live::server::kubeconfig::kubeconfig_yaml(handle.url(), live::client::TWIN_CONTEXT);
    std::fs::write(&kubeconfig, text).expect("write the kubeconfig");
    Server {
        kubeconfig,
        context: live::client::TWIN_CONTEXT.into(),
        apply_flags: vec!["--validate=false"],
        local_apiservice: None,
        ready_nodes: 0,
        _twin: Some(handle),
    }
}

fn token() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    )
}

/// `kubectl ARGS` with `stdin` as its input.
fn kubectl(s: &Server, args: &[&str], stdin: &str) {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .arg("--context")
        .arg(&s.context)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("kubectl runs");
    if let Some(mut i) = child.stdin.take() {
        i.write_all(stdin.as_bytes()).expect("write stdin");
    }
    let status = child.wait().expect("kubectl ends");
    assert!(status.success(), "kubectl {args:?} failed");
}

fn on<F: std::future::Future<Output = ()>>(s: &Server, f: impl FnOnce(kube::Client) -> F) {
    let run = live::client::preflight::block_on(async {
        let client = live::client::Client::connect(&s.kubeconfig, &s.context)
            .await
            .expect("connect to kube-local");
        f(client.kube().clone()).await
    });
    run.expect("a runtime");
}

#[test]
fn read_only_checks_answer_on_a_real_server() {
    match kube_local() {
        Some(s) => read_only_checks(&s),
        None => eprintln!("skipped: VERIFY_KUBE_LOCAL is not set (scripts/kube start DIR)"),
    }
}

#[test]
fn read_only_checks_answer_on_the_twin() {
    read_only_checks(&twin());
}

fn read_only_checks(s: &Server) {
    let ns = format!("chart-checks-{}", token());
    let ready_nodes = s.ready_nodes;
    kubectl(s, &["create", "namespace", &ns], "");
    let objects = format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: gpustack-operator-worker, namespace: {ns}}}\nspec:\n  minAvailable: 1\n  selector: {{matchLabels: {{app: w}}}}\n---\napiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: worker.gpustack.ai, namespace: {ns}}}\nspec: {{holderIdentity: gpustack-operator-worker-abc_1234}}\n---\napiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {{name: unheld, namespace: {ns}}}\nspec: {{}}\n"
    );
    let mut apply = vec!["apply"];
    apply.extend(s.apply_flags.iter().copied());
    apply.extend(["-f", "-"]);
    kubectl(s, &apply, &objects);
    let read_ns = ns.clone();
    let local = s.local_apiservice;
    on(s, |c| async move {
        let ns = read_ns;
        let rows =
            chart::checks::pdbs_exist(&c, &ns, &["gpustack-operator-worker", "kueue-manager-pdb"])
                .await
                .expect("PDBs read");
        let st: Vec<Status> = rows.iter().map(|r| r.status).collect();
        assert_eq!(st, [Status::Pass, Status::Fail], "{rows:?}");
        assert!(rows[0].object.contains("minAvailable=1"), "{rows:?}");
        let rows =
            chart::checks::leases_held(&c, &ns, &["worker.gpustack.ai", "unheld", "missing"])
                .await
                .expect("Leases read");
        let st: Vec<Status> = rows.iter().map(|r| r.status).collect();
        assert_eq!(st, [Status::Pass, Status::Fail, Status::Fail], "{rows:?}");
        assert!(rows[0]
            .object
            .contains("held by gpustack-operator-worker-abc_1234"));
        assert!(rows[1].object.contains("has no holder"));
        assert!(rows[2].object.contains("is missing"));
        // a real server's built-in APIs are local APIServices, always Available
        let mut names: Vec<&str> = local.into_iter().collect();
        names.push("v1.nothing.verify.io");
        let rows = chart::checks::apiservices_available(&c, &names)
            .await
            .expect("APIServices read");
        let st: Vec<Status> = rows.iter().map(|r| r.status).collect();
        let mut want: Vec<Status> = local.iter().map(|_| Status::Pass).collect();
        want.push(Status::Fail);
        assert_eq!(st, want, "{rows:?}");
        assert!(
            rows[rows.len() - 1].object.ends_with("is missing"),
            "{rows:?}"
        );
        // one object per page: the namespace's objects (two Leases listed together) the same
        let mine = |i: &chart::Inventory| -> Vec<String> {
            i.objects
                .iter()
                // the planted kinds only: the server's own churn may land between the two
                .filter(|o| o.namespace.as_deref() == Some(ns.as_str()))
                .filter(|o| matches!(o.kind.as_str(), "PodDisruptionBudget" | "Lease"))
                .map(|o| o.display())
                .collect()
        };
        let whole = chart::inventory::take(&c, "s").await.expect("inventory");
        let paged = chart::inventory::take_paged(&c, "s", 1)
            .await
            .expect("paged");
        assert_eq!(mine(&whole).len(), 3, "{:?}", mine(&whole));
        assert_eq!(mine(&whole), mine(&paged));
        // kube-local's registered worker is the one schedulable Node; the twin has none
        assert_eq!(
            chart::checks::schedulable_nodes(&c).await.expect("Nodes"),
            ready_nodes
        );
        assert!(chart::release::records(&c, Some(&ns))
            .await
            .expect("records")
            .is_empty());
    });
    kubectl(s, &["delete", "namespace", &ns, "--wait=false"], "");
}

#[test]
fn an_inventory_pages_and_records_what_it_cannot_list() {
    let Some(s) = kube_local() else {
        eprintln!("skipped: VERIFY_KUBE_LOCAL is not set (scripts/kube start DIR)");
        return;
    };
    // an aggregated API whose Service does not exist: discovery of its group version fails,
    // as a worker's APIs do while its Pods are down
    let name = format!("v1.unreachable{}.verify.io", token().replace('-', ""));
    let group = name.trim_start_matches("v1.").to_string();
    let apiservice = format!(
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: {name}}}\nspec:\n  group: {group}\n  version: v1\n  groupPriorityMinimum: 100\n  versionPriority: 10\n  insecureSkipTLSVerify: true\n  service: {{name: nowhere, namespace: default}}\n"
    );
    kubectl(&s, &["apply", "-f", "-"], &apiservice);
    let server = s.context.clone();
    let gv = format!("{group}/v1/*");
    on(&s, |c| async move {
        let whole = chart::inventory::take(&c, &server)
            .await
            .expect("inventory");
        let paged = chart::inventory::take_paged(&c, &server, 3)
            .await
            .expect("inventory in pages of 3");
        // the same objects page by page (the cluster is quiet between the two but for churn:
        // compare the stable kinds)
        let stable = |i: &chart::Inventory| -> Vec<String> {
            i.objects
                .iter()
                .filter(|o| {
                    matches!(
                        o.kind.as_str(),
                        "ClusterRole" | "CustomResourceDefinition" | "PriorityLevelConfiguration"
                    )
                })
                .map(|o| o.uid.clone())
                .collect()
        };
        assert!(stable(&whole).len() > 3, "more objects than one page");
        assert_eq!(stable(&whole), stable(&paged));
        let unlisted: Vec<String> = whole.unlisted.iter().map(|u| u.resource.clone()).collect();
        assert!(unlisted.contains(&gv), "{:?}", whole.unlisted);
        assert!(
            whole
                .unlisted
                .iter()
                .any(|u| u.resource == gv && u.reason.starts_with("discovery: 503")),
            "{:?}",
            whole.unlisted
        );
        // a leftover check over it says so instead of passing it
        let c = chart::compare(&whole, &whole);
        assert!(
            c.render().contains(&format!("NOT COMPARED {gv}")),
            "{}",
            c.render()
        );
    });
    kubectl(&s, &["delete", "apiservice", &name, "--wait=false"], "");
}
