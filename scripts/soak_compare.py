#!/usr/bin/env python3
"""Compares the verifier's memory in two soak runs at equal event counts: RSS (MiB) from each
run's series.csv at the first row past each count, and growth from the row at 60 s (the
warm-up) to the end and to the peak. Two builds soaked with the same seed and --max-events see
the same event stream, so equal counts compare equal work whatever the machine's load.

    python3 scripts/soak_compare.py runs/<before> runs/<after> [events ...]
"""
import csv, os, sys

WARM_UP_S = 60.0


def rows(run):
    path = os.path.join(run, "series.csv")
    try:
        with open(path, newline="") as f:
            out = [(float(r["elapsed_s"]), int(r["events_applied"]), int(r["rss_kib"]) / 1024)
                   for r in csv.DictReader(f)]
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"soak_compare: {path}: {e} (expected a soak run's series.csv with elapsed_s, "
                 "events_applied and rss_kib)")
    if not out:
        sys.exit(f"soak_compare: {path}: no rows")
    return out


def at_events(series, n):
    return next((rss for _, ev, rss in series if ev >= n), None)


def growth(series):
    base = next((rss for t, _, rss in series if t >= WARM_UP_S), series[0][2])
    end, peak = series[-1][2], max(rss for _, _, rss in series)
    return base, end, peak


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = sys.argv[1:3]
    series = [rows(r) for r in runs]
    last = min(s[-1][1] for s in series)
    counts = [int(a) for a in sys.argv[3:]] or sorted({1000, last // 4, last // 2, 3 * last // 4, last})
    print(f"{'events':>8} " + " ".join(f"{os.path.basename(r.rstrip('/')):>26}" for r in runs))
    for n in counts:
        cells = [at_events(s, n) for s in series]
        print(f"{n:>8} " + " ".join(f"{c:>22.1f} MiB" if c else f"{'-':>26}" for c in cells))
    for r, s in zip(runs, series):
        base, end, peak = growth(s)
        print(f"{os.path.basename(r.rstrip('/'))}: {base:.1f} MiB at {WARM_UP_S:.0f} s -> "
              f"{end:.1f} MiB at the end ({(end / base - 1) * 100:+.1f} %), "
              f"peak {peak:.1f} MiB ({(peak / base - 1) * 100:+.1f} %), {s[-1][1]} events")


if __name__ == "__main__":
    main()
