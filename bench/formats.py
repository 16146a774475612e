#!/usr/bin/env python3
"""Access-log formats benchmark: the same rows as CSV, `combined` lines and
JSON lines, each through `drip audit` with one policy, measured in one run.

    python3 bench/formats.py [--rows 10000000] [--reps 5]

Writes the seeded log once per form (target/bench/), then runs, interleaved
and REPS times each: the CSV floor (a csv ByteRecord loop counting rows) and
`drip audit` with gcra per client on each form. Prints medians of wall time,
CPU time and peak RSS, and each form's ratio to the CSV audit (of the medians,
and of the fastest runs, which a busy host disturbs least), as a markdown table.
"""
import argparse
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """Wall s, CPU s (user+sys), peak RSS KiB of one run."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M"] + cmd,
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    wall, user, sys_, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(sys_), int(rss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--examples", "--bin", "drip"],
                   cwd=ROOT, check=True)
    logs = {}
    for form in ["csv", "combined", "ndjson"]:
        path = os.path.join(ROOT, "target", "bench", f"log{a.rows}.{form}")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            subprocess.run([os.path.join(ROOT, "target/release/examples/gen_log"),
                            str(a.rows), path, form], check=True)
        logs[form] = path
    drip = os.path.join(ROOT, "target/release/drip")
    policy = ["-p", "gcra:rate=5/s,burst=20", "--quiet", "-f", "json"]
    cases = {
        "floor: csv ByteRecord count": [
            os.path.join(ROOT, "target/release/examples/csv_count"), logs["csv"]],
        "csv": [drip, "audit", logs["csv"], "--key-column", "client"] + policy,
        "combined": [drip, "audit", logs["combined"], "--key-column", "remote_addr"] + policy,
        "ndjson": [drip, "audit", logs["ndjson"], "--key-column", "request.remote_ip"] + policy,
    }
    results = {k: [] for k in cases}
    for _ in range(a.reps):
        for name, cmd in cases.items():
            results[name].append(run(cmd))
    base = statistics.median(w for w, _, _ in results["csv"])
    base_best = min(w for w, _, _ in results["csv"])
    print(f"{a.rows} rows, {a.reps} runs each (medians); audit with gcra per client\n")
    print("| input | size MB | wall s | ratio to CSV | best-run ratio | CPU s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in cases:
        form = "csv" if name.startswith("floor") else name
        size = os.path.getsize(logs[form]) / 1e6
        wall = statistics.median(w for w, _, _ in results[name])
        cpu = statistics.median(c for _, c, _ in results[name])
        rss = statistics.median(r for _, _, r in results[name])
        best = min(w for w, _, _ in results[name])
        print(f"| {name} | {size:.0f} | {wall:.2f} | {wall / base:.2f}x | {best / base_best:.2f}x "
              f"| {cpu:.2f} | {rss / 1024:.1f} |")
    print("\nall runs (wall s): " + "; ".join(
        f"{n.split(':')[0]}: " + ", ".join(f"{w:.2f}" for w, _, _ in r) for n, r in results.items()))


if __name__ == "__main__":
    main()
