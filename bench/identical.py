#!/usr/bin/env python3
"""Record what drip writes for a fixed list of commands, and compare two records.

    python3 bench/identical.py DRIP_BINARY OUTDIR [--root DIR] [--bench-log PATH]
    python3 bench/identical.py --compare DIR_A DIR_B

The first form runs about 170 `drip audit` and `drip size` commands on the
shipped fixtures (every report format, the eight policy families, --policies,
--decisions, --plot, --timeline, --compare, thresholds, --nginx-conf, size's
--per, --headroom, --current, --patch, the access-log formats, ndjson and
stdin input, the help texts, and one-line usage errors) and stores, for each
command NAME:

    OUTDIR/NAME/cmd        the command line (the binary written as `drip`)
    OUTDIR/NAME/stdout
    OUTDIR/NAME/stderr
    OUTDIR/NAME/status     the exit status
    OUTDIR/NAME/files/F    every file the command wrote (decisions, plots, patches)

and OUTDIR/SHA256SUMS, one line per artifact, sorted by name. OUTDIR/RUN
(the binary, the root, the wall time of each command) is not an artifact: it
differs between runs.

Commands run with the working directory DIR (--root, default: the current
directory), which must hold fixtures/ and bench/policies8.txt, with a clean
environment (TZ=UTC, C.UTF-8, stdin /dev/null unless a case feeds it) and
argv[0] "drip" whatever the binary's file is called (the help texts print
it). Their output files go to DIR/target/identical-work/NAME/, named by paths
relative to DIR; one run at a time per DIR (a second is refused). Some
outputs hold absolute paths (the patch's apply command, the bench log's
path): two records compare only when both were made with the same --root
and the same --bench-log path, so run both binaries from one checkout:

    cd CHECKOUT && python3 bench/identical.py OLD_DRIP /tmp/old
    cd CHECKOUT && python3 bench/identical.py NEW_DRIP /tmp/new
    python3 bench/identical.py --compare /tmp/old /tmp/new

--bench-log PATH (the seeded log of examples/gen_log, as bench/audit.py and
bench/size.py use it) adds the benchmark runs: audit JSON with one policy and
with bench/policies8.txt, --decisions (only its hash is kept: the file is
deleted), and bench/size.py's 16-rate sweep with -p gcra and with -p nginx.
The log's own hash is an artifact too.

The second form prints every artifact that differs, or is in one record
only, with the first differing lines of text artifacts; it exits 1 when any
does, 0 when the two records are identical.
"""
import argparse
import difflib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

NASA = "fixtures/nasa_19950801.tsv"
CLF = "fixtures/nasa_19950801.log.gz"
SMALL = "fixtures/small.csv"
POLICIES = "fixtures/policies.txt"
P8 = "bench/policies8.txt"
CONF = "fixtures/nginx/discourse/discourse.conf"
WORK = "target/identical-work"
INPUTS = WORK + "/_inputs"
FORMATS = ["table", "json", "csv", "markdown", "html"]
# bench/size.py's sweep.
RATES = "1/min,2/min,5/min,10/min,20/min,30/min,1/s,2/s,3/s,5/s,7/s,10/s,15/s,20/s,30/s,50/s"

# One spec of each family, for the audits.
FAMILIES = {
    "token-bucket": "token-bucket:rate=2/s,burst=5",
    "leaky-bucket": "leaky-bucket:rate=2/s,capacity=5",
    "gcra": "gcra:rate=2/s,burst=5",
    "shaper": "shaper:rate=2/s,burst=5",
    "fixed-window": "fixed-window:limit=20,window=10s",
    "sliding-window": "sliding-window:limit=20,window=10s",
    "sliding-log": "sliding-log:limit=20,window=10s",
    "nginx": "nginx:rate=2r/s,burst=5",
}
# The parameters and shapes beyond one plain spec a family.
VARIANTS = [
    "nginx:rate=10r/m,burst=5,delay=2,label=nginx-delay",
    "nginx:rate=5r/s,burst=10,nodelay",
    "nginx:rate=7r/m,burst=2,label=nginx-7rm",
    "fixed-window:limit=10,window=1m,align=first-hit,count=all",
    "shaper:rate=1/s,max-wait=5s",
    "gcra:rate=1.5k/min,burst=3,key=none,label=global",
    "token-bucket:rate=1/200ms,burst=2",
    "nginx:rate=2r/s,burst=4 + nginx:rate=100r/s,burst=50,key=none",
]


