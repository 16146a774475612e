#!/usr/bin/env python3
"""`--merge` benchmark: several servers' logs merged by time against the same
rows as one sorted file, measured in one run.

    python3 bench/merge.py [--rows 10000000] [--reps 5] [--parts 4]

The seeded log of bench/audit.py (target/bench/) is dealt round-robin into
PARTS files, as a balancer deals requests to servers: each part covers the
whole day and is in time order within the reorder window (the generator
writes 0.5% of rows up to 2 s late). The baseline is those parts
concatenated and stably sorted by time into one file, which is exactly the
order `--merge` promises (ties in file order, then line order), so the
reports must be equal: the script checks it. Then the NASA day of
fixtures/, split into PARTS files by a hash of the client host, merged,
against the day as one file (per-host policies see each host's rows in the
same order, so these reports are equal too).

Runs alternate between the two sides, REPS times each, and the medians of
wall time, CPU time (user+sys) and peak RSS are printed with their ratios,
as a markdown table.
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "target", "bench")


def timed(cmd):
    """Wall s, CPU s (user+sys) and peak RSS KiB of one run, and its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{err.read().decode()}")
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, out.read().decode()


def split_round_robin(log, parts):
    """PARTS files dealt round-robin from LOG, and their rows stably sorted by
    time into one file."""
    names = [os.path.join(BENCH, f"{os.path.basename(log)}.part{i}of{parts}.csv")
             for i in range(parts)]
    sorted_name = os.path.join(BENCH, f"{os.path.basename(log)}.sorted{parts}.csv")
    if all(os.path.exists(n) for n in names + [sorted_name]):
        return names, sorted_name
    with open(log, "rb") as src:
        header = src.readline()
        outs = [open(n, "wb") for n in names]
        for o in outs:
            o.write(header)
        for i, line in enumerate(src):
            outs[i % parts].write(line)
        for o in outs:
            o.close()
    # RFC 3339 times of one width in UTC sort as text; -s keeps ties in the
    # order given: part order, then line order.
    with open(sorted_name, "wb") as out:
        out.write(header)
        out.flush()
        tails = subprocess.Popen(["tail", "-q", "-n", "+2"] + names, stdout=subprocess.PIPE)
        subprocess.run(["sort", "-s", "-t", ",", "-k1,1", "-S", "2G"],
                       stdin=tails.stdout, stdout=out, env={**os.environ, "LC_ALL": "C"},
                       check=True)
        tails.wait()
    return names, sorted_name


def split_by_host(log, parts):
    """The NASA day dealt to PARTS files by a hash of the client host, and
    the day as one plain file."""
    names = [os.path.join(BENCH, f"nasa.host{i}of{parts}.log") for i in range(parts)]
    whole = os.path.join(BENCH, "nasa.log")
    outs = [open(n, "wb") for n in names]
    with gzip.open(log, "rb") as src, open(whole, "wb") as one:
        for line in src:
            one.write(line)
            host = line.split(b" ", 1)[0]
            outs[zlib.crc32(host) % parts].write(line)
    for o in outs:
        o.close()
    return names, whole


def without_files(report):
    v = json.loads(report)
    v["input"]["files"] = None
    # Rows a file wrote late are moved within it: the sorted file has none.
    v["input"]["rows_reordered"] = None
    return v


def compare(title, cases, reps):
    results = {k: [] for k in cases}
    reports = {}
    for _ in range(reps):
        for name, cmd in cases.items():
            wall, cpu, rss, out = timed(cmd)
            results[name].append((wall, cpu, rss))
            reports[name] = without_files(out)
    first = next(iter(cases))
    same = all(r == reports[first] for r in reports.values())
    base = statistics.median(w for w, _, _ in results[first])
    base_cpu = statistics.median(c for _, c, _ in results[first])
    print(f"\n{title} ({reps} runs each, medians; reports equal: {'yes' if same else 'NO'})\n")
    print("| case | wall s | wall ratio | CPU s | CPU ratio | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in cases:
        wall = statistics.median(w for w, _, _ in results[name])
        cpu = statistics.median(c for _, c, _ in results[name])
        rss = statistics.median(r for _, _, r in results[name])
        print(f"| {name} | {wall:.2f} | {wall / base:.2f}x | {cpu:.2f} | {cpu / base_cpu:.2f}x "
              f"| {rss / 1024:.1f} |")
    print("\nall runs (wall s): " + "; ".join(
        f"{n}: " + ", ".join(f"{w:.2f}" for w, _, _ in r) for n, r in results.items()))
    return same


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--parts", type=int, default=4)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--examples", "--bin", "drip"],
                   cwd=ROOT, check=True)
    log = os.path.join(BENCH, f"log{a.rows}.csv")
    if not os.path.exists(log):
        os.makedirs(BENCH, exist_ok=True)
        subprocess.run([os.path.join(ROOT, "target/release/examples/gen_log"), str(a.rows), log],
                       check=True)
    parts, one = split_round_robin(log, a.parts)
    drip = os.path.join(ROOT, "target/release/drip")
    gcra = ["--key-column", "client", "-p", "gcra:rate=5/s,burst=20", "--quiet", "-f", "json"]
    eight = ["--key-column", "client", "--policies", os.path.join(ROOT, "bench/policies8.txt"),
             "--quiet", "-f", "json"]
    ok = compare(f"{a.rows} rows, 1 policy (gcra per client): one sorted file against "
                 f"{a.parts} files merged", {
                     "one sorted file": [drip, "audit", one] + gcra,
                     f"{a.parts} files --merge": [drip, "audit", "--merge"] + parts + gcra,
                 }, a.reps)
    ok &= compare(f"{a.rows} rows, the 8 policies of bench/policies8.txt: one sorted file "
                  f"against {a.parts} files merged", {
                      "one sorted file": [drip, "audit", one] + eight,
                      f"{a.parts} files --merge": [drip, "audit", "--merge"] + parts + eight,
                  }, a.reps)
    nasa, day = split_by_host(os.path.join(ROOT, "fixtures/nasa_19950801.log.gz"), a.parts)
    host = ["--key-column", "remote_addr", "-p", "gcra:rate=1/s,burst=10", "--quiet", "-f", "json"]
    ok &= compare(f"the NASA day: one file against {a.parts} files split by host, merged", {
        "one file": [drip, "audit", day] + host,
        f"{a.parts} files --merge": [drip, "audit", "--merge"] + nasa + host,
    }, a.reps)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
