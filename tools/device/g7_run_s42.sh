#!/bin/bash
# G7 probe of 2026-12-04 (session 42), on the GPU machine with .deps carried: the gelu variants
# (coil's one- and two-vector NVRTC cubins with the flat index, the hand-written t256x2, Inductor,
# registers from ptxas), then coil bench on the gelu graph in the default plan and forced to two
# vectors (max-autotune candidate 3; coil bench sets the mode itself, so this read the default plan
# too), each twice. STEP=side: the full side-by-side instead, then conformance's model tier on cuda.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
date -u
if [ "${STEP:-gelu}" = gelu ]; then
  mkdir -p "$OUT/gelu"
  OUT=$OUT/gelu GV_CANDS=3 timeout 240 bash tools/device/gelu_variants.sh 3 >"$OUT/gelu.log" 2>&1
  for r in 1 2; do
    echo "== round $r: default plan"
    timeout 60 .deps/coil bench --backend cuda --only pointwise_gelu_affine 2>&1
    echo "== round $r: two vectors (max-autotune candidate 3)"
    COIL_MODE=max-autotune COIL_GPU_TUNE_CANDIDATE=3 timeout 60 .deps/coil bench --backend cuda --only pointwise_gelu_affine 2>&1
  done >"$OUT/bench.log"
  tar czf "$OUT/gelu.tar.gz" -C "$OUT" gelu && rm -rf "$OUT/gelu"
else
  timeout 420 bash tools/device/cuda_side_by_side.sh >/dev/null 2>&1
  timeout 150 .deps/coil-conformance --plugin cuda --source-dir . --tier model -j 16 >"$OUT/model_tier.log" 2>&1
  echo "model tier: exit $?: $(tail -n 1 "$OUT/model_tier.log")"
fi
date -u
