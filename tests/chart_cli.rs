//! `verify chart` end to end (issue 18 "Done when") against the embedded twin and a real API
//! server: the local control plane `scripts/kube start DIR` brings up (`VERIFY_KUBE_LOCAL=DIR`;
//! without it that test prints why and passes). Objects are planted with kubectl, as a user would; helm is a
//! fake on PATH that records its arguments and plays install/uninstall with kubectl.
//!
//! The whole contract is one function over a kubeconfig and context ([`chart_contract`]), run
//! on both servers: the real one and `verify twin serve` (which serves Secrets, ConfigMaps,
//! Deployments and CRDs as the real one does). Nothing depends on timing: every assertion reads what the
//! server answered after the writes that precede it returned.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// A server to run the contract on.
struct Server {
    kubeconfig: PathBuf,
    context: String,
    /// Extra `kubectl apply` flags: the twin serves no OpenAPI document, so kubectl's
    /// client-side validation cannot download one there (`--validate=false`).
    apply_flags: Vec<&'static str>,
    /// The served twin, ended when the server is dropped.
    twin: Option<Child>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.twin {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The local control plane, when one is up.
fn kube_local() -> Option<Server> {
    let dir = PathBuf::from(std::env::var_os("VERIFY_KUBE_LOCAL")?);
    let kubeconfig = dir.join("kubeconfig");
    kubeconfig.is_file().then(|| Server {
        kubeconfig,
        context: "kube-local".into(),
        apply_flags: vec![],
        twin: None,
    })
}

/// `verify twin serve` under a context name that is not the twin's, so verify treats it as a
/// real cluster (`--context` required to change it).
fn twin() -> Server {
    let dir = std::env::temp_dir().join(format!("verify-chart-twin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a dir");
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args([
            "twin",
            "serve",
            "--context-name",
            "kind-chart",
            "--kubeconfig-out",
        ])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the twin");
    let out = child.stdout.take().expect("its stdout");
    // the kubeconfig is written once the line naming it is printed
    for line in BufReader::new(out).lines() {
        if line.expect("a line").starts_with("kubeconfig:") {
            break;
        }
    }
    Server {
        kubeconfig,
        context: "kind-chart".into(),
        apply_flags: vec!["--validate=false"],
        twin: Some(child),
    }
}

/// `kubectl apply -f FILE` with the server's extra flags.
fn apply(s: &Server, file: &Path) {
    let file = file.display().to_string();
    let mut args = vec!["apply"];
    args.extend(s.apply_flags.iter().copied());
    args.extend(["-f", file.as_str()]);
    kubectl(s, &args);
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn kubectl(s: &Server, args: &[&str]) -> Output {
    let o = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .arg("--context")
        .arg(&s.context)
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(o.status.success(), "kubectl {args:?}: {}", text(&o));
    o
}

/// `verify ARGS` with `path` as PATH (the fake helm's directory, or one without helm).
fn verify(s: &Server, path: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .env("KUBECONFIG", &s.kubeconfig)
        .env("PATH", path)
        .env("FAKE_KUBECONFIG", &s.kubeconfig)
        .env("FAKE_CONTEXT", &s.context)
        .output()
        .expect("verify runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The LEFTOVER lines of `verify chart leftovers` output, in order.
fn leftover_lines(o: &Output) -> Vec<String> {
    stdout(o)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("LEFTOVER ").map(str::to_string))
        .collect()
}

/// A fake helm: records its arguments in `$dir/helm.log`; `install` creates one ConfigMap
/// annotated for the release in the release's namespace, `uninstall` deletes it unless
/// `$dir/leave` exists.
const FAKE_HELM: &str = r#"#!/bin/sh
dir="$(dirname "$0")"
echo "$*" >> "$dir/helm.log"
k() { kubectl --kubeconfig "$FAKE_KUBECONFIG" --context "$FAKE_CONTEXT" "$@"; }
release="$2"; ns="$5"
case "$1" in
  install)
    k -n "$ns" create configmap chart-owned --from-literal=a=b >/dev/null || exit 1
    k -n "$ns" annotate configmap chart-owned "meta.helm.sh/release-name=$release" "meta.helm.sh/release-namespace=$ns" >/dev/null || exit 1
    k -n "$ns" label configmap chart-owned app.kubernetes.io/managed-by=Helm >/dev/null || exit 1
    echo "NAME: $release" ;;
  uninstall)
    ns="$4"
    [ -e "$dir/leave" ] || k -n "$ns" delete configmap chart-owned >/dev/null || exit 1
    echo "release \"$2\" uninstalled" ;;
  *) echo "fake helm: $1 not played" >&2; exit 1 ;;
esac
"#;

/// The PATH the tests give verify: the fake helm's directory (when given) and the system's
/// (kubectl, sh, gzip, base64) without any real helm.
fn path_with(fake: Option<&Path>) -> PathBuf {
    let system = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = fake.map(Path::to_path_buf).into_iter().collect();
    dirs.extend(std::env::split_paths(&system).filter(|d| !d.join("helm").exists()));
    PathBuf::from(std::env::join_paths(dirs).expect("a PATH"))
}

/// A release record's payload as Helm's secret driver writes it (gzip, then base64), made by
/// the system's own gzip and base64, not by verify's code.
fn helm_payload(json: &str) -> String {
    let o = Command::new("sh")
        .arg("-c")
        .arg("printf '%s' \"$J\" | gzip -c | base64 -w0")
        .env("J", json)
        .output()
        .expect("sh runs");
    assert!(o.status.success(), "{}", text(&o));
    stdout(&o).trim().to_string()
}

fn chart_contract(s: &Server) {
    let token = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    );
    let work = std::env::temp_dir().join(format!("verify-chart-{token}"));
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).expect("a work dir");
    let inv = |name: &str| work.join(name).display().to_string();
    let no_helm = path_with(None);
    let (x, y, z) = (
        format!("chart-x-{token}"),
        format!("chart-y-{token}"),
        format!("chart-z-{token}"),
    );
    let crd_name = format!("widgets{}.chart.verify.io", token.replace('-', ""));

