#!/usr/bin/env python3
"""`drip pace --share` benchmark: several processes, one quota, measured in one run.

    cargo build --release --bins --examples
    python3 bench/share.py [--secs 10] [--reps 3]

Needs `redis-server` on PATH (Debian: apt-get install redis-server); it starts
its own on a free port and stops it by PID. For each case, interleaved rep by
rep, N `drip pace` processes each read an endless `seq` and share one rate:
independently (no --share: the baseline every pipeline has today), through a
state file, and through Redis. After SECS seconds each gets SIGTERM. Lines are
timed by drip's own `--stamp epoch` (wall clock just before each write).

Per run: lines written in the SECS seconds after the first, as a share of
rate x SECS; the most lines in any 1 s window (bound: rate + max(burst, 1));
per process, that its lines are 1..k in order (nothing lost, duplicated or
reordered) and that its --stats account for every line read. Then the Redis
outage run, and the cost of one reservation (examples/share_cost.rs).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIP = os.path.join(ROOT, "target", "release", "drip")
COST = os.path.join(ROOT, "target", "release", "examples", "share_cost")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    def __init__(self, workdir):
        self.port = free_port()
        self.dir = workdir
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--daemonize", "no"],
            cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.5) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise SystemExit("redis-server did not answer")

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def url(self, name):
        return f"redis://127.0.0.1:{self.port}#{name}"


def max_in_window(stamps, w):
    stamps = sorted(stamps)
    best, j = 0, 0
    for i, t in enumerate(stamps):
        while j < len(stamps) and stamps[j] < t + w:
            j += 1
        best = max(best, j - i)
    return best


def run_pacers(n, rate, burst, share, secs, workdir, events=()):
    """Runs n pacers for secs seconds; events: [(at_s, fn)] called meanwhile.
    Returns (per-process [(stamp, number)], problems)."""
    procs = []
    for i in range(n):
        out = open(os.path.join(workdir, f"out{i}"), "wb+")
        err = open(os.path.join(workdir, f"err{i}"), "wb+")
        seq = subprocess.Popen(["seq", "1", "1000000000"], stdout=subprocess.PIPE)
        cmd = [DRIP, "pace", "--no-progress", "--rate", f"{rate}/s", "--burst", str(burst),
               "--stamp", "epoch", "--stats=json"]
        if share:
            cmd += ["--share", share]
        p = subprocess.Popen(cmd, stdin=seq.stdout, stdout=out, stderr=err)
        seq.stdout.close()
        procs.append((p, seq, out, err))
    start = time.time()
    for at, fn in sorted(events, key=lambda e: e[0]):
        time.sleep(max(0.0, start + at - time.time()))
        fn()
    time.sleep(max(0.0, start + secs + 0.5 - time.time()))
    for p, seq, _, _ in procs:
        p.send_signal(signal.SIGTERM)
    runs, problems = [], []
    for i, (p, seq, out, err) in enumerate(procs):
        p.wait()
        seq.kill()
        seq.wait()
        out.seek(0)
        err.seek(0)
        lines = []
        for raw in out.read().decode().splitlines():
            stamp, num = raw.split("\t")
            lines.append((float(stamp), int(num)))
        nums = [x[1] for x in lines]
        if nums != list(range(1, len(nums) + 1)):
            problems.append(f"process {i}: lines lost, duplicated or reordered")
        stats = [l for l in err.read().decode().splitlines() if l.startswith("{")]
        if not stats:
            problems.append(f"process {i}: no stats")
        else:
            s = json.loads(stats[-1])
            if s["lines_out"] != len(lines) or \
                    s["lines_in"] != s["lines_out"] + s["dropped"] + s["unsent"]:
                problems.append(f"process {i}: accounting {s}")
            if share and s.get("share", {}).get("errors", 0):
                problems.append(f"process {i}: share errors {s['share']}")
        runs.append(lines)
        out.close()
        err.close()
    return runs, problems


def measure(runs, rate, secs):
    stamps = sorted(t for r in runs for t, _ in r)
    t0 = stamps[0]
    within = [t for t in stamps if t < t0 + secs]
    reservations = len(stamps)
    return {
        "lines": len(within),
        "share_of_target": len(within) / (rate * secs),
        "max_1s": max_in_window(within, 1.0),
        "written": reservations,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=10)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    for exe in (DRIP, COST):
        if not os.path.exists(exe):
            raise SystemExit(f"{exe} missing: cargo build --release --bins --examples")
    if not shutil.which("redis-server"):
        raise SystemExit("redis-server missing: apt-get install redis-server")
    workdir = tempfile.mkdtemp(prefix="drip-share-bench-")
    redis = Redis(workdir)
    try:
        cases = [(4, 200, 8), (16, 1000, 16), (16, 1000, 8)]
        results = {}
        for rep in range(args.reps):
            for n, rate, burst in cases:
                for backend in ("none", "file", "redis"):
                    share = {
                        "none": None,
                        "file": os.path.join(workdir, f"state-{n}-{rate}-{burst}-{rep}"),
                        "redis": redis.url(f"bench-{n}-{rate}-{burst}-{rep}"),
                    }[backend]
                    runs, problems = run_pacers(n, rate, burst, share, args.secs, workdir)
                    m = measure(runs, rate, args.secs)
                    m["problems"] = problems
                    results.setdefault((n, rate, burst, backend), []).append(m)
                    print(f"rep {rep} {n}x{rate}/s burst {burst} {backend}: {m}",
                          file=sys.stderr)
        print(f"{args.secs:g} s per run, {args.reps} reps, medians "
              f"(problems: any run)\n")
        print(f"| processes | rate/s | burst | schedule | lines in {args.secs:g} s | of rate × time |"
              " max in any 1 s (bound) | max ÷ bound | lost/dup/reordered, accounting |")
        print("|---|---|---|---|---|---|---|---|---|")
        for (n, rate, burst, backend), ms in results.items():
            lines = statistics.median(m["lines"] for m in ms)
            share = statistics.median(m["share_of_target"] for m in ms)
            mx = statistics.median(m["max_1s"] for m in ms)
            worst = max(m["max_1s"] for m in ms)
            bound = rate + max(burst, 1)
            probs = sorted({p for m in ms for p in m["problems"]})
            name = {"none": "independent (baseline)", "file": "state file",
                    "redis": "Redis"}[backend]
            print(f"| {n} | {rate} | {burst} | {name} | {lines:.0f} | {share:.2%} |"
                  f" {mx:.0f} (worst {worst}) ({bound}) | {mx / bound:.3f} |"
                  f" {'; '.join(probs) if probs else 'none'} |")

        # The outage: 4 x 200/s, burst 8; Redis killed at +2 s, restarted
        # empty at +3.5 s, the run ends at +6 s.
        print("\nRedis outage (4 processes, 200/s, burst 8, `--on-share-error wait`):\n")
        print("| rep | lines while down | first line after restart (ms) |"
              " max in any 1 s after | max in any 100 ms after | lost/dup/reordered |")
        print("|---|---|---|---|---|---|")
        for rep in range(args.reps):
            marks = {}

            def down():
                marks["down"] = time.time()
                redis.stop()

            def up():
                marks["up"] = time.time()
                redis.start()

            runs, problems = run_pacers(
                4, 200, 8, redis.url(f"outage-{rep}"), 6.0, workdir,
                events=[(2.0, down), (3.5, up)])
            stamps = sorted(t for r in runs for t, _ in r)
            # A slot granted just before the kill may still leave up to
            # D = burst x interval = 40 ms later.
            during = [t for t in stamps if marks["down"] + 0.040 < t < marks["up"]]
            after = [t for t in stamps if t > marks["up"]]
            first = (after[0] - marks["up"]) * 1000 if after else float("nan")
            print(f"| {rep} | {len(during)} | {first:.0f} | {max_in_window(after, 1.0)} |"
                  f" {max_in_window(after, 0.1)} |"
                  f" {'; '.join(p for p in problems if 'share errors' not in p) or 'none'} |")

        print("\nCost of one reservation:\n")
        out = subprocess.run(
            [COST, "--file", os.path.join(workdir, "cost.state"),
             "--redis", f"redis://127.0.0.1:{redis.port}", "--reps", "5"],
            capture_output=True, text=True, check=True)
        print(out.stdout)
    finally:
        redis.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
