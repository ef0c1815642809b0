#!/bin/bash
# On the GPU machine, in one run: coil's cuda plugin (`coil bench --backend cuda`), then
# Inductor (../shared/anchors/inductor_baseline.py, carried as .deps/inductor_baseline.py), then
# coil again, on the same graphs and sizes; tools/device/cuda_table.py prints them side by side.
# Needs the carried .deps/ (coil, plugins/, lib/) built on the dev machine; writes under $OUT.
#   usage: tools/device/cuda_side_by_side.sh [--coil-only]
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
log=$out/cuda_side_by_side.log
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } >"$log" 2>&1
.deps/coil bench --backend cuda --json "$out/coil_1.json" 2>&1 | tee -a "$log"
if [ "$1" != --coil-only ]; then
  python3 .deps/inductor_baseline.py 2>&1 | tail -12 | tee -a "$log" # writes $OUT/inductor_baseline.json
  .deps/coil bench --backend cuda --json "$out/coil_2.json" 2>&1 | tee -a "$log"
  .deps/coil bench --backend cuda --autotune --json "$out/coil_tuned.json" 2>&1 | tee -a "$log"
  python3 tools/device/cuda_table.py "$out/inductor_baseline.json" "$out/coil_1.json" "$out/coil_2.json" \
    --tuned "$out/coil_tuned.json" | tee "$out/table.md"
fi
