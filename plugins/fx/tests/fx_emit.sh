#!/bin/bash
# fx_emit: the fx plugin writes Python for every stored op-case and benchmark program
# (plugins/cuda/tests/golden/wir: the conformance op tier's programs over dtypes and shape
# classes) and the generated kernels.py and graph.py of the golden programs stay what they were:
#   1. fx-emit writes each program as the plugin does; refused ones ("not supported": a combining
#      store Triton's atomics lack) are counted, anything else failing fails the test;
#   2. fx_check.py compiles every kernels.py and graph.py as Python (py_compile); where
#      $COIL_FX_TRITON_PYTHON names a Python with Triton, it also compiles every kernel with
#      Triton for sm_90 (no GPU needed);
#   3. plugins/fx/tests/golden/NAME.{kernels,graph}.py equal what fx-emit writes for NAME.wir
#      (COIL_UPDATE_GOLDEN=1 rewrites them after an intended change; review the diff).
# Usage: fx_emit.sh FX_EMIT SOURCE_DIR   (exit 77 without python3)
set -uo pipefail
emit=$1 src=$2
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
"$emit" "$tmp" "$src"/plugins/cuda/tests/golden/wir/*.wir >"$tmp/emit.log" 2>&1 || bad=1
grep -E "^FAIL|^fx-emit" "$tmp/emit.log"
n=$(grep -c "^unsupported:" "$tmp/emit.log")
[ "$n" -le 3 ] || { echo "FAIL: $n programs refused (3 expected: scatter_reduce prod; bench_attention_fp16, whose coil.attention line fx does not run)"; bad=1; }
dirs=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -exec test -f {}/kernels.py \; -print | sort) # a refused program leaves no kernels.py
python3 "$src/plugins/fx/tests/fx_check.py" -j 2 $dirs || bad=1
if [ -n "${COIL_FX_TRITON_PYTHON:-}" ]; then
  "$COIL_FX_TRITON_PYTHON" "$src/plugins/fx/tests/fx_check.py" --triton -j 2 $dirs || bad=1
fi
gold="$src/plugins/fx/tests/golden"
for f in "$gold"/*.kernels.py; do
  name=$(basename "$f" .kernels.py)
  for part in kernels graph; do
    want="$gold/$name.$part.py" got="$tmp/$name/$part.py"
    if [ "${COIL_UPDATE_GOLDEN:-0}" = 1 ]; then
      cp "$got" "$want"
    elif ! cmp -s "$want" "$got"; then
      echo "FAIL: $name: $part.py differs from $want:"
      diff -u "$want" "$got" | head -20
      bad=1
    fi
  done
done
echo "golden: $(ls "$gold"/*.kernels.py | wc -l) programs compared"
exit $bad
