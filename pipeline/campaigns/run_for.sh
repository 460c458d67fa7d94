#!/usr/bin/env bash
# Runs a campaign for a time budget: SPEC's `seeds.count` is widened by its own value each round
# (each round a resumable `metaquorum-pipeline campaign`, so a round only runs the new seeds); a
# new round starts only while the budget still holds one more round as long as the last one.
# Usage: run_for.sh SPEC OUT SECONDS [MASTER]
set -euo pipefail
spec=$1 out=$2 budget=$3 master=${4:-'local[*]'}
here=$(cd "$(dirname "$0")/../.." && pwd)
step=$(sed -n 's/^seeds: {start: \([0-9]*\), count: \([0-9]*\)}.*/\2/p' "$spec")
[ -n "$step" ] || { echo "run_for.sh: $spec needs a line 'seeds: {start: S, count: N}'" >&2; exit 2; }
mkdir -p "$out"
start=$(date +%s) count=0 last=0
while :; do
  now=$(date +%s)
  if [ $count -gt 0 ] && [ $((now - start + last)) -gt "$budget" ]; then break; fi
  count=$((count + step))
  sed "s/^seeds: {start: \([0-9]*\), count: [0-9]*}/seeds: {start: \1, count: $count}/" "$spec" > "$out/round.yaml"
  t0=$(date +%s)
  rc=0
  "$here/.venv/bin/metaquorum-pipeline" campaign "$out/round.yaml" --out "$out" --master "$master" --quiet || rc=$?
  last=$(( $(date +%s) - t0 ))
  echo "run_for.sh: round to $count seeds/cell took ${last}s (exit $rc), $(( $(date +%s) - start ))s of ${budget}s" >&2
  [ $rc -le 1 ] || exit $rc
done
echo "run_for.sh: done, $count seeds per cell in $(( $(date +%s) - start ))s" >&2
