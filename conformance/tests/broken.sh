#!/bin/bash
# conformance_broken: every broken plugin is caught by coil-conformance, with the right status
# and reason. Usage: broken.sh CONFORMANCE LOADER_TEST_PLUGIN_DIR BROKEN_PLUGIN_DIR
set -uo pipefail
conf=$1 loader=$2 broken=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect NAME PLUGIN ARGS... -- PATTERN: the suite exits 1 and a failed case's line in the CSV
# matches PATTERN (an extended regular expression).
expect() {
  local name=$1 plugin=$2
  shift 2
  local args=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  local pattern=$2
  "$conf" --plugin "$plugin" -j 2 --csv "$tmp/$name.csv" "${args[@]}" >"$tmp/$name.out" 2>&1
  local rc=$?
  if [ $rc -ne 1 ]; then
    echo "FAIL: $name: exit status $rc, expected 1"; fails=$((fails + 1)); return
  fi
  # (no grep -q after a pipe: under pipefail the first grep's SIGPIPE would fail the test)
  if ! grep ',fail,' "$tmp/$name.csv" | grep -E "$pattern" >/dev/null; then
    echo "FAIL: $name: no failed case matches /$pattern/:"; grep ',fail,' "$tmp/$name.csv" | head -3
    fails=$((fails + 1)); return
  fi
  echo "ok: $name caught: $(grep ',fail,' "$tmp/$name.csv" | grep -E "$pattern" | head -n 1 | cut -c1-150 || true)"
}

expect wrong_major "$loader/libcoil_wrong_major.so" --tier abi -- '^abi,load,.*ABI'
expect no_entry "$loader/libcoil_no_entry.so" --tier abi -- '^abi,load,.*coil_plugin_entry'
expect null_table "$loader/libcoil_null_table.so" --tier abi -- '^abi,load,.*declined'
expect garbage_meta "$loader/libcoil_garbage_meta.so" --tier abi -- '^abi,load,.*metadata'
expect missing_required "$loader/libcoil_missing_required.so" --tier abi -- '^abi,load,.*missing'
expect out_of_bounds "$broken/libcoil_broken_oob.so" --tier op --filter 'op/aten\.(add|mul)\.Tensor/' -- '^op,.*guard bytes'
expect wrong_numbers "$broken/libcoil_broken_wrong.so" --tier op,model --filter '(op/aten\.(add|relu|sum)\.|model/e01)' -- '^(op|model),.*(NMSE|expected|differs)'

expect broken_emit "$broken/libcoil_emit_broken.so" --tier emit,abi -- '^emit,.*cc rejects'

# an emit-only plugin that writes good C passes the emit and abi tiers (and skips op and model)
if "$conf" --plugin "$broken/libcoil_emit_ok.so" -j 2 --tier emit,abi,model --csv "$tmp/emit_ok.csv" >"$tmp/emit_ok.out" 2>&1 &&
   grep -q '^emit,.*,pass,' "$tmp/emit_ok.csv" && grep -q '^model,.*,skipped,' "$tmp/emit_ok.csv"; then
  echo "ok: an emit-only plugin with valid C passes the emit tier"
else
  echo "FAIL: the emit-only plugin with valid C:"; tail -5 "$tmp/emit_ok.out"; fails=$((fails + 1))
fi

# the broken ones are caught, and the good one (interp, same filter) is not
if "$conf" --plugin interp -j 2 --tier op --filter 'op/aten\.(add|mul)\.Tensor/' >"$tmp/good.out" 2>&1; then
  echo "ok: interp passes the same cases"
else
  echo "FAIL: interp fails the cases the broken plugins are checked with"; fails=$((fails + 1))
fi
[ $fails -eq 0 ] || { echo "$fails broken plugin(s) not caught as expected"; exit 1; }
echo "every broken plugin was caught"
