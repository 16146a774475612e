#!/usr/bin/env python3
"""Audit benchmark: `drip audit` against the csv floor, measured in one run.

    python3 bench/audit.py [--rows 10000000] [--reps 5] [--baseline PATH]
                           [--threads 1,2] [--no-build]

Generates the seeded log once (target/bench/), then runs, interleaved and
REPS times each: the floor (csv ByteRecord loop counting rows), drip with one
policy (gcra per client), and drip with the eight policies of
bench/policies8.txt in one pass. Prints medians of wall time, CPU time and
peak RSS, and the ratios to the floor (of the medians, and of the fastest runs,
which a busy host disturbs least), as a markdown table.

--threads adds the eight-policy and one-policy runs at each given --threads
(the default run uses every core). --baseline adds the same two runs of
another drip binary (say, one built from an earlier commit), in the same
rounds and at the same --threads values, so a change is measured against
its baseline under the same load.
CPU time is user+sys of the whole process; "CPU / floor" divides it by the
floor's CPU time. "per thread" is the CPU time divided by the wall time: how
many cores the run kept busy.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """Wall s, CPU s (user+sys), peak RSS KiB, stdout of one run."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M"] + cmd,
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    wall, user, sys_, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(sys_), int(rss), out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--baseline", help="another drip binary to measure in the same rounds")
    ap.add_argument("--threads", default="", help="comma-separated --threads values to add")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--examples", "--bin", "drip"],
                       cwd=ROOT, check=True)
    log = os.path.join(ROOT, "target", "bench", f"log{a.rows}.csv")
    if not os.path.exists(log):
        os.makedirs(os.path.dirname(log), exist_ok=True)
        subprocess.run([os.path.join(ROOT, "target/release/examples/gen_log"), str(a.rows), log],
                       check=True)
    drip = os.path.join(ROOT, "target/release/drip")
    cases = {
        "floor: csv ByteRecord count": [os.path.join(ROOT, "target/release/examples/csv_count"), log],
        "drip audit, 1 policy (gcra per client)": [
            drip, "audit", log, "--key-column", "client", "-p", "gcra:rate=5/s,burst=20",
            "--quiet", "-f", "json"],
        "drip audit, 8 policies in one pass": [
            drip, "audit", log, "--key-column", "client", "--policies",
            os.path.join(ROOT, "bench/policies8.txt"), "--quiet", "-f", "json"],
    }
    one = cases["drip audit, 1 policy (gcra per client)"]
    eight = cases["drip audit, 8 policies in one pass"]
    for t in [t for t in a.threads.split(",") if t]:
        cases[f"drip audit, 1 policy, --threads {t}"] = one + ["--threads", t]
        cases[f"drip audit, 8 policies, --threads {t}"] = eight + ["--threads", t]
    if a.baseline:
        cases["baseline, 1 policy"] = [a.baseline] + one[1:]
        cases["baseline, 8 policies"] = [a.baseline] + eight[1:]
        for t in [t for t in a.threads.split(",") if t]:
            cases[f"baseline, 1 policy, --threads {t}"] = [a.baseline] + one[1:] + ["--threads", t]
            cases[f"baseline, 8 policies, --threads {t}"] = [a.baseline] + eight[1:] + ["--threads", t]
    results = {k: [] for k in cases}
    keys = None
    for _ in range(a.reps):
        for name, cmd in cases.items():
            wall, cpu, rss, out = run(cmd)
            results[name].append((wall, cpu, rss))
            if "1 policy" in name:
                keys = json.loads(out)["policies"][0]["keys"]
    floor = statistics.median(w for w, _, _ in results["floor: csv ByteRecord count"])
    floor_cpu = statistics.median(c for _, c, _ in results["floor: csv ByteRecord count"])
    floor_best = min(w for w, _, _ in results["floor: csv ByteRecord count"])
    size = os.path.getsize(log) / 1e6
    print(f"{a.rows} rows, {size:.0f} MB, {keys} distinct clients, {a.reps} runs each (medians)\n")
    print("| case | wall s | wall / floor | best-run ratio | CPU s | CPU / floor | per thread | peak RSS MiB | RSS bytes per key |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in cases:
        wall = statistics.median(w for w, _, _ in results[name])
        cpu = statistics.median(c for _, c, _ in results[name])
        rss = statistics.median(r for _, _, r in results[name])
        per_key = f"{rss * 1024 / keys:.0f}" if "floor" not in name and keys else "-"
        best = min(w for w, _, _ in results[name])
        print(f"| {name} | {wall:.2f} | {wall / floor:.2f}x | {best / floor_best:.2f}x | {cpu:.2f} "
              f"| {cpu / floor_cpu:.2f}x | {cpu / wall:.2f} | {rss / 1024:.1f} | {per_key} |")
    print(f"\nall runs (wall s): " + "; ".join(
        f"{n.split(':')[0] if 'floor' in n else n.removeprefix('drip audit, ')}: "
        + ", ".join(f"{w:.2f}" for w, _, _ in r)
        for n, r in results.items()))


if __name__ == "__main__":
    sys.exit(main())
