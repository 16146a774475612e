#!/usr/bin/env python3
"""Plot and HTML benchmark: what `--plot` and `--format html` add to an audit.

    python3 bench/plot.py [--rows 2000000] [--reps 7]

Uses the seeded log of bench/audit.py (generated once in target/bench/), then
runs, interleaved and REPS times each, the same audit four ways: the JSON
report (the baseline), with --plot FILE.svg (which keeps a timeline whose
interval follows the span, and draws it), with --format html, and with
--timeline 1s (a fixed timeline, for comparison). Prints medians of wall time
and CPU time, the ratios to the baseline (of the wall medians, of the fastest
runs, and of the CPU medians: on a busy host the CPU time is the steadier), and
the size of the files written, as a markdown table.
"""
import argparse
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    """Wall s and CPU s (user+sys) of one run; stdout is discarded."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S"] + cmd,
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True,
    )
    wall, user, sys_ = out.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(sys_)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--policies", default="1", choices=["1", "8"])
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--examples", "--bin", "drip"],
                   cwd=ROOT, check=True)
    log = os.path.join(ROOT, "target", "bench", f"log{a.rows}.csv")
    if not os.path.exists(log):
        os.makedirs(os.path.dirname(log), exist_ok=True)
        subprocess.run([os.path.join(ROOT, "target/release/examples/gen_log"), str(a.rows), log],
                       check=True)
    drip = os.path.join(ROOT, "target/release/drip")
    out = tempfile.mkdtemp(prefix="drip-bench-plot-")
    svg = os.path.join(out, "audit.svg")
    if a.policies == "1":
        pol = ["-p", "gcra:rate=5/s,burst=20"]
        what = "1 policy (gcra per client)"
    else:
        pol = ["--policies", os.path.join(ROOT, "bench/policies8.txt")]
        what = "8 policies in one pass"
    base = [drip, "audit", log, "--key-column", "client", *pol, "--quiet"]
    cases = {
        "json report (baseline)": base + ["-f", "json"],
        "json report + --plot FILE.svg": base + ["-f", "json", "--plot", svg],
        "--format html (plot inline)": base + ["-f", "html"],
        "json report + --timeline 1s": base + ["-f", "json", "--timeline", "1s"],
    }
    results = {k: [] for k in cases}
    for _ in range(a.reps):
        for name, cmd in cases.items():
            results[name].append(run(cmd))
    base_med = statistics.median(w for w, _ in results["json report (baseline)"])
    base_best = min(w for w, _ in results["json report (baseline)"])
    base_cpu = statistics.median(c for _, c in results["json report (baseline)"])
    html = subprocess.run(cases["--format html (plot inline)"], cwd=ROOT,
                          capture_output=True, check=True).stdout
    size = os.path.getsize(log) / 1e6
    print(f"{a.rows} rows, {size:.0f} MB, {what}, {a.reps} runs each (medians)\n")
    print("| case | wall s | ratio to baseline | best-run ratio | CPU s | CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        wall = statistics.median(w for w, _ in r)
        cpu = statistics.median(c for _, c in r)
        best = min(w for w, _ in r)
        print(f"| {name} | {wall:.2f} | {wall / base_med:.2f}x | {best / base_best:.2f}x | {cpu:.2f} "
              f"| {cpu / base_cpu:.2f}x |")
    print(f"\nSVG {os.path.getsize(svg) / 1e3:.0f} kB, HTML {len(html) / 1e3:.0f} kB")
    print("all runs (wall s): " + "; ".join(
        f"{n}: " + ", ".join(f"{w:.2f}" for w, _ in r) for n, r in results.items()))


if __name__ == "__main__":
    main()