class Case:
    def __init__(self, name, args, stdin=None, hash_only=(), timeout=120):
        self.name = name
        self.args = args
        self.stdin = stdin  # bytes, or a path relative to the root
        self.hash_only = set(hash_only)  # written files kept as their hash only
        self.timeout = timeout


def w(case, name):
    """The path (relative to the root) of an output file of a case."""
    return f"{WORK}/{case}/{name}"


def cases():
    c = []

    def add(name, *args, **kw):
        c.append(Case(name, list(args), **kw))

    # Help and version: the command-line surface.
    add("version", "--version")
    add("help", "--help")
    add("help-audit", "audit", "--help")
    add("help-size", "size", "--help")
    add("help-audit-short", "audit", "-h")
    add("help-size-short", "size", "-h")

    # ---- audit ---------------------------------------------------------------
    nasa = [NASA, "--key-column", "host"]
    for f in FORMATS:
        add(f"audit-policies-{f}", "audit", *nasa, "--policies", POLICIES, "-f", f)
    for f in FORMATS:
        add(f"audit-policies8-{f}", "audit", *nasa, "--policies", P8, "-f", f)
    fam = [a for s in FAMILIES.values() for a in ("-p", s)]
    for f in FORMATS:
        add(f"audit-families-{f}", "audit", *nasa, *fam, "-f", f)
    clf = [CLF, "--key-column", "remote_addr"]
    for name, spec in FAMILIES.items():
        add(f"audit-clf-{name}-json", "audit", *clf, "-p", spec, "-f", "json")
    var = [a for s in VARIANTS for a in ("-p", s)]
    for f in ("table", "json"):
        add(f"audit-variants-{f}", "audit", *nasa, *var, "-f", f)
    add("audit-top3-keyprefix", "audit", *clf, "--key-prefix", "16", "--top", "3",
        "-p", "gcra:rate=1/s,burst=10")
    add("audit-threads1", "audit", *nasa, "--policies", P8, "--threads", "1", "-f", "json")
    add("audit-threads3", "audit", *nasa, "--policies", P8, "--threads", "3", "-f", "json")

    # --decisions
    n = "audit-decisions"
    add(n, "audit", *nasa, "--policies", POLICIES, "--decisions", w(n, "decisions.csv"))
    n = "audit-decisions-families-threads2"
    add(n, "audit", *nasa, *fam, "--threads", "2", "-q", "--decisions", w(n, "decisions.csv"))
    n = "audit-decisions-nginx-conf"
    add(n, "audit", CLF, "--nginx-conf", CONF, "--decisions", w(n, "decisions.csv"))
    add("audit-decisions-stdout-small", "audit", SMALL, "--key-column", "client",
        "--cost-column", "cost", "--policies", POLICIES, "--decisions", "-", "-q")
    add("audit-decisions-seed000", "audit", "fixtures/seeds/seed000.csv", "--time-format",
        "epoch-ms", "-p", "gcra:rate=3/s", "-p", "leaky-bucket:rate=3/s,label=leaky",
        "--decisions", "-", "-q")
    add("audit-decisions-seed002", "audit", "fixtures/seeds/seed002.csv", "--time-format",
        "epoch-ms", "-p", "leaky-bucket:rate=1/s,capacity=3", "--decisions", "-", "-q")
    add("audit-decisions-seed003", "audit", "fixtures/seeds/seed003.csv", "--time-format",
        "epoch-ms", "--key-column", "client", "-p", "shaper:rate=1/2s,burst=2",
        "--decisions", "-", "-q")
    add("audit-decisions-seed004", "audit", "fixtures/seeds/seed004.csv", "--time-format",
        "epoch-s", "--time-column", "tick", "-p", "leaky-bucket:rate=1/s,capacity=3",
        "--decisions", "-", "-q")

    # --plot, --timeline
    n = "audit-plot"
    add(n, "audit", *nasa, "--policies", POLICIES, "--plot", w(n, "timeline.svg"))
    n = "audit-plot-html"
    add(n, "audit", *nasa, "--policies", POLICIES, "--plot", w(n, "timeline.svg"), "-f", "html")
    n = "audit-plot-timeline10m"
    add(n, "audit", *nasa, *fam, "--timeline", "10m", "--plot", w(n, "timeline.svg"))
    for f in ("table", "json", "csv", "markdown"):
        add(f"audit-timeline1h-{f}", "audit", *nasa, "--policies", POLICIES,
            "--timeline", "1h", "-f", f)
    # The golden reports of tests/audit.rs, and their HTML.
    for f in FORMATS:
        add(f"audit-small-golden-{f}", "audit", SMALL, "--key-column", "client",
            "--cost-column", "cost", "--policies", POLICIES, "--timeline", "1s",
            "--top", "3", "-f", f, "--quiet")

    # --compare
    cmp_ = [*nasa, "-p", "gcra:rate=1/s,burst=5,label=old", "-p",
            "nginx:rate=1r/s,burst=5,label=new", "-p", "shaper:rate=2/s,burst=3,label=shaped"]
    for f in FORMATS:
        add(f"audit-compare-{f}", "audit", *cmp_, "--compare", "-f", f)
    add("audit-compare-thresholds", "audit", *cmp_, "--compare", "--max-newly-dropped", "10",
        "--max-keys-newly-hurt", "new=1%")

    # Thresholds (exit 1 when crossed)
    add("audit-ci-markdown", "audit", *nasa, "--policies", POLICIES, "--max-drop-rate", "1",
        "--max-wait", "2s", "-f", "markdown")
    add("audit-thresholds-labels", "audit", *nasa, "--policies", POLICIES,
        "--max-drops", "per-client=100", "--max-keys-hurt", "5%", "--max-wait", "egress=10s")
    add("audit-thresholds-pass", "audit", *nasa, "--policies", POLICIES,
        "--max-drop-rate", "50", "--max-wait", "1h")

    # Inputs: stdin, gz on stdin, ndjson, combined, ALB, the access-log formats.
    add("audit-stdin-csv", "audit", "-", "--key-column", "client", "-p", "gcra:rate=2/s,burst=3",
        stdin=SMALL)
    add("audit-stdin-gz", "audit", "--key-column", "remote_addr", "-p", "nginx:rate=2r/s,burst=2",
        "-f", "json", stdin=CLF)
    add("audit-ndjson-nested", "audit", f"{INPUTS}/nested.ndjson", "--key-column",
        "request.remote_ip", "--policies", POLICIES, "-f", "json")
    add("audit-ndjson-flat", "audit", f"{INPUTS}/flat.ndjson", "--key-column", "host",
        "--policies", POLICIES)
    add("audit-ndjson-input-format", "audit", f"{INPUTS}/flat.ndjson", "--input-format",
        "ndjson", "--key-column", "host", "--cost-column", "cost", "-p", "gcra:rate=1/s,burst=4",
        "-f", "csv")
    apache = "fixtures/logs/apache-elastic-examples-60.log"
    add("audit-combined-apache", "audit", apache, "--key-column", "remote_addr",
        "-p", "gcra:rate=1/s,burst=2", "-f", "json")
    add("audit-combined-apache-uri-key", "audit", apache, "--input-format", "combined",
        "--key-column", "uri,remote_addr", "-p", "nginx:rate=10r/m,burst=5")
    add("audit-combined-apache-reorder-too-small", "audit", apache, "--reorder-window", "10s",
        "-p", "gcra:rate=1/s")
    add("audit-alb", "audit", "fixtures/logs/alb-application-lb-http.log", "--key-column",
        "client", "--strip-port", "-p", "gcra:rate=1/s,burst=2", "-f", "json")
    # --quiet: the files are opened on threads of their own, so the order of
    # their format notes on stderr varies from run to run.
    add("audit-merge-clf-tsv", "audit", "--merge", CLF, NASA, "--key-column", "0",
        "-p", "gcra:rate=1/s,burst=5", "--quiet")
    for fname in sorted(os.listdir("fixtures/formats")):
        stem = fname.rsplit(".", 1)[0].replace("_", "-")
        add(f"audit-format-{stem}", "audit", f"fixtures/formats/{fname}",
            "-p", "gcra:rate=1/s,burst=2")
    add("audit-format-haproxy-lnav-skip-bad", "audit", "fixtures/formats/haproxy_lnav.log",
        "--skip-bad", "--key-column", "client", "-p", "gcra:rate=1/s,burst=2")
    add("audit-format-w3c-incapsula-reorder", "audit", "fixtures/formats/w3c_incapsula.log",
        "--reorder-window", "2d", "--key-column", "c-ip", "-p", "gcra:rate=1/s,burst=2")

    # --nginx-conf
    for f in FORMATS:
        add(f"audit-conf-{f}", "audit", CLF, "--nginx-conf", CONF, "-f", f)
    n = "audit-conf-plot"
    add(n, "audit", CLF, "--nginx-conf", CONF, "--plot", w(n, "conf.svg"), "--timeline", "1h")
    add("audit-conf-fail-untested", "audit", CLF, "--nginx-conf", CONF, "--fail-untested")
    add("audit-conf-location", "audit", CLF, "--nginx-conf", CONF, "--nginx-location",
        "@discourse", "-f", "json")
    add("audit-conf-static", "audit", CLF, "--nginx-conf", CONF, "--static",
        r"\.(gif|jpg|xbm)$", "--max-drop-rate", "0.5")
    add("audit-conf-vars-tsv", "audit", NASA, "--nginx-conf", CONF, "--nginx-var",
        "remote_addr=host", "--nginx-var", "uri=url")
    add("audit-conf-compare-spec", "audit", CLF, "--nginx-conf", CONF,
        "--nginx-conf", f"{INPUTS}/nginx/proposed.conf", "--compare", "-f", "markdown")

    # ---- size ----------------------------------------------------------------
    size_families = ["token-bucket", "leaky-bucket", "gcra", "shaper", "fixed-window",
                     "sliding-window", "sliding-log", "nginx"]
    for fam_ in size_families:
        add(f"size-{fam_}", "size", *nasa, "-p", fam_, "--max-drop-rate", "0.1")
    for f in FORMATS[1:]:
        add(f"size-nginx-{f}", "size", *nasa, "-p", "nginx", "--max-drop-rate", "0.1", "-f", f)
    add("size-gcra-json", "size", *nasa, "-p", "gcra", "--max-drop-rate", "0.1", "-f", "json")
    add("size-sliding-window-csv", "size", *nasa, "-p", "sliding-window", "--max-drop-rate",
        "0.1", "-f", "csv")
    add("size-nginx-nodelay-range", "size", *nasa, "-p", "nginx:nodelay", "--rate",
        "1r/s..20r/s", "--max-drop-rate", "0.1")
    add("size-shaper-global", "size", NASA, "-p", "shaper:key=none", "--rate",
        "1/s,2/s,5/s,10/s", "--max-drops", "0", "--max-wait", "30s")
    add("size-fixed-window-first-hit-current", "size", *nasa, "-p",
        "fixed-window:align=first-hit,count=all", "--window", "1m,1h", "--max-keys-hurt", "1%",
        "--current", "fixed-window:window=1h,limit=50,align=first-hit,count=all")
    add("size-gcra-per1h", "size", NASA, "-p", "gcra", "--max-drop-rate", "0.1", "--per", "1h")
    add("size-nginx-per1h-json", "size", *nasa, "-p", "nginx", "--max-drop-rate", "0.1",
        "--per", "1h", "-f", "json")
    add("size-nginx-headroom1.5", "size", *nasa, "-p", "nginx", "--max-drop-rate", "0.1",
        "--headroom", "1.5")
    add("size-nginx-headroom2-global", "size", NASA, "-p", "nginx", "--max-drop-rate", "1",
        "--headroom", "2")
    add("size-gcra-headroom1.5-json", "size", *nasa, "-p", "gcra", "--max-drop-rate", "0.1",
        "--headroom", "1.5", "-f", "json")
    n = "size-nginx-current-plot"
    add(n, "size", *nasa, "-p", "nginx", "--max-drop-rate", "0.1", "--current",
        "nginx:rate=1r/s,burst=5", "--plot", w(n, "frontier.svg"))
    n = "size-gcra-global-plot-html"
    add(n, "size", NASA, "-p", "gcra", "--max-drop-rate", "0.1", "--plot",
        w(n, "frontier.svg"), "-f", "html")
    n = "size-sliding-log-plot"
    add(n, "size", *nasa, "-p", "sliding-log", "--max-drop-rate", "0.1", "--window",
        "10s,1m", "--plot", w(n, "frontier.svg"))
    add("size-nginx-verbose", "size", *nasa, "-p", "nginx", "--max-drop-rate", "0.1", "-v")
    add("size-shaper-max-wait-none", "size", *nasa, "-p", "shaper", "--max-drop-rate", "0.1",
        "--max-wait", "none")
    add("size-token-bucket-max-drops-top5", "size", *nasa, "-p", "token-bucket",
        "--max-drops", "20", "--top", "5", "--horizon", "10s")
    add("size-gcra-exclude-keys", "size", *nasa, "-p", "gcra", "--max-drops", "0",
        "--exclude-keys", f"{INPUTS}/exclude.txt")
    add("size-gcra-rate-range", "size", *nasa, "-p", "gcra", "--rate", "1/s..50/s",
        "--max-drop-rate", "0.1", "--max-keys-hurt", "10")
    add("size-small-cost-scan", "size", SMALL, "--key-column", "client", "--cost-column",
        "cost", "-p", "gcra", "--rate", "1/s,2/s,5/s", "--horizon", "1s",
        "--max-drop-rate", "10", "-v")
    add("size-ndjson-nested", "size", f"{INPUTS}/nested.ndjson", "--key-column",
        "request.remote_ip", "-p", "nginx", "--max-drop-rate", "0.5")
    add("size-stdin-gz", "size", "-", "--key-column", "remote_addr", "-p", "nginx:nodelay",
        "--max-drop-rate", "0.1", "-f", "json", stdin=CLF)
    add("size-nothing-meets", "size", *nasa, "-p", "shaper", "--rate", "1/min,2/min",
        "--max-drops", "0", "--max-wait", "1s")

    # size --nginx-conf
    size_conf = ["size", CLF, "--max-drop-rate", "0.1", "--nginx-conf", CONF]
    add("size-conf", *size_conf)
    n = "size-conf-patch"
    add(n, *size_conf, "--patch", w(n, "limits.patch"))
    n = "size-conf-patch-json"
    add(n, *size_conf, "--patch", w(n, "limits.patch"), "-f", "json")
    add("size-conf-patch-stdout", *size_conf, "--patch", "-")
    add("size-conf-markdown", *size_conf, "-f", "markdown")
    add("size-conf-vars-tsv", "size", NASA, "--max-drops", "50", "--nginx-conf", CONF,
        "--nginx-var", "remote_addr=host", "--nginx-var", "uri=url")

    # ---- usage and input errors: one line, exit 2 ----------------------------
    add("err-audit-no-policy", "audit", SMALL)
    add("err-audit-bad-rate", "audit", SMALL, "-p", "gcra:rate=fast")
    add("err-audit-unknown-policy", "audit", SMALL, "-p", "bucket")
    add("err-audit-bad-param", "audit", SMALL, "-p", "nginx:rate=5r/s,bust=3")
    add("err-audit-bad-policies-file", "audit", SMALL, "--policies", f"{INPUTS}/bad-policies.txt")
    add("err-audit-missing-file", "audit", "nope.csv", "-p", "gcra:rate=1/s")
    add("err-audit-directory", "audit", "fixtures", "-p", "gcra:rate=1/s")
    add("err-audit-file-twice", "audit", SMALL, SMALL, "-p", "gcra:rate=1/s")
    add("err-audit-bad-format", "audit", SMALL, "-p", "gcra:rate=1/s", "-f", "yaml")
    add("err-audit-bad-threshold", "audit", SMALL, "-p", "gcra:rate=1/s", "--max-drop-rate", "lots")
    add("err-audit-unknown-label", "audit", SMALL, "-p", "gcra:rate=1/s", "--max-drop-rate", "x=5")
    add("err-audit-bad-time-column", "audit", SMALL, "-p", "gcra:rate=1/s", "--time-column", "when")
    add("err-audit-conf-strict-includes", "audit", CLF, "--nginx-conf", CONF, "--strict-includes")
    add("err-audit-conf-missing", "audit", CLF, "--nginx-conf", "fixtures/nginx/nope.conf")
    add("err-audit-conf-bad-rate", "audit", CLF, "--nginx-conf", f"{INPUTS}/nginx/bad-rate.conf")
    add("err-audit-conf-unclosed", "audit", CLF, "--nginx-conf", f"{INPUTS}/nginx/unclosed.conf")
    add("err-audit-conf-unknown-zone", "audit", CLF, "--nginx-conf",
        f"{INPUTS}/nginx/unknown-zone.conf")
    add("err-size-no-target", "size", *nasa, "-p", "gcra")
    add("err-size-bad-rate", "size", *nasa, "-p", "gcra", "--rate", "fast", "--max-drops", "0")
    add("err-size-unknown-policy", "size", *nasa, "-p", "bucket", "--max-drops", "0")
    add("err-size-patch-without-conf", "size", *nasa, "-p", "nginx", "--max-drops", "0",
        "--patch", w("err-size-patch-without-conf", "x.patch"))
    add("err-size-exclude-keys-global", "size", NASA, "-p", "gcra", "--max-drops", "0",
        "--exclude-keys", f"{INPUTS}/exclude.txt")
    add("err-size-missing-file", "size", "nope.csv", "-p", "gcra", "--max-drops", "0")
    add("err-size-audit-only-option", *size_conf, "--strict-includes")
    return c