    // --- leftovers: a namespace, a Secret and a CRD, planted between two inventories
    let o = verify(
        s,
        &no_helm,
        &["chart", "inventory", "--output", &inv("a.json")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stdout(&o).contains("objects in"), "{}", text(&o));
    kubectl(s, &["create", "namespace", &x]);
    kubectl(
        s,
        &[
            "-n",
            &x,
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=k=v",
        ],
    );
    let crd = work.join("crd.yaml");
    let plural = crd_name.split('.').next().unwrap_or_default();
    std::fs::write(
        &crd,
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {crd_name}\nspec:\n  group: chart.verify.io\n  names: {{kind: W{plural}, plural: {plural}, listKind: W{plural}List}}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n"
        ),
    )
    .expect("write the CRD");
    apply(s, &crd);
    let o = verify(
        s,
        &no_helm,
        &["chart", "inventory", "--output", &inv("b.json")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let o = verify(
        s,
        &no_helm,
        &[
            "chart",
            "leftovers",
            "--before",
            &inv("a.json"),
            "--after",
            &inv("b.json"),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let mut got = leftover_lines(&o);
    got.sort();
    let mut want = vec![
        format!("CustomResourceDefinition {crd_name}"),
        format!("Namespace {x}"),
        format!("Secret {x}/s1"),
    ];
    want.sort();
    // exactly the three: the namespace's default ServiceAccount and CA ConfigMap and the CRD's
    // automanaged APIService are churn the server makes, allowed by name
    assert_eq!(got, want, "{}", text(&o));
    assert!(stdout(&o).contains("no release:"), "{}", text(&o));
    let o = verify(
        s,
        &no_helm,
        &[
            "chart",
            "leftovers",
            "--before",
            &inv("b.json"),
            "--after",
            &inv("b.json"),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stdout(&o).contains("no leftovers"), "{}", text(&o));
    std::fs::write(
        work.join("bad.json"),
        "{\"format\": \"verify.chart.inventory/v1\", \"listed\": 1}",
    )
    .expect("write");
    let o = verify(
        s,
        &no_helm,
        &[
            "chart",
            "leftovers",
            "--before",
            &inv("bad.json"),
            "--after",
            &inv("b.json"),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.json: listed"),
        "{}",
        text(&o)
    );

    // an object held by a finalizer: deleted, still there, and shown with what holds it
    let held = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: {x}\n  finalizers: [chart.verify.io/hold]\n"
    );
    let held_file = work.join("held.yaml");
    std::fs::write(&held_file, held).expect("write");
    apply(s, &held_file);
    kubectl(
        s,
        &["-n", &x, "delete", "configmap", "held", "--wait=false"],
    );
    let o = verify(
        s,
        &no_helm,
        &["chart", "inventory", "--output", &inv("c.json")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = verify(
        s,
        &no_helm,
        &[
            "chart",
            "leftovers",
            "--before",
            &inv("b.json"),
            "--after",
            &inv("c.json"),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(
        leftover_lines(&o),
        [format!(
            "ConfigMap {x}/held (deleting, held by finalizers: chart.verify.io/hold)"
        )],
        "{}",
        text(&o)
    );
    kubectl(
        s,
        &[
            "-n",
            &x,
            "patch",
            "configmap",
            "held",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ],
    );

    // --- release: a record written with kubectl as Helm's secret driver encodes it
    let release = format!(
        r#"{{"name":"gpustack-operator","namespace":"{x}","version":1,"info":{{"status":"deployed"}},"chart":{{"metadata":{{"name":"gpustack-operator","version":"0.6.1","appVersion":"0.6.1"}}}},"config":{{}}}}"#
    );
    let payload = helm_payload(&release);
    kubectl(
        s,
        &[
            "-n",
            &x,
            "create",
            "secret",
            "generic",
            "sh.helm.release.v1.gpustack-operator.v1",
            "--type=helm.sh/release.v1",
            &format!("--from-literal=release={payload}"),
        ],
    );
    let o = verify(s, &no_helm, &["chart", "release", "--namespace", &x]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stdout(&o).contains("chart version: 0.6.1"), "{}", text(&o));
    assert!(
        stdout(&o).contains("release: gpustack-operator"),
        "{}",
        text(&o)
    );
    kubectl(s, &["create", "namespace", &y]);
    kubectl(
        s,
        &[
            "-n",
            &y,
            "create",
            "secret",
            "generic",
            "sh.helm.release.v1.broken.v1",
            "--type=helm.sh/release.v1",
            "--from-literal=release=not-base64!",
        ],
    );
    let o = verify(s, &no_helm, &["chart", "release", "--namespace", &y]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("Secret {y}/sh.helm.release.v1.broken.v1")),
        "{}",
        text(&o)
    );

    // --- case 1: the Deployment's image tag against the release's appVersion
    kubectl(
        s,
        &[
            "-n",
            &x,
            "create",
            "deployment",
            "gpustack-operator-worker",
            "--image=ghcr.io/gpustack/gpustack-operator:v0.6.1",
        ],
    );
    let o = verify(s, &no_helm, &["chart", "case", "1", "--namespace", &x]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    assert!(
        out.contains("PASS | deployed image tag == release appVersion"),
        "{out}"
    );
    // no scheduler or kubelet here: no Pod runs, so the binary's own version is not read
    assert!(out.contains("SKIP | binary version"), "{out}");
    assert!(out.contains("CASE 1 PASS"), "{out}");
    kubectl(
        s,
        &[
            "-n",
            &x,
            "set",
            "image",
            "deployment/gpustack-operator-worker",
            "gpustack-operator=ghcr.io/gpustack/gpustack-operator:v0.7.0",
        ],
    );
    let o = verify(s, &no_helm, &["chart", "case", "1", "--namespace", &x]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stdout(&o).contains("image tag [v0.7.0] != appVersion [0.6.1]"),
        "{}",
        text(&o)
    );
    let o = verify(
        s,
        &no_helm,
        &["chart", "case", "1", "--namespace", &x, "--format", "junit"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stdout(&o).contains("<testsuite name=\"case-1\""),
        "{}",
        text(&o)
    );

    // --- install and case 2 through a fake helm, in a namespace the user already had
    kubectl(s, &["create", "namespace", &z]);
    let helm = bin.join("helm");
    std::fs::write(&helm, FAKE_HELM).expect("write the fake helm");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&helm, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let with_helm = path_with(Some(&bin));
    let run_dir = work.join("run");
    let kubeconfig = s.kubeconfig.display().to_string();
    let pinned = [
        "--context",
        s.context.as_str(),
        "--kubeconfig",
        kubeconfig.as_str(),
    ];
    let run = run_dir.display().to_string();
    // case 2 without helm: exit 2 saying what to install
    let mut args = vec![
        "chart",
        "case",
        "2",
        "--namespace",
        &z,
        "--run-dir",
        &run,
        "--yes",
    ];
    args.extend(pinned);
    let o = verify(s, &no_helm, &args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("install Helm 3"),
        "{}",
        text(&o)
    );
    // install without --context refuses (it changes the cluster)
    let o = verify(
        s,
        &with_helm,
        &[
            "chart",
            "install",
            "--chart",
            "./c",
            "--namespace",
            &z,
            "--run-dir",
            &run,
            "--yes",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        !bin.join("helm.log").exists(),
        "helm ran on a refused install"
    );
    let mut args = vec![
        "chart",
        "install",
        "--chart",
        "./c",
        "--namespace",
        &z,
        "--run-dir",
        &run,
        "--yes",
    ];
    args.extend(pinned);
    let o = verify(s, &with_helm, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(run_dir.join("before-install.json").is_file());
    let log = std::fs::read_to_string(bin.join("helm.log")).unwrap_or_default();
    assert!(
        log.contains(&format!(
            "install gpustack-operator ./c --namespace {z} --create-namespace --wait --kube-context {} --kubeconfig {kubeconfig}",
            s.context
        )),
        "{log}"
    );
    // an uninstall that leaves the release's ConfigMap: case 2 FAILs naming it by release
    std::fs::write(bin.join("leave"), "").expect("write");
    let mut args = vec![
        "chart",
        "case",
        "2",
        "--namespace",
        &z,
        "--run-dir",
        &run,
        "--yes",
        "--drain-budget",
        "1s",
    ];
    args.extend(pinned);
    let o = verify(s, &with_helm, &args);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "FAIL | no leftovers (release {z}/gpustack-operator) | ConfigMap {z}/chart-owned"
        )),
        "{out}"
    );
    assert!(out.contains("FAIL | drained within the budget"), "{out}");
    // a clean uninstall: case 2 passes; the user's namespace is untouched
    std::fs::remove_file(bin.join("leave")).expect("remove");
    let o = verify(s, &with_helm, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = stdout(&o);
    assert!(out.contains("PASS | no leftovers"), "{out}");
    assert!(
        out.contains("PASS | the user's pre-existing objects are untouched"),
        "{out}"
    );
    assert!(out.contains("PASS | no leftover releases"), "{out}");
    let log = std::fs::read_to_string(bin.join("helm.log")).unwrap_or_default();
    assert!(
        log.contains(&format!(
            "uninstall gpustack-operator --namespace {z} --wait --kube-context {}",
            s.context
        )),
        "{log}"
    );
    for f in ["before-uninstall.json", "after-uninstall.json"] {
        assert!(run_dir.join(f).is_file(), "{f}");
    }

    // --- case 3 with a fake docker daemon and build script: two builds, then the stamp read
    let docker = bin.join("docker");
    std::fs::write(
        &docker,
        "#!/bin/sh\ncase \"$1\" in\n  version) echo 27.0.0 ;;\n  run) echo \"$*\" >> \"$(dirname \"$0\")/docker.log\"; cat \"$(dirname \"$0\")/stamp\" ;;\nesac\n",
    )
    .expect("write the fake docker");
    let build = bin.join("build.sh");
    std::fs::write(
        &build,
        "#!/bin/sh\necho \"$VERSION $PACKAGE_TAG\" >> \"$(dirname \"$0\")/build.log\"\n",
    )
    .expect("write the build script");
    for f in [&docker, &build] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::write(
        bin.join("stamp"),
        "gpustack-operator version v9.9.9 (commit abc)\n",
    )
    .expect("write");
    let script = build.display().to_string();
    let o = verify(s, &with_helm, &["chart", "case", "3", "--yes"]);
    assert_eq!(o.status.code(), Some(2), "no --build-script: {}", text(&o));
    let o = verify(
        s,
        &with_helm,
        &["chart", "case", "3", "--yes", "--build-script", &script],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).contains("PASS | stamped version == release version"),
        "{}",
        text(&o)
    );
    let builds = std::fs::read_to_string(bin.join("build.log")).unwrap_or_default();
    assert_eq!(builds, "v9.9.9 dev-rel\nv9.9.9 dev-rel\n");
    let runs = std::fs::read_to_string(bin.join("docker.log")).unwrap_or_default();
    assert_eq!(
        runs,
        "run --rm --entrypoint gpustack-operator gpustack/gpustack-operator:dev-rel --version\n"
    );
    // a warm cache that kept the old stamp
    std::fs::write(bin.join("stamp"), "gpustack-operator version v0.0.1\n").expect("write");
    let o = verify(
        s,
        &with_helm,
        &["chart", "case", "3", "--yes", "--build-script", &script],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stdout(&o).contains("reports [0.0.1], built [9.9.9]"),
        "{}",
        text(&o)
    );

    // --- the gated cases skip with NOTHING WAS VERIFIED where their environment is missing
    let o = verify(s, &no_helm, &["chart", "case", "4", "--namespace", &x]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).contains("NOTHING WAS VERIFIED: helm is not on PATH"),
        "{}",
        text(&o)
    );
    let o = verify(s, &no_helm, &["chart", "case", "6", "--namespace", &x]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        stdout(&o).contains("NOTHING WAS VERIFIED: a chart release is present"),
        "{}",
        text(&o)
    );
    let o = verify(s, &no_helm, &["chart", "case", "8", "--namespace", &x]);
    assert!(
        stdout(&o).contains("NOTHING WAS VERIFIED: topograph.enabled is not true"),
        "{}",
        text(&o)
    );

    for ns in [&x, &y, &z] {
        kubectl(s, &["delete", "namespace", ns, "--wait=false"]);
    }
    kubectl(s, &["delete", "crd", &crd_name, "--wait=false"]);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn the_chart_contract_on_the_twin() {
    chart_contract(&twin());
}

#[test]
fn the_chart_contract_on_a_real_api_server() {
    match kube_local() {
        Some(s) => chart_contract(&s),
        None => eprintln!(
            "skipped: VERIFY_KUBE_LOCAL is not set (start a local control plane with `scripts/kube start DIR`)"
        ),
    }
}
