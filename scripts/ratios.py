#!/usr/bin/env python3
"""Prints issue [M15]'s figures and their ratios to its targets from one run on this machine:
a full derivation of 1,000 nodes x 8 cards (and the incremental one after one node changed),
`verify audit --snapshot` of a 4,000-node dump
against Python's json.load of the same file (time and max RSS), model-tier fuzz throughput,
and `verify check`'s default scope on one and two threads against the floor of stateright
exploring the recorded state graph alone (generators' `check` bench, `graph1`); besides the
table, where the check rows' dependency stands: stateright alone on two threads (`graph2`) and
a plain one-thread BFS of the same states alone and with the model (`own1`: what replacing
stateright would give). The 30-minute soak's memory is not measured here (docs/benchmarks.md,
"Soak").

    python3 scripts/ratios.py            (builds what it runs, release profile)
    python3 scripts/ratios.py --quick    (skips the check rows: they take about three minutes)
"""
import json, os, re, subprocess, sys, tempfile, time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
RELEASE = os.path.join(TARGET, "release")
QUICK = "--quick" in sys.argv


def run(cmd, **kw):
    """Runs `cmd` in the checkout; its stdout, or exits naming the command that failed."""
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)
    if p.returncode not in (0, 1):
        sys.exit(f"ratios: `{' '.join(cmd)}` exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p.stdout + p.stderr


def timed(cmd):
    """Wall seconds and max RSS (KiB) of one run of `cmd`, from GNU time."""
    out = run(["/usr/bin/time", "-f", "TIMED %e %M"] + cmd)
    m = re.search(r"TIMED ([\d.]+) (\d+)", out)
    return float(m.group(1)), int(m.group(2)), out


def row(job, now, target, ratio):
    print(f"{job:<44} {now:>22} {target:>16} {ratio:>10}")


def build():
    run(["cargo", "build", "--release", "-q", "--bin", "verify"])
    run(["cargo", "build", "--release", "-q", "-p", "model", "--example", "derive_timing"])
    run(["cargo", "build", "--release", "-q", "-p", "live", "--example", "audit_dump"])
    if not QUICK:
        run(["cargo", "bench", "-q", "-p", "generators", "--bench", "check", "--no-run"])


def derivation():
    out = run([os.path.join(RELEASE, "examples", "derive_timing"), "3", "1000"])
    means = [float(v) * {"ms": 1, "µs": 1e-3, "s": 1e3}[u]
             for v, u in re.findall(r"mean\s+([\d.]+)(ms|µs|s)", out)]
    full, incremental = means[0], means[1]
    row("derive 1,000 nodes x 8 cards (mean)", f"{full:.1f} ms", "<= 2 ms", f"{full / 2:.1f}x")
    # not a row of the table: its incremental derivation after one node changed,
    # held to the same 2 ms
    row("  the same, one node changed (incremental)", f"{incremental:.1f} ms", "<= 2 ms",
        f"{incremental / 2:.1f}x")


def audit(work):
    dump = os.path.join(work, "dump.json")
    run([os.path.join(RELEASE, "examples", "audit_dump"), "4000", dump])
    # each side its best of three, taken alternately (the machine's load shifts between runs)
    parses, audits = [], []
    for _ in range(3):
        parses.append(parse_seconds(dump))
        audits.append(timed([os.path.join(RELEASE, "verify"), "audit", "--snapshot", dump]))
        if "no divergences" not in audits[-1][2]:
            sys.exit(f"ratios: the audit of the benchmark dump found divergences:\n"
                     f"{audits[-1][2][-2000:]}")
    parse = min(parses)
    secs = min(a[0] for a in audits)
    rss = max(a[1] for a in audits)
    ratio = secs / parse
    row("audit --snapshot, 4,000 nodes / json.load", f"{secs:.2f}/{parse:.2f} s = {ratio:.2f}x",
        "<= 0.6x", f"{ratio / 0.6:.1f}x")
    row("audit --snapshot max RSS", f"{rss / 1024:.0f} MiB", "<= 128 MiB",
        f"{rss / 1024 / 128:.1f}x")


def parse_seconds(path):
    start = time.perf_counter()
    with open(path) as f:
        json.load(f)
    return time.perf_counter() - start


def fuzz(work):
    out = run([os.path.join(RELEASE, "verify"), "fuzz", "--tier", "model", "--seeds", "5000",
               "--max-nodes", "1", "--run-dir", os.path.join(work, "runs"),
               "--regressions", os.path.join(work, "regressions.txt"),
               "--known", os.path.join(work, "known.yaml")])
    m = re.search(r"\((\d+) seeds/s", out)
    rate = int(m.group(1))
    row("fuzz --tier model --seeds 5000 --max-nodes 1", f"{rate:,} scenarios/s",
        ">= 20,000/s", f"{20000 / max(rate, 1):.1f}x")


def check(work):
    floor_out = run(["cargo", "bench", "-q", "-p", "generators", "--bench", "check", "--",
                     "3", "2", "4", "0", "graph1"])
    floor = float(re.search(r"stateright alone, 1t\s+\d+\s+\d+\s+\d+\s+([\d.]+)s",
                            floor_out).group(1))
    for threads in (1, 2):
        start = time.perf_counter()
        out = run([os.path.join(RELEASE, "verify"), "check", "--threads", str(threads),
                   "--run-dir", os.path.join(work, "runs")])
        secs = time.perf_counter() - start
        unique = int(re.search(r"([\d,]+) unique", out).group(1).replace(",", ""))
        if threads == 1:
            ratio = secs / floor
            row("check default scope, 1 thread / floor", f"{secs:.1f}/{floor:.2f} s = {ratio:.1f}x",
                "<= 2.5x", f"{ratio / 2.5:.1f}x")
        else:
            row("check default scope, 2 threads", f"{unique / secs:,.0f} unique/s",
                ">= 500,000/s", f"{500000 / (unique / secs):.1f}x")
    # not rows of the issue's table: where the check rows' dependency stands. stateright alone
    # on two threads (the 2-thread target's own floor), and a plain one-thread BFS over the
    # same states, alone and with the model (what replacing stateright would give).
    bench = ["cargo", "bench", "-q", "-p", "generators", "--bench", "check", "--",
             "3", "2", "4", "0"]
    alone2 = re.search(r"stateright alone, 2t(?:\s+\d+){3}\s+[\d.]+s\s+(\d+)",
                       run(bench + ["graph2"]))
    row("  stateright alone, 2 threads", f"{int(alone2.group(1)):,} unique/s", ">= 500,000/s",
        f"{500000 / int(alone2.group(1)):.1f}x")
    own = run(bench + ["own1"])
    plain = [float(re.search(rf"{label}(?:\s+\d+){{3}}\s+([\d.]+)s", own).group(1))
             for label in ("plain BFS alone, 1t", "plain BFS, model, 1t")]
    row("  plain BFS alone / with the model, 1 thread", f"{plain[0]:.2f}/{plain[1]:.1f} s", "", "")


def main():
    build()
    # The last column is how far each figure is from its target: 1.0x or less is met.
    print(f"{'job':<44} {'now':>22} {'target':>16} {'of target':>10}")
    with tempfile.TemporaryDirectory() as work:
        derivation()
        audit(work)
        fuzz(work)
        if not QUICK:
            check(work)


if __name__ == "__main__":
    main()
