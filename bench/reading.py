#!/usr/bin/env python3
"""Reading speed, one build against another: `drip audit` with one policy on
the same rows as CSV, `combined` lines and JSON lines, measured in one run.

    python3 bench/reading.py BASE_DRIP [NEW_DRIP] [--rows 2000000] [--reps 5]

BASE_DRIP is a drip binary built from the commit to compare with (NEW_DRIP:
this tree's release build). The logs are the seeded ones of bench/formats.py.
Runs alternate between the two builds, REPS times each per form, and the
medians of wall and CPU time (user+sys) are printed with NEW/BASE ratios, as
a markdown table. The two builds' reports must be equal: the script checks.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd):
    """Wall s and CPU s (user+sys) of one run, and its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{err.read().decode()}")
        return wall, usage.ru_utime + usage.ru_stime, out.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("new", nargs="?", default=os.path.join(ROOT, "target/release/drip"))
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    keys = {"csv": "client", "combined": "remote_addr", "ndjson": "request.remote_ip"}
    policy = ["-p", "gcra:rate=5/s,burst=20", "--quiet", "-f", "json"]
    print(f"{a.rows} rows, {a.reps} runs each (medians); audit with gcra per client\n")
    print("| form | base wall s | new wall s | wall new/base | base CPU s | new CPU s "
          "| CPU new/base |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    same = True
    for form, key in keys.items():
        log = os.path.join(ROOT, "target", "bench", f"log{a.rows}.{form}")
        if not os.path.exists(log):
            os.makedirs(os.path.dirname(log), exist_ok=True)
            subprocess.run([os.path.join(ROOT, "target/release/examples/gen_log"),
                            str(a.rows), log, form], check=True)
        runs = {"base": [], "new": []}
        outs = {}
        for _ in range(a.reps):
            for side, drip in (("base", a.base), ("new", a.new)):
                wall, cpu, out = timed([drip, "audit", log, "--key-column", key] + policy)
                runs[side].append((wall, cpu))
                outs[side] = out
        same &= outs["base"] == outs["new"]
        med = {s: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
               for s, r in runs.items()}
        (bw, bc), (nw, nc) = med["base"], med["new"]
        print(f"| {form} | {bw:.2f} | {nw:.2f} | {nw / bw:.2f}x | {bc:.2f} | {nc:.2f} "
              f"| {nc / bc:.2f}x |")
    print(f"\nreports byte-identical: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
