#!/usr/bin/env bash
# run.sh HARNESS SRCDIR NAME SECONDS: CTest's bounded run of one libFuzzer harness. Fuzzes a
# copy of SRCDIR/corpus/NAME (the tree is never written) with SRCDIR/dict/NAME.dict for SECONDS
# seconds; any crash, leak, sanitizer report, timeout (10 s on one input) or finding fails the
# test, and the input that caused it is kept in ./fuzz-NAME-findings/ of the build directory.
set -euo pipefail
harness=$1 src=$2 name=$3 seconds=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/corpus/$name" "$work/corpus"
findings="$PWD/fuzz-$name-findings"
mkdir -p "$findings"
if ! "$harness" "$work/corpus" -dict="$src/dict/$name.dict" -max_total_time="$seconds" \
     -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" \
     2>"$work/log"; then
  grep -m1 '^INFO: Seed:' "$work/log" || true # rerun with -seed=N to follow the same path
  tail -n 60 "$work/log"
  echo "fuzz_$name: finding kept in $findings/ (reproduce: $harness FILE)" >&2
  exit 1
fi
rmdir "$findings" 2>/dev/null || true # nothing found: leave no empty folder
grep -E '^(#[0-9]+.*DONE|stat::(number_of_executed_units|average_exec_per_sec|new_units_added))' \
  "$work/log" || true
