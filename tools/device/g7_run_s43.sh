#!/bin/bash
# G7 probe of 2026-12-04 (session 43), on the GPU machine with .deps carried: the rmsnorm variants
# harness (tools/device/rms_variants.sh, ncu off) with the persistent kernels that keep their next
# rows' loads in flight (pa: cp.async, pb: cp.async.bulk), beside coil's and Inductor's cubins.
# STEP=ab: the reduction graphs in coil bench under the cuda plugin built and as it was before
# (.deps/plugins_old: copy the plugins of the earlier pack there by hand), then the harness's first
# rows and the model tier. STEP=side: the full side-by-side instead, then conformance's model tier on cuda.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
date -u
if [ "${STEP:-rms}" = ab ]; then
  # the reduction graphs under the plugin as built (.deps/plugins) and as before the change
  # (.deps/plugins_old), alternated, three rounds; then the harness with the new cubin; the model tier
  g=softmax_lastdim,layernorm,sum_dim1,rmsnorm_residual_fp16,embedding_layernorm
  for r in 1 2 3; do
    for v in plugins_old plugins; do
      echo "== round $r: $v"
      COIL_PLUGIN_PATH=$PWD/.deps/$v timeout 90 .deps/coil bench --backend cuda --only $g 2>&1 | grep -v "^$"
    done
  done >"$OUT/ab.log"
  RMS_ARGS="--first 4" BENCH=0 NCU=0 timeout 200 bash tools/device/rms_variants.sh >"$OUT/rms_variants.log" 2>&1
  timeout 150 .deps/coil-conformance --plugin cuda --source-dir . --tier model -j 16 >"$OUT/model_tier.log" 2>&1
  echo "model tier: exit $?: $(tail -n 1 "$OUT/model_tier.log")"
elif [ "${STEP:-rms}" = rms ]; then
  NCU=${NCU:-0} timeout 420 bash tools/device/rms_variants.sh >"$OUT/rms_variants.log" 2>&1
  echo "rms_variants: exit $?"
else
  timeout 420 bash tools/device/cuda_side_by_side.sh >/dev/null 2>&1
  timeout 150 .deps/coil-conformance --plugin cuda --source-dir . --tier model -j 16 >"$OUT/model_tier.log" 2>&1
  echo "model tier: exit $?: $(tail -n 1 "$OUT/model_tier.log")"
fi
date -u
