//! No flag value makes a command panic or abort (issue [M16]): every numeric flag of the
//! commands that end on their own is swept with 0, negative, NaN, tiny and huge values. Each
//! value is either refused as a usage error (exit 2, naming the flag) or runs to a verdict
//! (exit 0–5); never a panic (exit 101) or a signal (an allocation abort is SIGABRT).

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Values every numeric flag is tried with.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "NaN",
    "1e-20",
    "4294967296",
    "18446744073709551615",
    "x",
];

/// The same sweep for duration flags.
const DURATIONS: &[&str] = &[
    "0s",
    "-1s",
    "NaNs",
    "1e-20s",
    "18446744073709551615s",
    "584942417356y",
];

/// `(command that ends quickly without the flag, the flag)`. A flag whose huge value is a
/// legal long run is paired with a command bounded another way (`--seed` fixes fuzz to one
/// seed, `--max-events`/`--duration` bound a soak, a one-node scope bounds a check).
const SWEPT: &[(&[&str], &str)] = &[
    (&["fuzz", "--tier", "model", "--seed", "1"], "--seeds"),
    (&["fuzz", "--tier", "model"], "--seed"),
    (&["fuzz", "--tier", "model", "--seeds", "2"], "--jobs"),
    (&["fuzz", "--tier", "model", "--seeds", "2"], "--max-nodes"),
    (
        &["fuzz", "--tier", "model", "--seeds", "2"],
        "--shrink-budget",
    ),
    (&["soak", "--duration", "1s", "--max-events", "5"], "--rate"),
    (&["soak", "--duration", "1s", "--max-events", "5"], "--seed"),
    (
        &["soak", "--duration", "1s", "--max-events", "5"],
        "--max-nodes",
    ),
    (
        &["soak", "--duration", "1s", "--max-events", "5"],
        "--checkpoint-every",
    ),
    (&["soak", "--duration", "1s"], "--max-events"),
    (&["check", "--cards", "1", "--workloads", "1"], "--nodes"),
    (&["check", "--nodes", "1", "--workloads", "1"], "--cards"),
    (&["check", "--nodes", "1", "--cards", "1"], "--workloads"),
    (
        &["check", "--nodes", "1", "--cards", "1", "--workloads", "1"],
        "--threads",
    ),
    (
        &["check", "--nodes", "1", "--cards", "1", "--workloads", "1"],
        "--max-states",
    ),
    (
        &["check", "--nodes", "1", "--cards", "1", "--workloads", "1"],
        "--max-depth",
    ),
    (&["mutants", "--seeds", "1"], "--jobs"),
    (&["case"], ""),
    (&["chart", "case"], ""),
];

/// Duration flags, bounded the same way. (`--teardown-budget` only matters on a cluster:
/// tests/live_cli.rs runs a case on a twin with the largest budget.)
const SWEPT_DURATIONS: &[(&[&str], &str)] = &[(&["soak", "--max-events", "5"], "--duration")];

/// Not swept, and why: `twin serve` runs until interrupted (its `--port` is a u16 and
/// `--lag-ms` a u64, refused by clap when out of range); `mutants --seeds` huge is a legal long
/// run with nothing else to bound it.
#[test]
fn no_numeric_flag_value_panics_or_aborts() {
    let dir = scratch();
    let mut failures = Vec::new();
    let sweeps = SWEPT
        .iter()
        .map(|s| (s, NUMBERS))
        .chain(SWEPT_DURATIONS.iter().map(|s| (s, DURATIONS)));
    for ((command, flag), values) in sweeps {
        for value in values.iter() {
            let mut args: Vec<&str> = command.to_vec();
            if !flag.is_empty() {
                args.push(flag);
            }
            args.push(value);
            let out = Command::new(env!("CARGO_BIN_EXE_verify"))
                .args(&args)
                .current_dir(&dir)
                .stdin(Stdio::null())
                .output()
                .expect("run verify");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            let line = format!("verify {}: {:?}", args.join(" "), out.status);
            match code {
                Some(0..=5) if !stderr.contains("panicked") => {}
                _ => failures.push(format!("{line}\n{stderr}")),
            }
            // a refused value names the flag it was given for
            if code == Some(2) && !flag.is_empty() && stderr.contains("invalid value") {
                assert!(stderr.contains(flag), "{line}: {stderr}");
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn out_of_range_workers_nodes_and_rates_are_usage_errors() {
    let dir = scratch();
    for args in [
        &["fuzz", "--tier", "model", "--jobs", "0"][..],
        &["fuzz", "--tier", "model", "--max-nodes", "4294967296"],
        &["fuzz", "--tier", "model", "--max-nodes", "0"],
        &["soak", "--rate", "NaN"],
        &["soak", "--rate", "0"],
        &["soak", "--checkpoint-every", "0"],
        &["check", "--threads", "0"],
        &["mutants", "--jobs", "0"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_verify"))
            .args(args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .expect("run verify");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(args[args.len() - 2]), "{args:?}: {stderr}");
    }
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "verify-flags-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
