#!/usr/bin/env python3
"""Size benchmark: a 16-rate `drip size` sweep against one `drip audit` pass.

    python3 bench/size.py [--rows 10000000] [--reps 5]

Uses the seeded log of bench/audit.py (target/bench/, written once by
examples/gen_log), then runs, interleaved and REPS times each:

- the baseline: `drip audit LOG --key-column client -p gcra:rate=5/s,burst=20`
  (one policy, one pass: read, parse, replay);
- `drip size LOG --key-column client -p gcra --rate <16 rates>
  --max-drop-rate 0.5`: the log read once into memory, the per-key
  zero-drop pass, a search per rate and the audit replay of each answer.

Prints medians of wall time, CPU time and peak RSS, the ratio of the sweep
to the audit pass (of the medians and of the fastest runs), and the memory
per row and per key of the sweep, as a markdown table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATES = ("1/min,2/min,5/min,10/min,20/min,30/min,1/s,2/s,3/s,5/s,7/s,10/s,15/s,20/s,30/s,50/s")


def run(cmd):
    """Wall s, CPU s (user+sys), peak RSS KiB, stdout of one run."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M"] + cmd,
        cwd=ROOT, capture_output=True, text=True,
    )
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed: {out.stderr}")
    wall, user, sys_, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(sys_), int(rss), out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--examples", "--bin", "drip"],
                   cwd=ROOT, check=True)
    log = os.path.join(ROOT, "target", "bench", f"log{a.rows}.csv")
    if not os.path.exists(log):
        os.makedirs(os.path.dirname(log), exist_ok=True)
        subprocess.run([os.path.join(ROOT, "target/release/examples/gen_log"), str(a.rows), log],
                       check=True)
    drip = os.path.join(ROOT, "target/release/drip")
    base = "audit, 1 policy (gcra per client)"
    sweep = "size, 16 rates (gcra per client, drop ≤ 0.5 %)"
    cases = {
        base: [drip, "audit", log, "--key-column", "client", "-p", "gcra:rate=5/s,burst=20",
               "--quiet", "-f", "json"],
        sweep: [drip, "size", log, "--key-column", "client", "-p", "gcra", "--rate", RATES,
                "--max-drop-rate", "0.5", "--quiet", "-f", "json"],
    }
    results = {k: [] for k in cases}
    keys = rows = None
    replays = None
    for _ in range(a.reps):
        for name, cmd in cases.items():
            wall, cpu, rss, out = run(cmd)
            results[name].append((wall, cpu, rss))
            if name == sweep:
                r = json.loads(out)
                rows = r["input"]["rows"]
                keys = r["frontier"][0]["keys"]
                replays = sum(f["replays"] for f in r["frontier"])
    med = {n: statistics.median(w for w, _, _ in r) for n, r in results.items()}
    best = {n: min(w for w, _, _ in r) for n, r in results.items()}
    print(f"{rows} rows, {keys} distinct clients, {a.reps} runs each (medians); "
          f"the sweep replayed the log {replays} times after reading it once\n")
    print("| case | wall s | ratio to audit | best-run ratio | CPU s | peak RSS MiB | RSS bytes per row | RSS bytes per key |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in cases:
        cpu = statistics.median(c for _, c, _ in results[name])
        rss = statistics.median(r for _, _, r in results[name])
        print(f"| {name} | {med[name]:.2f} | {med[name] / med[base]:.2f}x | "
              f"{best[name] / best[base]:.2f}x | {cpu:.2f} | {rss / 1024:.1f} | "
              f"{rss * 1024 / rows:.1f} | {rss * 1024 / keys:.0f} |")
    print("\nall runs (wall s): " + "; ".join(
        f"{n.split(',')[0]}: " + ", ".join(f"{w:.2f}" for w, _, _ in r) for n, r in results.items()))


if __name__ == "__main__":
    sys.exit(main())
