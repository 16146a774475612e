#!/usr/bin/env bash
# A clean `cargo test --no-run` of a baseline commit and of another commit,
# alternating, each in an empty target folder of its own.
#
#   bench/build_time.sh [BASELINE_COMMIT] [COMMIT] [ROUNDS]
#
# Prints one line per build (seconds, wall) and the ratio of the medians.
# Each commit is checked out in a temporary worktree; both builds use the
# same toolchain and registry cache (fetched first), so only the compiling
# is timed.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-fe6cd65}
new=${2:-HEAD}
rounds=${3:-2}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; git worktree remove --force "$work/new" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$base"
git worktree add -q --detach "$work/new" "$new"
# Downloads are not compiling: fetch both trees' crates first.
(cd "$work/base" && cargo fetch --locked -q)
(cd "$work/new" && cargo fetch --locked -q)
build() { # DIR TARGET -> seconds
    rm -rf "$2"
    local t0 t1
    t0=$(date +%s.%N)
    if ! (cd "$1" && CARGO_TARGET_DIR="$2" cargo test --locked --no-run -q >"$2.log" 2>&1); then
        echo "the build in $1 failed:" >&2
        tail -20 "$2.log" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}'
}
declare -a before after
for r in $(seq "$rounds"); do
    b=$(build "$work/base" "$work/target-base")
    a=$(build "$work/new" "$work/target-new")
    before+=("$b")
    after+=("$a")
    printf 'round %d: %s %.1f s, %s %.1f s\n' "$r" "$base" "$b" "$new" "$a"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
mb=$(median "${before[@]}")
ma=$(median "${after[@]}")
printf 'median: %s %.1f s, %s %.1f s, ratio %.3f\n' "$base" "$mb" "$new" "$ma" "$(awk -v a="$ma" -v b="$mb" 'BEGIN {print a / b}')"
