#!/usr/bin/env python3
"""Timing of `drip pace --replay` and `drip pace --key`, each against a
baseline measured in the same run, interleaved, median of --reps runs.

replay: the NASA fixture (TSV, 1 s timestamps) at --speed 1000. Each output
line's offset from the first line out is compared with its scaled log
offset, ceil((t - t0) / speed). Baseline: a replayer in this script that
sleeps until each line's absolute deadline and writes it (the floor a plain
sleep loop gives on this machine).

keys: 3 hosts x N lines, written at once, paced at 2/s per host under a
global 5/s (`--key`, shaper + key=none shaper). Ideal: line k leaves at
k x 200 ms (the global rate binds) and each host's lines >= 500 ms apart.
Baseline: `drip pace --rate 5/s` on the same lines (one key). Also: a
line for an idle host written while a busy host has 10 lines waiting at
2/s; its latency with per-key pacing, and with --keep-order (head-of-line).

Usage: bench/pace_live.py [--reps 3] [--lines 30000] [--drip target/release/drip]
"""
import argparse, math, os, statistics, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reader(fd, out):
    """Timestamps every line read from fd (lines in one read share a time)."""
    buf = b""
    while True:
        chunk = os.read(fd, 65536)
        now = time.monotonic_ns()
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for l in lines:
            out.append((now, l))


def run_timed(cmd, feed, delay_feed=None):
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    got = []
    t = threading.Thread(target=reader, args=(p.stdout.fileno(), got))
    t.start()
    if delay_feed:
        delay_feed(p.stdin)
    else:
        p.stdin.write(feed)
    p.stdin.close()
    t.join()
    p.wait()
    return got


def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, math.ceil(p * len(xs)) - 1)]


def baseline_replayer(lines, times, speed):
    """Python: sleep until each deadline, write, flush."""
    code = r'''
import sys, time, math
speed = float(sys.argv[1])
rows = sys.stdin.buffer.read().split(b"\n")
out = sys.stdout.buffer
start = time.monotonic_ns()
t0 = None
for r in rows:
    if not r:
        continue
    f = r.split(b"\t")
    try:
        t = int(f[2])
    except (IndexError, ValueError):
        out.write(r + b"\n"); out.flush(); continue
    if t0 is None:
        t0 = t
    due = start + math.ceil((t - t0) * 1e9 / speed)
    while True:
        d = due - time.monotonic_ns()
        if d <= 0:
            break
        time.sleep(d / 1e9)
    out.write(r + b"\n"); out.flush()
'''
    return ["python3", "-c", code, str(speed)]


def replay_errors(got, log_times, speed):
    """Offset errors (ms) of data lines, anchored at the first data line."""
    data = [(t, l) for t, l in got if l and not l.startswith(b"host\t")]
    assert len(data) == len(log_times), (len(data), len(log_times))
    first_out, t0 = data[0][0], log_times[0]
    errs = []
    for (out, _), t in zip(data, log_times):
        ideal = math.ceil((t - t0) * 1_000_000_000 / speed)
        errs.append(((out - first_out) - ideal) / 1e6)
    return errs


def bench_replay(drip, reps, n, speed):
    path = os.path.join(ROOT, "fixtures", "nasa_19950801.tsv")
    rows = open(path, "rb").read().split(b"\n")
    header, body = rows[0], [r for r in rows[1:] if r][:n]
    pairs = sorted(((int(r.split(b"\t")[2]), i, r) for i, r in enumerate(body)))
    body = [r for _, _, r in pairs]
    times = [t for t, _, _ in pairs]
    feed = b"\n".join([header] + body) + b"\n"
    span = times[-1] - times[0]
    print(f"replay: {len(body)} lines, {span} s of log, speed {speed}: {span / speed:.1f} s per run", file=sys.stderr)
    res = {"drip": [], "sleep loop": []}
    for rep in range(reps):
        for name in res:
            cmd = ([drip, "pace", "--no-progress", "--replay", "--speed", str(speed), "--input-format", "tsv"]
                   if name == "drip" else baseline_replayer(body, times, speed))
            got = run_timed(cmd, feed)
            e = replay_errors(got, times, speed)
            a = [abs(x) for x in e]
            res[name].append({"p50": q(a, 0.5), "p99": q(a, 0.99), "max": max(a), "early": -min(e),
                              "end": e[-1], "lines": len(e)})
            print(f"  {name} run {rep + 1}: p99 {res[name][-1]['p99']:.3f} ms", file=sys.stderr)
    return res