def bench_cases(log):
    c = [
        Case("bench-audit-1-policy-json", ["audit", log, "--key-column", "client", "-p",
             "gcra:rate=5/s,burst=20", "--quiet", "-f", "json"], timeout=600),
        Case("bench-audit-policies8-json", ["audit", log, "--key-column", "client",
             "--policies", P8, "--quiet", "-f", "json"], timeout=600),
        Case("bench-audit-decisions", ["audit", log, "--key-column", "client", "-p",
             "gcra:rate=5/s,burst=20", "--quiet", "--decisions",
             w("bench-audit-decisions", "decisions.csv")],
             hash_only=["decisions.csv"], timeout=600),
    ]
    for fam in ("gcra", "nginx"):
        c.append(Case(f"bench-size-{fam}-sweep-json",
                      ["size", log, "--key-column", "client", "-p", fam, "--rate", RATES,
                       "--max-drop-rate", "0.5", "--quiet", "-f", "json"], timeout=600))
    return c


def write_inputs(root):
    """Inputs derived from the fixtures, written under the work folder."""
    d = os.path.join(root, INPUTS)
    os.makedirs(os.path.join(d, "nginx"), exist_ok=True)
    with open(os.path.join(root, NASA), encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        rows = [dict(zip(header, line.rstrip("\n").split("\t"))) for _, line in
                zip(range(4000), f)]
    nested, flat = [], []
    for i, r in enumerate(rows):
        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(r["time"])))
        nested.append(json.dumps({"ts": ts, "request": {"remote_ip": r["host"], "method":
                      r["method"], "uri": r["url"]}, "status": int(r["response"])},
                      ensure_ascii=False))
        flat.append(json.dumps({"time": int(r["time"]), "host": r["host"], "url": r["url"],
                    "cost": 1 + i % 3}, ensure_ascii=False))
    for name, lines in (("nested.ndjson", nested), ("flat.ndjson", flat)):
        with open(os.path.join(d, name), "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(lines) + "\n")
    files = {
        "exclude.txt": "isaac.ksc.nasa.gov\nsolg2.bnsc.rl.ac.uk\n",
        "bad-policies.txt": "gcra:rate=1/s\n# fine\nleaky:rate=2/s\n",
        "nginx/proposed.conf": (
            "limit_req_zone $binary_remote_addr zone=api:1m rate=2r/s;\n"
            "server {\n  listen 80;\n  location / {\n    limit_req zone=api burst=5;\n  }\n"
            "  location /images/ {\n  }\n}\n"),
        "nginx/bad-rate.conf": (
            "limit_req_zone $binary_remote_addr zone=api:1m rate=fast;\n"
            "server {\n  location / {\n    limit_req zone=api burst=5;\n  }\n}\n"),
        "nginx/unclosed.conf": (
            "limit_req_zone $binary_remote_addr zone=api:1m rate=2r/s;\n"
            "server {\n  location / {\n    limit_req zone=api burst=5;\n  }\n"),
        "nginx/unknown-zone.conf": (
            "server {\n  location / {\n    limit_req zone=nope burst=5;\n  }\n}\n"),
    }
    for name, text in files.items():
        with open(os.path.join(d, name), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def clean_env():
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "LC_ALL": "C.UTF-8", "TZ": "UTC", "HOME": os.environ.get("HOME", "/"),
           "TERM": "dumb", "COLUMNS": "100"}
    return env


def run_all(drip, outdir, root, bench_log):
    drip = os.path.abspath(drip)
    root = os.path.abspath(root)
    for need in (NASA, P8, CONF):
        if not os.path.exists(os.path.join(root, need)):
            sys.exit(f"identical.py: {os.path.join(root, need)} not found: give --root")
    if os.path.exists(outdir):
        if os.listdir(outdir):
            sys.exit(f"identical.py: {outdir} exists and is not empty")
    os.makedirs(outdir, exist_ok=True)
    os.chdir(root)
    os.makedirs("target", exist_ok=True)
    lock = open(os.path.join("target", "identical-work.lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit(f"identical.py: another run is using {os.path.join(root, WORK)}; "
                 "one run at a time per --root")
    shutil.rmtree(WORK, ignore_errors=True)
    write_inputs(root)
    todo = cases()
    if bench_log:
        bench_log = os.path.abspath(bench_log)
        todo += bench_cases(bench_log)
    names = [c.name for c in todo]
    assert len(names) == len(set(names)), "duplicate case names"
    env = clean_env()
    sums = {}
    timings = []
    t_all = time.monotonic()
    if bench_log:
        sums["bench-input/log.sha256"] = sha256_file(bench_log)
    for c in todo:
        work = os.path.join(root, WORK, c.name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        d = os.path.join(outdir, c.name)
        os.makedirs(d)
        stdin = c.stdin
        if isinstance(stdin, str):
            with open(stdin, "rb") as f:
                stdin = f.read()
        t0 = time.monotonic()
        try:
            # argv[0] is "drip" whatever the binary's file is called: the help
            # texts print it.
            p = subprocess.run(["drip"] + c.args, executable=drip, cwd=root, env=env,
                               input=stdin if stdin is not None else None,
                               stdin=None if stdin is not None else subprocess.DEVNULL,
                               capture_output=True, timeout=c.timeout)
            out, err, status = p.stdout, p.stderr, str(p.returncode)
        except subprocess.TimeoutExpired as e:
            out, err, status = e.stdout or b"", e.stderr or b"", "timeout"
        dt = time.monotonic() - t0
        timings.append((c.name, dt, status))
        arts = {"cmd": " ".join(["drip"] + [shell_quote(a) for a in c.args]).encode() + b"\n",
                "stdout": out, "stderr": err, "status": (status + "\n").encode()}
        for fname in sorted(walk(work)):
            src = os.path.join(work, fname)
            if fname in c.hash_only:
                sums[f"{c.name}/files/{fname}"] = sha256_file(src)
                with open(os.path.join(d, "hash-only-" + fname.replace("/", "_")), "w") as f:
                    f.write(sums[f"{c.name}/files/{fname}"] + "\n")
                continue
            with open(src, "rb") as f:
                arts["files/" + fname] = f.read()
        shutil.rmtree(work)
        for k, v in arts.items():
            path = os.path.join(d, k)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(v)
            sums[f"{c.name}/{k}"] = hashlib.sha256(v).hexdigest()
        print(f"{dt:7.2f}s  {status:>3}  {c.name}", flush=True)
    shutil.rmtree(WORK, ignore_errors=True)
    os.unlink(lock.name)
    lock.close()
    total = time.monotonic() - t_all
    with open(os.path.join(outdir, "SHA256SUMS"), "w") as f:
        for k in sorted(sums):
            f.write(f"{sums[k]}  {k}\n")
    with open(os.path.join(outdir, "RUN"), "w") as f:
        f.write(f"drip {drip}\nroot {root}\nbench-log {bench_log or '-'}\n")
        f.write(f"commands {len(todo)}\nartifacts {len(sums)}\ntotal {total:.1f}s\n")
        for name, dt, status in timings:
            f.write(f"{dt:8.2f}s {status:>7} {name}\n")
    print(f"{len(todo)} commands, {len(sums)} artifacts, {total:.1f}s; "
          f"{os.path.join(outdir, 'SHA256SUMS')}")


def walk(top):
    for dirpath, _, files in os.walk(top):
        for name in files:
            yield os.path.relpath(os.path.join(dirpath, name), top)


def shell_quote(a):
    if a and all(ch.isalnum() or ch in "-_./=:,+@%" for ch in a):
        return a
    return "'" + a.replace("'", "'\\''") + "'"


def read_sums(d):
    sums = {}
    with open(os.path.join(d, "SHA256SUMS")) as f:
        for line in f:
            h, name = line.rstrip("\n").split("  ", 1)
            sums[name] = h
    return sums


def read_run(d):
    info = {}
    try:
        with open(os.path.join(d, "RUN")) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition(" ")
                if k in ("root", "bench-log"):
                    info[k] = v
    except OSError:
        pass
    return info


def compare(a, b):
    sa, sb = read_sums(a), read_sums(b)
    ra, rb = read_run(a), read_run(b)
    for k in ("root", "bench-log"):
        if ra.get(k) != rb.get(k):
            print(f"warning: {k} differs: {ra.get(k)} vs {rb.get(k)} "
                  "(absolute paths in outputs will differ)")
    differ = 0
    for name in sorted(set(sa) | set(sb)):
        if name not in sb:
            print(f"only in {a}: {name}")
        elif name not in sa:
            print(f"only in {b}: {name}")
        elif sa[name] != sb[name]:
            print(f"differs: {name}")
            show_diff(os.path.join(a, name), os.path.join(b, name))
        else:
            continue
        differ += 1
    if differ:
        print(f"{differ} of {len(set(sa) | set(sb))} artifacts differ")
        return 1
    print(f"identical: {len(sa)} artifacts")
    return 0


def show_diff(pa, pb, limit=12):
    try:
        with open(pa, "rb") as f:
            ta = f.read().decode("utf-8").splitlines()
        with open(pb, "rb") as f:
            tb = f.read().decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return  # hash-only or binary: the name says enough
    lines = list(difflib.unified_diff(ta, tb, "a", "b", n=1, lineterm=""))[2:]
    for line in lines[:limit]:
        print("    " + line[:200])
    if len(lines) > limit:
        print(f"    ... {len(lines) - limit} more diff lines")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--compare":
        ap = argparse.ArgumentParser(prog="identical.py --compare")
        ap.add_argument("--compare", action="store_true")
        ap.add_argument("dir_a")
        ap.add_argument("dir_b")
        a = ap.parse_args()
        sys.exit(compare(a.dir_a, a.dir_b))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("drip", help="the drip binary")
    ap.add_argument("outdir", help="where the record goes (new or empty)")
    ap.add_argument("--root", default=".", help="the checkout the commands run in "
                    "(default: the current directory)")
    ap.add_argument("--bench-log", help="the 10M-row log of examples/gen_log")
    a = ap.parse_args()
    run_all(a.drip, os.path.abspath(a.outdir), a.root, a.bench_log)


if __name__ == "__main__":
    main()
