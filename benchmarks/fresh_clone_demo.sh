#!/usr/bin/env bash
# A newcomer's first run, timed: clone -> make setup -> make demo (the three products), per step and in
# all, for N fresh clones of REPO placed beside it (so that ../shared, the trained detector's data,
# resolves as it does for REPO; elsewhere the demo runs without the trained detector), removed at the
# end; the demo's verdict lines are kept.
#
#     benchmarks/fresh_clone_demo.sh [REPO=.] [N=3]
#
# Prints `clone<i>_<step>_seconds: value` lines, each clone's verdict lines, and the median total. The
# installer's cache (uv's, pip's) is whatever this machine has: say whether it was warm when you report.
set -euo pipefail
repo=$(cd "${1:-.}" && pwd)
n=${2:-3}
parent=$(dirname "$repo")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch" "$parent"/fresh-clone-*-'$$ EXIT
totals=()
for i in $(seq 1 "$n"); do
  dir="$parent/fresh-clone-$i-$$"
  t0=$(date +%s.%N)
  git clone -q "$repo" "$dir"
  t1=$(date +%s.%N)
  make -C "$dir" setup >"$scratch/setup$i.log" 2>&1
  t2=$(date +%s.%N)
  make -C "$dir" demo >"$scratch/demo$i.log" 2>&1
  t3=$(date +%s.%N)
  printf 'clone%d_clone_seconds: %.1f\nclone%d_setup_seconds: %.1f\nclone%d_demo_seconds: %.1f\nclone%d_total_seconds: %.1f\n' \
    "$i" "$(echo "$t1 - $t0" | bc)" "$i" "$(echo "$t2 - $t1" | bc)" "$i" "$(echo "$t3 - $t2" | bc)" \
    "$i" "$(echo "$t3 - $t0" | bc)"
  grep -E "^(export|gate|audit|synthetic|embeddings|one-time|canaries) |wait|detector" \
    "$scratch/demo$i.log" | sed "s/^/clone$i: /" || true
  totals+=("$(echo "$t3 - $t0" | bc)")
done
printf '%s\n' "${totals[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median_total_seconds: %.1f\n", a[int((NR+1)/2)]}'
