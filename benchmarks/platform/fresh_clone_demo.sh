#!/usr/bin/env bash
# A newcomer's first run, timed: clone -> make setup -> make demo (the three products) [-> make test],
# per step and in all, for N fresh clones of REPO, each in its own new temporary folder (nothing beside
# it: the clone must stand alone) with its own EMPTY uv and pip caches (a newcomer has no warm cache),
# removed at the end; the demo's verdict lines are kept.
#
#     benchmarks/platform/fresh_clone_demo.sh [REPO=.] [N=3] [TEST=0]
#
# TEST=1 also times `make test` in each clone. Prints `clone<i>_<step>_seconds: value` lines, the load
# average before each step, each step's CPU seconds over its whole process tree (`_cpu_seconds`, from
# cpu_tree.py: JVMs and Spark workers included; on two idle cores a step takes at least half of them, which a
# busy machine can still tell) and per program (`_cpu_seconds_<program>`), each clone's verdict lines, and the
# median of each step. PIP_FIND_LINKS (a local torch wheel) is passed through as it is: say whether it was set
# when you report. A failed step prints its failed tests (COLUMNS=250: with their reasons) and keeps its whole log
# in $TMPDIR (or /tmp).
set -euo pipefail
repo=$(cd "${1:-.}" && pwd)
n=${2:-3}
with_test=${3:-0}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
steps=(clone setup demo)
[ "$with_test" = 1 ] && steps+=(test)
for i in $(seq 1 "$n"); do
  place=$(mktemp -d)  # a folder of its own: nothing beside the clone
  dir="$place/privtext"
  export UV_CACHE_DIR="$scratch/uv-cache-$i" PIP_CACHE_DIR="$scratch/pip-cache-$i"
  mkdir -p "$UV_CACHE_DIR" "$PIP_CACHE_DIR"
  start=$(date +%s.%N)
  for step in "${steps[@]}"; do
    printf 'clone%d_%s_load: %s\n' "$i" "$step" "$(cut -d' ' -f1 /proc/loadavg)"
    t0=$(date +%s.%N)
    case $step in
      clone) git clone -q "$repo" "$dir" ;;
      *) COLUMNS=250 "${PYTHON:-python3.11}" "$dir/benchmarks/platform/cpu_tree.py" -- make -C "$dir" "$step" \
           >"$scratch/$step$i.log" 2>&1 || { grep -E '^(FAILED|ERROR) |[0-9]+ (passed|failed)' "$scratch/$step$i.log" | tail -40
           kept="${TMPDIR:-/tmp}/fresh_clone_${i}_$step.log"; cp "$scratch/$step$i.log" "$kept"
           tail -20 "$scratch/$step$i.log"; echo "the step's whole log: $kept"; exit 1; } ;;
    esac
    t1=$(date +%s.%N)
    printf 'clone%d_%s_seconds: %.1f\n' "$i" "$step" "$(echo "$t1 - $t0" | bc)" | tee -a "$scratch/times"
    [ "$step" = clone ] || sed -n "s/^cpu_seconds: /clone${i}_${step}_cpu_seconds: /p" "$scratch/$step$i.log" |
      tee -a "$scratch/times"
    [ "$step" = clone ] || sed -n "s/^cpu_seconds_\(.*\): /clone${i}_${step}_cpu_seconds_\1: /p" "$scratch/$step$i.log"
  done
  printf 'clone%d_total_seconds: %.1f\n' "$i" "$(echo "$(date +%s.%N) - $start" | bc)" | tee -a "$scratch/times"
  grep -E "^(export|gate|audit|synthetic|embeddings|one-time|canaries) |wait|detector" \
    "$scratch/demo$i.log" | sed "s/^/clone$i: /" || true
  grep -E "passed|failed|skipped" "$scratch/test$i.log" 2>/dev/null | tail -1 | sed "s/^/clone$i: /" || true
  rm -rf "$place" "$UV_CACHE_DIR" "$PIP_CACHE_DIR"
done
for step in "${steps[@]}" total; do
  grep "_${step}_seconds:" "$scratch/times" | awk '{print $2}' | sort -n |
    awk -v s="$step" '{a[NR]=$1} END {printf "median_%s_seconds: %.1f\n", s, a[int((NR+1)/2)]}'
done
for step in "${steps[@]:1}"; do
  grep "_${step}_cpu_seconds:" "$scratch/times" | awk '{print $2}' | sort -n |
    awk -v s="$step" '{a[NR]=$1} END {if (NR) printf "median_%s_cpu_seconds: %.1f\n", s, a[int((NR+1)/2)]}'
done
