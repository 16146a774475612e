#!/usr/bin/env python3
"""Runs a fixed list of drip commands with two builds and says which outputs
differ: stdout, stderr, exit status and every file a command writes, compared
byte for byte. For a change that must not change behaviour (a refactor), run
from the repository root:

    python3 bench/identical.py BASE_DRIP NEW_DRIP [--bench-log PATH]

With --bench-log (the 10M-row bench log, see bench/README.md) it also compares
audit's JSON with 1 and 8 policies, the --decisions file (by hash) and size's
reports on it. Exit status 1 when anything differs.
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

NASA = "fixtures/nasa_19950801.tsv"
NASA_LOG = "fixtures/nasa_19950801.log.gz"
CONF = "fixtures/nginx/discourse/discourse.conf"
FAMILIES = [
    "gcra:rate=1/s,burst=2",
    "token-bucket:rate=1/s,burst=3",
    "leaky-bucket:rate=1/s,capacity=2",
    "shaper:rate=1/s,burst=2",
    "fixed-window:limit=10,window=10s",
    "sliding-window:limit=10,window=10s",
    "sliding-log:limit=5,window=5s",
    "nginx:rate=1r/s,burst=2",
    "nginx:rate=2r/s,burst=4,nodelay",
    "gcra:rate=1/s,burst=2+fixed-window:limit=30,window=1m",
]


def commands(bench_log):
    """(name, argv with OUT/ for the output folder)."""
    keyed = [NASA, "--key-column", "host"]
    out = []
    for fmt in ["table", "json", "csv", "markdown", "html"]:
        out.append((f"audit-policies-{fmt}", ["audit", *keyed, "--policies", "fixtures/policies.txt", "-f", fmt]))
    specs = [a for s in FAMILIES for a in ("-p", s)]
    out.append(("audit-families-json", ["audit", *keyed, *specs, "-f", "json"]))
    out.append(("audit-families-table", ["audit", *keyed, *specs]))
    out.append(("audit-decisions", ["audit", *keyed, *specs[:6], "--decisions", "OUT/decisions.csv", "-f", "json"]))
    out.append(("audit-decisions-stdout", ["audit", *keyed, "-p", FAMILIES[0], "--decisions", "-"]))
    out.append(("audit-plot", ["audit", *keyed, "--policies", "fixtures/policies.txt", "--plot", "OUT/timeline.svg", "-f", "json"]))
    out.append(("audit-timeline", ["audit", *keyed, "-p", FAMILIES[3], "--timeline", "1h", "-f", "json"]))
    out.append(("audit-compare", ["audit", *keyed, "-p", FAMILIES[0], "-p", FAMILIES[7], "--compare", "-f", "json"]))
    out.append(("audit-thresholds", ["audit", *keyed, "--policies", "fixtures/policies.txt", "--max-drop-rate", "1", "--max-wait", "2s", "-f", "markdown"]))
    out.append(("audit-combined", ["audit", NASA_LOG, "--key-column", "remote_addr", *specs[:4]]))
    out.append(("audit-nginx-conf", ["audit", NASA_LOG, "--nginx-conf", CONF]))
    out.append(("audit-nginx-conf-json", ["audit", NASA_LOG, "--nginx-conf", CONF, "-f", "json"]))
    out.append(("audit-small", ["audit", "fixtures/small.csv", "-p", "gcra:rate=1/s,burst=1", "-f", "json"]))
    for f in sorted(os.listdir("fixtures/formats")):
        out.append((f"audit-format-{f}", ["audit", f"fixtures/formats/{f}", "-p", "gcra:rate=1/s,burst=1", "-f", "json"]))
    for f in sorted(os.listdir("fixtures/logs")):
        out.append((f"audit-log-{f}", ["audit", f"fixtures/logs/{f}", "-p", "nginx:rate=1r/s,burst=1", "-f", "json"]))
    for fam in ["nginx", "nginx:nodelay", "gcra", "token-bucket", "shaper", "fixed-window", "sliding-window", "sliding-log", "leaky-bucket"]:
        out.append((f"size-{fam}", ["size", *keyed, "-p", fam, "--max-drop-rate", "0.1"]))
    out.append(("size-json", ["size", *keyed, "-p", "nginx", "--max-drop-rate", "0.1", "-f", "json"]))
    out.append(("size-per", ["size", *keyed, "-p", "gcra", "--max-drop-rate", "0.1", "--per", "1h"]))
    out.append(("size-headroom", ["size", *keyed, "-p", "nginx", "--max-drop-rate", "0.1", "--headroom", "1.5"]))
    out.append(("size-plot", ["size", *keyed, "-p", "nginx", "--max-drop-rate", "0.1", "--plot", "OUT/size.svg"]))
    out.append(("size-conf", ["size", NASA_LOG, "--max-drop-rate", "0.1", "--nginx-conf", CONF, "--patch", "OUT/limits.patch"]))
    out.append(("size-conf-json", ["size", NASA_LOG, "--max-drop-rate", "0.1", "--nginx-conf", CONF, "-f", "json"]))
    out.append(("error-spec", ["audit", NASA, "-p", "gcra:rate=0/s"]))
    out.append(("error-missing", ["audit", "fixtures/no-such.log", "-p", "gcra:rate=1/s"]))
    out.append(("error-conf", ["audit", NASA, "--nginx-conf", "fixtures/policies.txt"]))
    if bench_log:
        out.append(("bench-1", ["audit", bench_log, "--key-column", "client", "-p", "gcra:rate=5/s,burst=20", "-f", "json"]))
        out.append(("bench-8", ["audit", bench_log, "--key-column", "client", "--policies", "bench/policies8.txt", "-f", "json"]))
        out.append(("bench-decisions", ["audit", bench_log, "--key-column", "client", "-p", "nginx:rate=5r/s,burst=10", "--decisions", "OUT/bench-decisions.csv", "-f", "json"]))
        out.append(("bench-size-nginx", ["size", bench_log, "--key-column", "client", "-p", "nginx", "--max-drop-rate", "0.1", "-f", "json"]))
        out.append(("bench-size-gcra", ["size", bench_log, "--key-column", "client", "-p", "gcra", "--max-drop-rate", "0.1", "-f", "json"]))
    return out


def digest(data):
    return hashlib.sha256(data).hexdigest()


def run_all(drip, bench_log):
    """name -> sha256 of every artifact (the output folder is the same path
    for both builds, so a path a command prints is the same)."""
    out_dir = os.path.join(tempfile.gettempdir(), "drip-identical-out")
    sums = {}
    for name, argv in commands(bench_log):
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        argv = [a.replace("OUT/", out_dir + "/") for a in argv]
        p = subprocess.run([drip, *argv], capture_output=True, stdin=subprocess.DEVNULL)
        sums[f"{name}/stdout"] = digest(p.stdout)
        sums[f"{name}/stderr"] = digest(p.stderr)
        sums[f"{name}/status"] = str(p.returncode)
        for f in sorted(os.listdir(out_dir)):
            with open(os.path.join(out_dir, f), "rb") as fh:
                sums[f"{name}/{f}"] = digest(fh.read())
    shutil.rmtree(out_dir, ignore_errors=True)
    return sums


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--bench-log")
    a = ap.parse_args()
    base = run_all(os.path.abspath(a.base), a.bench_log)
    new = run_all(os.path.abspath(a.new), a.bench_log)
    differ = [k for k in base if base[k] != new.get(k)] + [k for k in new if k not in base]
    errors = sum(1 for k, v in base.items() if k.endswith("/status") and v == "2")
    print(f"{len(base)} artifacts of {len(commands(a.bench_log))} commands ({errors} exit 2 as meant or not); {len(differ)} differ")
    for k in differ:
        print(f"differs: {k}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
