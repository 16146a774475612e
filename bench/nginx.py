#!/usr/bin/env python3
"""nginx.conf benchmark: the same limit as a spec and as a config, in one run.

    python3 bench/nginx.py [--rows 2000000] [--reps 5]

Writes the seeded log once as `combined` lines (target/bench/), then runs,
interleaved and REPS times each, `drip audit` with one nginx limit per client
(5r/s burst=20) given four ways:

- as a spec: `-p nginx:rate=5r/s,burst=20 --key-column remote_addr`;
- as an nginx.conf with one `location /` (no routing to do);
- as an nginx.conf whose rows are routed by URI among a prefix, a `^~` and two
  regex locations (the last regex takes them);
- as that routed config with the zone keyed by a `map` (evaluated per row).

Prints medians of wall time, CPU time and peak RSS, and each case's ratio to
the spec (of the medians, and of the fastest runs), as a markdown table.
"""
import argparse
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ONE = """http {
  limit_req_zone $binary_remote_addr zone=perip:64m rate=5r/s;
  server { location / { limit_req zone=perip burst=20; } }
}
"""

ROUTED = """http {
  limit_req_zone %s zone=perip:64m rate=5r/s;
  %s
  server {
    location / { }
    location /api/ { }
    location ^~ /static/ { }
    location ~ \\.(png|jpg)$ { }
    location ~ ^/api/v1/items/[0-9]+$ { limit_req zone=perip burst=20; }
  }
}
"""

MAP = "map $remote_addr $client { default $remote_addr; c000000 \"\"; }"


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
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--examples", "--bin", "drip"],
                   cwd=ROOT, check=True)
    bench = os.path.join(ROOT, "target", "bench")
    os.makedirs(bench, exist_ok=True)
    log = os.path.join(bench, f"log{a.rows}.combined")
    if not os.path.exists(log):
        subprocess.run([os.path.join(ROOT, "target/release/examples/gen_log"),
                        str(a.rows), log, "combined"], check=True)
    confs = {}
    for name, text in [("one", ONE),
                       ("routed", ROUTED % ("$binary_remote_addr", "")),
                       ("map", ROUTED % ("$client", MAP))]:
        confs[name] = os.path.join(bench, f"nginx-{name}.conf")
        with open(confs[name], "w") as f:
            f.write(text)
    drip = [os.path.join(ROOT, "target/release/drip"), "audit", log, "--quiet", "-f", "json"]
    cases = {
        "spec: -p nginx:rate=5r/s,burst=20": drip + [
            "--key-column", "remote_addr", "-p", "nginx:rate=5r/s,burst=20"],
        "nginx.conf, one location": drip + ["--nginx-conf", confs["one"]],
        "nginx.conf, routed by URI (5 locations)": drip + ["--nginx-conf", confs["routed"]],
        "nginx.conf, routed, key from a map": drip + ["--nginx-conf", confs["map"]],
    }
    results = {k: [] for k in cases}
    for _ in range(a.reps):
        for name, cmd in cases.items():
            results[name].append(run(cmd))
    first = next(iter(cases))
    base = statistics.median(w for w, _, _ in results[first])
    base_best = min(w for w, _, _ in results[first])
    print(f"{a.rows} rows, {os.path.getsize(log) // 1_000_000} MB, {a.reps} runs each (medians)\n")
    print("| case | wall s | ratio to spec | best-run ratio | CPU s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rs in results.items():
        w = statistics.median(r[0] for r in rs)
        c = statistics.median(r[1] for r in rs)
        m = statistics.median(r[2] for r in rs) / 1024
        best = min(r[0] for r in rs)
        print(f"| {name} | {w:.2f} | {w / base:.2f}x | {best / base_best:.2f}x | {c:.2f} | {m:.1f} |")
    print("\nall runs (wall s): " + "; ".join(
        f"{n}: " + ", ".join(f"{r[0]:.2f}" for r in rs) for n, rs in results.items()))


if __name__ == "__main__":
    main()
