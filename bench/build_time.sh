#!/usr/bin/env bash
# A clean `cargo test --no-run` of a baseline commit and of the working tree,
# alternating, each in an empty target folder of its own.
#
#   bench/build_time.sh [BASELINE_COMMIT] [ROUNDS]
#
# Prints one line per build (seconds, wall) and the ratio of the medians.
# The baseline is checked out in a temporary worktree; both builds use the
# same toolchain and registry cache, so only the compiling is timed (run a
# build of each once first if the cache is cold).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-fe6cd65}
rounds=${2:-2}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$base"
here=$(pwd)
build() { # DIR TARGET -> seconds
    rm -rf "$2"
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$1" && CARGO_TARGET_DIR="$2" cargo test --locked --no-run -q >/dev/null 2>&1)
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
declare -a before after
for r in $(seq "$rounds"); do
    b=$(build "$work/base" "$work/target-base")
    a=$(build "$here" "$work/target-now")
    before+=("$b")
    after+=("$a")
    printf 'round %d: %s %.1f s, working tree %.1f s\n' "$r" "$base" "$b" "$a"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
mb=$(median "${before[@]}")
ma=$(median "${after[@]}")
printf 'median: %s %.1f s, working tree %.1f s, ratio %.3f\n' "$base" "$mb" "$ma" "$(awk -v a="$ma" -v b="$mb" 'BEGIN {print a / b}')"
