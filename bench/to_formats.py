#!/usr/bin/env python3
"""The bench CSV log (ts,client,path,status,bytes) rewritten in access-log
formats, the same requests line for line, for timing `drip audit` on each
format against the CSV.

    python3 bench/to_formats.py [--src target/bench/log10000000.csv] [combined elb ...]

Writes target/bench/<stem>.<format> next to nothing else:
- combined: `c000177 - - [01/May/2024:00:00:00 +0000] "GET /api/v1/items/10971 HTTP/1.1"
  200 50444 "-" "bench/1.0"` (CLF times have whole seconds: the milliseconds are dropped);
- elb: AWS Classic Load Balancer lines, the client as `c000177:80` (its time keeps the
  milliseconds).
"""
import argparse
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def clf_time(ts):
    """`2024-05-01T00:00:00.008Z` as `01/May/2024:00:00:00 +0000`."""
    return f"{ts[8:10]}/{MONTHS[int(ts[5:7]) - 1]}/{ts[0:4]}:{ts[11:19]} +0000"


def combined(ts, client, path, status, size):
    return f'{client} - - [{clf_time(ts)}] "GET {path} HTTP/1.1" {status} {size} "-" "bench/1.0"\n'


def elb(ts, client, path, status, size):
    return (f'{ts} bench-lb {client}:80 10.0.0.1:80 0.000050 0.001000 0.000040 {status} {status} '
            f'0 {size} "GET http://bench:80{path} HTTP/1.1" "bench/1.0" - -\n')


WRITERS = {"combined": combined, "elb": elb}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default=os.path.join(ROOT, "target", "bench", "log10000000.csv"))
    ap.add_argument("formats", nargs="*", default=["combined"], choices=sorted(WRITERS))
    a = ap.parse_args()
    stem = os.path.splitext(os.path.basename(a.src))[0]
    for form in a.formats:
        write = WRITERS[form]
        out_path = os.path.join(ROOT, "target", "bench", f"{stem}.{form}")
        with open(a.src, encoding="ascii") as src, open(out_path + ".part", "w") as out:
            header = src.readline().strip().split(",")
            assert header == ["ts", "client", "path", "status", "bytes"], header
            for line in src:
                out.write(write(*line.rstrip("\n").split(",")))
        os.replace(out_path + ".part", out_path)
        print(out_path)


if __name__ == "__main__":
    main()