def keyed_lines(per_host):
    return b"".join(f"https://h{h}.example/p/{i}\n".encode() for i in range(per_host) for h in range(3))


def bench_keys(drip, reps, per_host):
    feed = keyed_lines(per_host)
    n = 3 * per_host
    res = {"per key": [], "one key (baseline)": []}
    for rep in range(reps):
        for name in res:
            if name == "per key":
                cmd = [drip, "pace", "--no-progress", "--key", "^https?://([^/:]+)",
                       "-p", "shaper:rate=2/s + shaper:rate=5/s,key=none"]
            else:
                cmd = [drip, "pace", "--no-progress", "--rate", "5/s"]
            got = run_timed(cmd, feed)
            assert len(got) == n
            first = got[0][0]
            dev = [abs((t - first) - k * 200_000_000) / 1e6 for k, (t, _) in enumerate(got)]
            gaps = [(b[0] - a[0]) / 1e6 for a, b in zip(got, got[1:])]
            host_gaps = []
            for h in range(3):
                mine = [t for t, l in got if f"//h{h}.".encode() in l]
                host_gaps += [(b - a) / 1e6 for a, b in zip(mine, mine[1:])]
            res[name].append({"p99": q(dev, 0.99), "max": max(dev), "min gap": min(gaps),
                              "min host gap": min(host_gaps) if name == "per key" else None})
            print(f"  {name} run {rep + 1}: p99 {res[name][-1]['p99']:.3f} ms", file=sys.stderr)
    return res


def bench_overtake(drip, reps):
    res = {"per key": [], "--keep-order": []}
    for rep in range(reps):
        for name in res:
            cmd = [drip, "pace", "--no-progress", "--key-field", "1", "--rate", "2/s"]
            if name == "--keep-order":
                cmd.append("--keep-order")
            sent = {}

            def feed(stdin):
                stdin.write(b"".join(b"busy %d\n" % i for i in range(10)))
                stdin.flush()
                time.sleep(1.0)
                sent["at"] = time.monotonic_ns()
                stdin.write(b"idle 0\n")
                stdin.flush()

            got = run_timed(cmd, None, feed)
            out = next(t for t, l in got if l.startswith(b"idle"))
            res[name].append((out - sent["at"]) / 1e6)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--speed", type=float, default=1000)
    ap.add_argument("--per-host", type=int, default=10)
    ap.add_argument("--drip", default=os.path.join(ROOT, "target", "release", "drip"))
    ap.add_argument("--only", choices=["replay", "keys"], default=None)
    a = ap.parse_args()
    med = lambda rs, k: statistics.median(r[k] for r in rs)
    if a.only in (None, "replay"):
        r = bench_replay(a.drip, a.reps, a.lines, a.speed)
        print("\n| replayer | lines | offset error p50 ms | p99 ms | max ms | earliest ms | last line ms |")
        print("|---|---|---|---|---|---|---|")
        for name, rs in r.items():
            print(f"| {name} | {rs[0]['lines']} | {med(rs, 'p50'):.3f} | {med(rs, 'p99'):.3f} | {med(rs, 'max'):.3f} | "
                  f"{med(rs, 'early'):.3f} | {med(rs, 'end'):+.3f} |")
        d, b = r["drip"], r["sleep loop"]
        print(f"\np99: sleep loop ÷ drip = {med(b, 'p99') / med(d, 'p99'):.2f}×; "
              f"max: {med(b, 'max') / med(d, 'max'):.2f}×")
    if a.only in (None, "keys"):
        k = bench_keys(a.drip, a.reps, a.per_host)
        print(f"\n| pacing | lines | dev p99 ms | dev max ms | min gap ms | min gap per host ms |")
        print("|---|---|---|---|---|---|")
        for name, rs in k.items():
            host = "-" if rs[0]["min host gap"] is None else f"{med(rs, 'min host gap'):.3f}"
            print(f"| {name} | {3 * a.per_host} | {med(rs, 'p99'):.3f} | {med(rs, 'max'):.3f} | "
                  f"{med(rs, 'min gap'):.3f} | {host} |")
        o = bench_overtake(a.drip, a.reps)
        print("\n| mode | idle host's line, write to output ms (median) |")
        print("|---|---|")
        for name, xs in o.items():
            print(f"| {name} | {statistics.median(xs):.3f} |")
        print(f"\n--keep-order ÷ per key: {statistics.median(o['--keep-order']) / max(statistics.median(o['per key']), 1e-3):.0f}×")


main()
