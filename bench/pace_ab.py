#!/usr/bin/env python3
"""`drip pace` throughput and CPU, one build against another, in the same
run: the runs alternate (order reversed every other round) and the table
shows medians of --reps runs.

Cases: 2M numbered lines unpaced (1e9/s, a burst that never fills: the
reader, loop and writer as fast as they go); 2M lines at 1M/s (batched
writes at an exact rate); 3k lines at 1000/s (one write per wake-up: the
cost of waiting). CPU is user + sys of the pacer.

Usage: bench/pace_ab.py BEFORE_BINARY AFTER_BINARY [--reps 7]
"""
import argparse, os, resource, statistics, subprocess, tempfile, time

CASES = [
    ("2M lines, unpaced (1e9/s)", ["--rate", "1000000000/s", "--burst", "10000000"], 2_000_000),
    ("2M lines at 1M/s", ["--rate", "1000000/s"], 2_000_000),
    ("3k lines at 1000/s", ["--rate", "1000/s"], 3_000),
]


def once(binary, args, path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        p = subprocess.run([binary, "pace", "--no-progress", *args], stdin=f,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{binary} {args}: exit {p.returncode}: {p.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    builds = [("before", a.before), ("after", a.after)]
    with tempfile.TemporaryDirectory() as tmp:
        print("| case | before wall | after wall | after ÷ before | before CPU | after CPU | after ÷ before |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, args, n in CASES:
            path = os.path.join(tmp, f"{n}.txt")
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.writelines(f"{i}\n" for i in range(1, n + 1))
            got = {label: [] for label, _ in builds}
            for r in range(a.reps):
                for label, binary in builds if r % 2 == 0 else builds[::-1]:
                    got[label].append(once(binary, args, path))
            w = {l: statistics.median(x[0] for x in v) for l, v in got.items()}
            c = {l: statistics.median(x[1] for x in v) for l, v in got.items()}
            print(f"| {name} | {w['before']:.3f} s | {w['after']:.3f} s | {w['after'] / w['before']:.2f} "
                  f"| {c['before']:.3f} s | {c['after']:.3f} s | {c['after'] / c['before']:.2f} |")


if __name__ == "__main__":
    main()
