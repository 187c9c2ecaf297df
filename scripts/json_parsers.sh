#!/usr/bin/env bash
# What replacing serde_json's `Value` would give the audit (issue [M15]): parses one dump whole
# with serde_json (into `Value`, and skipped), sonic-rs and simd-json, best of 7 each, beside
# Python's json.load. A scratch crate in a temporary directory, so the workspace takes no
# dependency for a measurement.
#
#   cargo run --release -p live --example audit_dump -- 4000 /tmp/dump.json
#   bash scripts/json_parsers.sh /tmp/dump.json
set -euo pipefail
dump=$(realpath "${1:?usage: json_parsers.sh <dump.json>}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
cat > "$work/Cargo.toml" <<'TOML'
[package]
name = "json-parsers"
version = "0.1.0"
edition = "2021"
[dependencies]
serde = "1"
serde_json = "1"
sonic-rs = "0.5"
simd-json = "0.15"
TOML
cat > "$work/src/main.rs" <<'RUST'
use std::time::Instant;

/// Best of seven, the value dropped inside the timing (the audit frees what it parses).
fn best<T>(mut parse: impl FnMut() -> T) -> f64 {
    (0..7)
        .map(|_| {
            let t = Instant::now();
            drop(std::hint::black_box(parse()));
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    let path = std::env::args().nth(1).expect("a dump");
    let text = std::fs::read_to_string(&path).expect("readable");
    let rows = [
        ("serde_json into Value", best(|| serde_json::from_str::<serde_json::Value>(&text).unwrap())),
        ("serde_json, skipped (IgnoredAny)", best(|| serde_json::from_str::<serde::de::IgnoredAny>(&text).unwrap())),
        ("sonic-rs into its Value", best(|| sonic_rs::from_str::<sonic_rs::Value>(&text).unwrap())),
        ("simd-json into its borrowed Value", best(|| {
            let mut bytes = text.clone().into_bytes();
            simd_json::to_borrowed_value(&mut bytes).map(|_| ()).unwrap()
        })),
    ];
    for (what, ms) in rows {
        println!("{what:<36} {ms:>8.1} ms");
    }
}
RUST
(cd "$work" && cargo build --release -q)
"$work/target/release/json-parsers" "$dump"
python3 - "$dump" <<'PY'
import json, sys, time
times = []
for _ in range(7):
    start = time.perf_counter()
    with open(sys.argv[1]) as f:
        json.load(f)
    times.append(time.perf_counter() - start)
print(f"{'python json.load':<36} {min(times) * 1e3:>8.1f} ms")
PY
