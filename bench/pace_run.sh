#!/usr/bin/env bash
# Start-time deviation of `drip pace -- COMMAND` from its schedule, next to
# `drip pace | xargs -P` and GNU parallel `--delay` (when installed) in the
# same run. Each command records its own start (one `sh -c date` spawn per
# record for all); p50/p99 of |start - ideal slot|, and the most starts in
# any sliding second (half-open, as an API counts them).
# Usage: bash bench/pace_run.sh [path/to/drip]
set -euo pipefail
D=${1:-target/release/drip}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
dev() {
    python3 - "$1" "$2" <<'PY'
import sys
t = sorted(int(l) for l in open(sys.argv[1]) if l.strip())
step = 1e9 / float(sys.argv[2])
d = sorted(abs(x - (t[0] + i * step)) / 1e6 for i, x in enumerate(t))
most, lo = 0, 0
for hi in range(len(t)):
    while t[hi] - t[lo] >= 1e9:
        lo += 1
    most = max(most, hi - lo + 1)
print("n=%d p50=%.2fms p99=%.2fms max=%.2fms most-in-1s=%d"
      % (len(t), d[len(d) // 2], d[min(len(d) - 1, int(len(d) * 0.99))], d[-1], most))
PY
}
for spec in ${PACE_RUN_SPECS:-"10 30" "100 300" "1000 2000"}; do
    set -- $spec
    rate=$1 n=$2
    rm -f "$W/a" "$W/b"
    seq "$n" | "$D" pace --no-progress --rate "$rate/s" -j 64 -- sh -c "date +%s%N >> $W/a" _
    seq "$n" | "$D" pace --no-progress --rate "$rate/s" | xargs -P 64 -n1 sh -c "date +%s%N >> $W/b" _
    echo "$rate/s  drip pace -- CMD:      $(dev "$W/a" "$rate")"
    echo "$rate/s  drip pace | xargs -P:  $(dev "$W/b" "$rate")"
    if type -P parallel >/dev/null; then
        rm -f "$W/c"
        delay=$(python3 -c "print(1 / $rate)")
        seq "$n" | parallel --delay "$delay" -j 64 sh -c "'date +%s%N >> $W/c'" _ {}
        echo "$rate/s  parallel --delay:      $(dev "$W/c" "$rate")"
    fi
done
