#!/bin/bash
# golden_inputs.sh — regenerates the inputs of cuda_emit_golden (plugins/cuda/tests/golden/wir/):
# the Wrapper IR programs the cuda plugin is handed for
#   - examples/*.coil, conformance/models/*/graph.coil and golden/graphs/*.coil (the benchmark
#     graphs of `coil bench --backend cuda`, written out from tools/bench_cuda.c), compiled with
#     --backend cuda (what the plugin claims, cuBLAS and cuDNN lines, as it sees them), into
#     NAME.wir; and where the core alone compiles a different program (convolutions as generated
#     kernels), that too, into NAME.core.wir (up to 40 kB);
#   - the conformance op cases listed in golden/op_cases.txt (one case per op template, per op and
#     dtype, and per op and shape class), compiled by the core alone, into op~ID.wir.
# Run it when the Wrapper IR format changes or to cover more graphs, then
# COIL_UPDATE_GOLDEN=1 ctest -R cuda_emit_golden, and review the diff. It needs NVRTC (the plugin's
# compile runs it); the test itself does not.
# Usage: golden_inputs.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
coil=$build/tools/coil conf=$build/conformance/coil-conformance
gold=$src/plugins/cuda/tests/golden
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[plugin.cuda]\narch = sm_90\n' >"$tmp/cuda.ini"
rm -f "$gold"/wir/*.wir
graph() { # NAME GRAPH
  rm -rf "$tmp/d" "$tmp/c"
  COIL_CONFIG="$tmp/cuda.ini" "$coil" compile "$2" --backend cuda --dump "$tmp/d" >"$tmp/log" 2>&1 ||
    { echo "$2: does not compile for cuda:"; tail -3 "$tmp/log"; return 0; }
  cp "$tmp/d/program.wir" "$gold/wir/$1.wir"
  # the plugin's own kernels.cu must be what the test generates from the program it was handed
  cp "$tmp/d/cuda/kernels.cu" "$tmp/plugin_$1.cu"
  COIL_CONFIG=/dev/null "$coil" compile "$2" --dump "$tmp/c" >"$tmp/log" 2>&1 || return 0
  # (not for the large models: the golden data stays under 2 MB)
  cmp -s "$tmp/c/program.wir" "$tmp/d/program.wir" || [ "$(wc -c <"$tmp/c/program.wir")" -gt 40000 ] ||
    cp "$tmp/c/program.wir" "$gold/wir/$1.core.wir"
}
for g in "$src"/examples/*.coil; do graph "ex~$(basename "$g" .coil)" "$g"; done
for g in "$src"/conformance/models/*/graph.coil; do graph "model~$(basename "$(dirname "$g")")" "$g"; done
for g in "$gold"/graphs/*.coil; do graph "$(basename "$g" .coil)" "$g"; done
n=0
while read -r id; do
  [ -n "$id" ] || continue
  name="op~$(echo "${id#op/}" | tr '/:' '~-')"
  "$conf" --plugin interp --tier op --print-case --filter "$id" >"$tmp/case.coil" 2>/dev/null ||
    { echo "$id: no such case"; continue; }
  rm -rf "$tmp/c"
  COIL_CONFIG=/dev/null "$coil" compile "$tmp/case.coil" --dump "$tmp/c" >"$tmp/log" 2>&1 ||
    { echo "$id: does not compile"; continue; }
  cp "$tmp/c/program.wir" "$gold/wir/$name.wir"
  n=$((n + 1))
done <"$gold/op_cases.txt"
echo "$(ls "$gold"/wir/*.wir | wc -l) programs ($n op cases); $(du -sh "$gold/wir" | cut -f1)"
# cross-check: the test's kernels.cu equals the plugin's for every graph compiled for cuda
bad=0
for f in "$tmp"/plugin_*.cu; do
  name=${f#"$tmp"/plugin_}; name=${name%.cu}
  "$build/plugins/cuda/cuda-emit-golden" --print "$gold/wir/$name.wir" >"$tmp/mine.cu"
  cmp -s "$f" "$tmp/mine.cu" || { echo "MISMATCH: $name: the plugin's kernels.cu differs from cuda-emit-golden's"; bad=1; }
done
exit $bad
