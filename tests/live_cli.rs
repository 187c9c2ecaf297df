//! `verify fuzz --context` end to end against `verify twin serve` playing a real cluster (its
//! kubeconfig context is not the twin's): the refusals, the preflight, a clean run, and runs
//! stopped by SIGINT or SIGKILL leaving nothing behind (after `verify cleanup` for SIGKILL).

mod common;

use common::http_get as get;
use common::http_post as post;
use common::signal;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const CONTEXT: &str = "kind-verify";

/// A served twin (with the walkthrough cluster unless `empty`) and its kubeconfig.
struct Served {
    child: Child,
    addr: String,
    kubeconfig: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(name: &str, walkthrough: bool) -> Served {
    serve_with(name, walkthrough, &[])
}

fn serve_with(name: &str, walkthrough: bool, extra: &[&str]) -> Served {
    let dir = std::env::temp_dir().join(format!("verify-live-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let mut args = vec![
        "twin",
        "serve",
        "--context-name",
        CONTEXT,
        "--kubeconfig-out",
        kubeconfig.to_str().unwrap(),
    ];
    if walkthrough {
        args.push("--walkthrough");
    }
    args.extend_from_slice(extra);
    let mut child = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(&args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the twin");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = common::served_addr(&first);
    // the kubeconfig is written once the line naming it is printed
    for line in lines.by_ref() {
        if line.unwrap().starts_with("kubeconfig:") {
            break;
        }
    }
    let served = Served {
        child,
        addr,
        kubeconfig,
    };
    if walkthrough {
        // the preflight wants the operator's pools: wait for its first reconcile, bounded
        for _ in 0..200 {
            if get(&served.addr, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues")
                .contains("gpustack--")
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    served
}

/// Every object a run could have left: mocks (labelled) and what the operator derived from
/// them (named after a token).
fn traces(addr: &str) -> Vec<String> {
    let paths = [
        "/api/v1/nodes",
        "/api/v1/namespaces",
        "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures",
        "/apis/worker.gpustack.ai/v1alpha1/devices",
        "/apis/worker.gpustack.ai/v1alpha1/instancetypes",
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        "/apis/kueue.x-k8s.io/v1beta2/localqueues",
    ];
    paths
        .iter()
        .filter(|p| {
            let body = get(addr, p);
            body.contains("verify.gpustack.ai/run") || body.contains("-vfy")
        })
        .map(|p| p.to_string())
        .collect()
}

fn verify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run verify")
}

fn fuzz_args<'a>(kubeconfig: &'a Path, runs: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "fuzz",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--run-dir",
        runs.to_str().unwrap(),
        "--regressions",
        "/dev/null",
    ];
    args.extend_from_slice(extra);
    args
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_real_cluster_needs_context_and_confirmation_and_nothing_is_written_without() {
    let twin = serve("refusals", true);
    let runs = twin.kubeconfig.with_file_name("runs");
    // the current context is not the twin's: --tier live without --context refuses
    let o = verify(&fuzz_args(
        &twin.kubeconfig,
        &runs,
        &["--tier", "live", "--seeds", "1"],
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("--context {CONTEXT}")),
        "{}",
        text(&o)
    );
    // named, but no terminal and no --yes: refuses after the banner and the preflight
    let o = verify(&fuzz_args(
        &twin.kubeconfig,
        &runs,
        &["--context", CONTEXT, "--seeds", "1"],
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains(&format!("context: {CONTEXT}")), "{out}");
    assert!(out.contains("server: http://127.0.0.1:"), "{out}");
    assert!(out.contains("pass --yes"), "{out}");
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
}

#[test]
fn a_cluster_without_the_operators_pools_fails_the_preflight_with_exit_3() {
    let twin = serve("preflight", false);
    let runs = twin.kubeconfig.with_file_name("runs");
    let o = verify(&fuzz_args(
        &twin.kubeconfig,
        &runs,
        &["--context", CONTEXT, "--yes", "--seeds", "1"],
    ));
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("PREFLIGHT no ClusterQueue named gpustack--"),
        "{}",
        text(&o)
    );
}

#[test]
fn a_confirmed_run_passes_and_leaves_nothing() {
    let twin = serve("clean", true);
    let out = three_seeds_leave_nothing(&twin);
    assert!(out.starts_with("tier: live"), "{out}");
}

/// Runs three seeds on `twin` (confirmed), expects them to hold and nothing to be left;
/// returns the run's output.
fn three_seeds_leave_nothing(twin: &Served) -> String {
    let runs = twin.kubeconfig.with_file_name("runs");
    let o = verify(&fuzz_args(
        &twin.kubeconfig,
        &runs,
        &["--context", CONTEXT, "--yes", "--seeds", "3"],
    ));
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("teardown: nothing labelled"), "{out}");
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
    out
}

/// Starts a long live run and returns it with its run id as it prints it (its run
/// directory's name, upper-case letters included), once it has started writing.
fn long_run(twin: &Served, runs: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(fuzz_args(
            &twin.kubeconfig,
            runs,
            &[
                "--context",
                CONTEXT,
                "--yes",
                "--seeds",
                "400",
                "--jobs",
                "2",
            ],
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the run");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut run = None;
    loop {
        let line = lines.next().expect("the run prints its label").unwrap();
        if let Some(dir) = line.strip_prefix("run directory: ") {
            let id = Path::new(dir).file_name().unwrap().to_string_lossy();
            run = Some(id.into_owned());
        }
        // the label is printed once the run is about to write
        if line.starts_with("run label: verify.gpustack.ai/run=") {
            break;
        }
    }
    let run = run.expect("the run prints its directory before its label");
    assert!(
        run.chars().any(|c| c.is_ascii_uppercase()),
        "the printed id ({run}) keeps its upper-case T and Z"
    );
    // keep draining stdout so the run never blocks on a full pipe
    std::thread::spawn(move || for _ in lines {});
    (child, run)
}

/// A point in the run, different per process (the signal lands wherever it lands).
fn some_delay() -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    Duration::from_millis(300 + u64::from(nanos % 1500))
}

#[test]
fn a_run_interrupted_by_sigint_tears_down_everything_it_wrote() {
    let twin = serve("sigint", true);
    let runs = twin.kubeconfig.with_file_name("runs");
    let (mut child, _run) = long_run(&twin, &runs);
    std::thread::sleep(some_delay());
    signal(&child, "-INT");
    let status = child.wait().unwrap();
    assert!(matches!(status.code(), Some(0 | 3)), "{status:?}");
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
}

#[test]
fn a_run_killed_by_sigkill_is_finished_by_verify_cleanup() {
    let twin = serve("sigkill", true);
    let runs = twin.kubeconfig.with_file_name("runs");
    let (mut child, run) = long_run(&twin, &runs);
    std::thread::sleep(some_delay());
    signal(&child, "-KILL");
    let _ = child.wait();
    let o = verify(&[
        "cleanup",
        "--run",
        &run,
        "--context",
        CONTEXT,
        "--kubeconfig",
        twin.kubeconfig.to_str().unwrap(),
        "--yes",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(traces(&twin.addr), Vec::<String>::new(), "{}", text(&o));
}

/// `verify case 14` on `twin`'s context, confirmed, with `extra` flags.
fn live_case_14(twin: &Served, extra: &[&str]) -> Output {
    let mut args = vec![
        "case",
        "14",
        "--context",
        CONTEXT,
        "--kubeconfig",
        twin.kubeconfig.to_str().unwrap(),
        "--yes",
    ];
    args.extend_from_slice(extra);
    verify(&args)
}

#[test]
fn a_case_runs_live_in_run_unique_pools_and_leaves_nothing() {
    let twin = serve("case", true);
    let o = live_case_14(&twin, &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("(tier: live)"), "{out}");
    assert!(
        out.contains(&format!("PASS | {}", cases::twin::LIVE_CHECK)),
        "{out}"
    );
    assert!(out.contains("CASE 14 PASS"), "{out}");
    // case 14 needs a single-card sliceable pool: the cluster's own A10G pool has it, picked by
    // "pool backs node", and its objects equal the model's prediction
    assert!(
        out.contains(&format!(
            "PASS | {} | a pool of exactly 1 logically sliceable card(s): \
             gpustack--nvidia-a10g-linux-amd64 (backs node-a10g: 1 card)",
            cases::probe::POOL_CHECK
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("PASS | {}", cases::probe::POOL_AUDIT_CHECK)),
        "{out}"
    );
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
}

/// `--teardown-budget 18446744073709551615s` once panicked in the teardown ("overflow when
/// adding duration to instant") and left the case's objects behind: the largest budget is "no
/// deadline within the run".
#[test]
fn the_largest_teardown_budget_tears_down_without_a_panic() {
    let twin = serve("budget", true);
    let o = live_case_14(&twin, &["--teardown-budget", "18446744073709551615s"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    assert_eq!(traces(&twin.addr), Vec::<String>::new(), "{out}");
}

/// `verify case --block mig` on `twin`'s context, confirmed.
fn mig_block_args(twin: &Served) -> [&str; 8] {
    [
        "case",
        "--block",
        "mig",
        "--context",
        CONTEXT,
        "--kubeconfig",
        twin.kubeconfig.to_str().unwrap(),
        "--yes",
    ]
}

#[test]
fn the_live_mig_block_asks_for_its_address_first_and_skips_without_hardware() {
    let twin = serve("mig", true);
    let args = mig_block_args(&twin);
    let o = Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(args)
        .env_remove("MIG_NODE_SSH")
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("MIG_NODE_SSH"), "{out}");
    assert!(
        !out.contains("context:"),
        "contacted the cluster first: {out}"
    );
    // no partitioned card in the cluster's Devices, and a MIG node that cannot be reached (the
    // fake ssh: no real host is ever asked)
    let (dir, options) = fake_mig_node(&twin, "0, Disabled\n");
    std::fs::write(dir.join("unreachable"), "").unwrap();
    let o = mig_block(&twin, &options);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("NOTHING WAS VERIFIED: this cluster lacks a partition-capable NVIDIA card"),
        "{out}"
    );
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
}

/// A fake MIG node (a directory for `cases/tests/fake-ssh.sh`) beside `twin`'s kubeconfig with
/// cards `state`; returns it and the `MIG_NODE_SSH_OPTS` that point the fake at it.
fn fake_mig_node(twin: &Served, state: &str) -> (PathBuf, String) {
    let dir = twin.kubeconfig.with_file_name("mig-node");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("state"), state).unwrap();
    let options = format!("-F {}", dir.join("ssh_config").display());
    (dir, options)
}

/// `verify case --block mig` on `twin` with the fake ssh as the MIG node of `options`.
fn mig_block(twin: &Served, options: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_verify"))
        .args(mig_block_args(twin))
        .env("MIG_NODE_SSH", "root@gpu-node-1")
        .env("VERIFY_SSH", FAKE_SSH)
        .env("MIG_NODE_SSH_OPTS", options)
        .env_remove("MIG_GPU_INDEX")
        .env_remove("MIG_MIXED_INDEXES")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Case 27 starts from a node with no partitioned card, which the cluster's Devices cannot
/// show as partition-capable: the MIG node itself answers (its cards report a MIG mode), and
/// the block runs its hardware step; cards without a MIG mode (`[N/A]`) are no such hardware.
#[test]
fn a_mig_capable_node_with_only_whole_cards_is_the_hardware_the_block_needs() {
    let twin = serve("mig-whole", true);
    let (_, options) = fake_mig_node(&twin, "0, Disabled\n1, Disabled\n");
    let o = mig_block(&twin, &options);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let passed = out
        .lines()
        .filter(|l| l.starts_with(&format!("PASS | {}", cases::hardware::HARDWARE_CHECK)))
        .count();
    assert!(passed >= 2, "{out}");
    assert!(
        !out.contains("lacks a partition-capable NVIDIA card"),
        "{out}"
    );
    let (_, options) = fake_mig_node(&twin, "0, [N/A]\n");
    let out = text(&mig_block(&twin, &options));
    assert!(
        out.contains("NOTHING WAS VERIFIED: this cluster lacks a partition-capable NVIDIA card"),
        "{out}"
    );
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
}

/// The fake `ssh` of the MIG hardware step's tests (`VERIFY_SSH`); a fake node is the directory
/// of the `-F DIR/ssh_config` it is given, holding `state` (its cards) and `log`.
const FAKE_SSH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/cases/tests/fake-ssh.sh");

#[test]
fn the_live_mig_block_toggles_the_cards_over_ssh_and_puts_them_back() {
    let twin = serve("mig-hw", true);
    // the cluster's own partitioned NVIDIA card (no run label), as the probe wants it: case
    // 25's A100 node after its first step partitions the card, written as its Node and Devices
    let case = cases::case(25).unwrap().unwrap();
    let mut world = model::events::World::new(case.scenario.cluster.clone());
    world.apply(&case.scenario.events[0]);
    let mut cluster = world.cluster().clone();
    cluster.nodes.retain(|n| n.devices.is_some());
    assert!(cluster.nodes[0].devices.as_ref().unwrap().groups[0].cards[0].is_partitioned());
    for (_, _, object) in live::wire::read::mock_objects(&cluster) {
        let path = match object["kind"].as_str() {
            Some("Node") => "/api/v1/nodes",
            Some("Devices") => "/apis/worker.gpustack.ai/v1alpha1/devices",
            _ => continue,
        };
        let created = post(&twin.addr, path, &object.to_string());
        assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    }
    let start = "0, Disabled\n1, Disabled\n";
    let (dir, options) = fake_mig_node(&twin, start);
    let block = || mig_block(&twin, &options);
    let o = block();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(cases::hardware::HARDWARE_CHECK))
        .collect();
    assert!(rows.len() >= 2, "{out}");
    for row in &rows {
        assert!(row.starts_with("PASS | "), "{row}\n{out}");
        assert!(
            row.contains("on root@gpu-node-1: toggled card(s) [0]")
                && row.contains("after: 0 Disabled, 1 Disabled"),
            "{row}"
        );
    }
    let at = |n: u32| out.find(&format!("== CASE {n} —")).unwrap();
    assert!(at(27) < at(24) && at(24) < at(25), "{out}");
    // one switch on and one back per hardware row, and the cards as found
    let log = std::fs::read_to_string(dir.join("log")).unwrap();
    let switches: Vec<&str> = log.lines().filter(|l| l.contains(" -mig ")).collect();
    let pair = [
        "sudo -n nvidia-smi -i 0 -mig 1",
        "sudo -n nvidia-smi -i 0 -mig 0",
    ];
    assert_eq!(switches, pair.repeat(rows.len()), "{log}");
    assert_eq!(std::fs::read_to_string(dir.join("state")).unwrap(), start);
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
    // an unreachable node: every hardware row FAILs naming the address, nothing is switched
    std::fs::write(dir.join("unreachable"), "").unwrap();
    std::fs::remove_file(dir.join("log")).unwrap();
    let o = block();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let failed: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with(&format!("FAIL | {}", cases::hardware::HARDWARE_CHECK)))
        .collect();
    assert_eq!(failed.len(), rows.len(), "{out}");
    assert!(
        failed
            .iter()
            .all(|l| l.contains("cannot reach MIG_NODE_SSH=root@gpu-node-1")),
        "{out}"
    );
    let log = std::fs::read_to_string(dir.join("log")).unwrap();
    assert!(!log.contains(" -mig "), "{log}");
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
}

#[test]
fn a_live_soak_churns_in_its_own_pools_and_leaves_nothing() {
    let twin = serve("soak", true);
    let runs = twin.kubeconfig.with_file_name("runs");
    let history = twin.kubeconfig.with_file_name("history.csv");
    let o = verify(&[
        "soak",
        "--context",
        CONTEXT,
        "--kubeconfig",
        twin.kubeconfig.to_str().unwrap(),
        "--yes",
        "--max-events",
        "20",
        "--duration",
        "120s",
        "--seed",
        "3",
        "--run-dir",
        runs.to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("tier: live"), "{out}");
    assert!(out.contains("leftovers 0: held"), "{out}");
    assert!(std::fs::read_to_string(&history)
        .unwrap()
        .contains(",live,"));
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
}

#[test]
fn a_live_run_rides_out_faults_and_leaves_nothing() {
    let twin = serve_with(
        "faults",
        true,
        &[
            "--faults",
            "7:conflict=0.1,throttle=0.03,error=0.05,watch-cut=0.2,slow=0.05,delay-ms=5",
        ],
    );
    three_seeds_leave_nothing(&twin);
    let counters = get(&twin.addr, "/verify/counters");
    assert!(counters.contains("\"conflict\""), "{counters}");
}

#[test]
fn a_run_overlaid_on_a_real_node_never_changes_it() {
    let twin = serve("overlay", true);
    let runs = twin.kubeconfig.with_file_name("runs");
    let node = |name: &str| {
        let body = get(&twin.addr, &format!("/api/v1/nodes/{name}"));
        let json = body
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let v: serde_json::Value = serde_json::from_str(&json).expect("a Node");
        v["metadata"]["labels"].clone()
    };
    // a node with Devices of its own is refused before anything is written
    let o = verify(&fuzz_args(
        &twin.kubeconfig,
        &runs,
        &[
            "--context",
            CONTEXT,
            "--yes",
            "--overlay-node",
            "node-a10g",
            "--seeds",
            "1",
        ],
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("has Devices of its own"), "{}", text(&o));
    let before = node("node-cpu");
    let o = verify(&fuzz_args(
        &twin.kubeconfig,
        &runs,
        &[
            "--context",
            CONTEXT,
            "--yes",
            "--overlay-node",
            "node-cpu",
            "--seeds",
            "4",
        ],
    ));
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("overlay: node node-cpu"), "{out}");
    assert_eq!(node("node-cpu"), before);
    assert_eq!(traces(&twin.addr), Vec::<String>::new());
}
