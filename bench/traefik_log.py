"""Writes a Traefik JSON access log of N requests (default 1,000,000) to
stdout for the `audit --traefik-config` benchmark: about 5,000 requests a
second from 3,840 client addresses, half to /api (with one of 201 API
keys), half to the site, lines in order of completion as Traefik writes
them. Run: python3 bench/traefik_log.py 1000000 > target/bench/traefik.log
"""

import json
import random
import sys
import time

SECOND = 10**9
START = 1_796_774_400 * SECOND


def main(n):
    rng = random.Random(1)
    rows = []
    t = START
    for _ in range(n):
        t += rng.randint(0, 400_000)
        ip = "10.%d.%d.%d" % (rng.randint(0, 3), rng.randint(0, 15), rng.randint(1, 60))
        path = rng.choice(["/api/a", "/api/b", "/", "/shop"])
        router = "api@file" if path.startswith("/api") else "web@file"
        took = rng.randint(1, 2000) * 1_000_000
        s, f = divmod(t, SECOND)
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%09dZ" % f
        row = {
            "ClientHost": ip,
            "DownstreamStatus": 200,
            "RouterName": router,
            "StartUTC": start,
            "RequestPath": path,
        }
        if path.startswith("/api"):
            row["request_X-Api-Key"] = "k%d" % rng.randint(0, 200)
        rows.append((t + took, json.dumps(row, separators=(",", ":"))))
    rows.sort()
    out = sys.stdout
    for _, line in rows:
        out.write(line + "\n")


main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
