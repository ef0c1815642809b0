#!/bin/bash
# G7 probe written 2026-12-04 (session 44; not run then: no GPU machine was lent), on the GPU machine
# with .deps carried. Default step: which statistic do_bench returns; coil bench on the reduction
# graphs under the plugin as built (.deps/plugins) and an earlier build (.deps/plugins_old, copied
# there by hand; the change it was written for: warp-a-row persistent kernels loading through
# load_keep too), alternated over three rounds, with the SM clock and power sampled throughout;
# then the rmsnorm harness's first rows timed each launch waited for, queued as do_bench queues
# them, and with the mean (is coil bench's 1 us over the harness the timing or the kernel?).
# STEP=side: the full side-by-side, then conformance's model tier on cuda.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
date -u
# the SM clock, power and temperature every 200 ms through the run (is a queued run power-capped?)
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 200 >"$OUT/clocks.csv" 2>&1 &
smi=$!
trap 'kill $smi 2>/dev/null' EXIT
if [ "${STEP:-ab}" = ab ]; then
  python3 -c "import inspect, triton, triton.testing as t; print('triton', triton.__version__, 'do_bench', inspect.signature(t.do_bench))"
  g=softmax_lastdim,layernorm,rmsnorm_residual_fp16,embedding_layernorm,conv_bn_relu_maxpool
  for r in 1 2 3; do
    for v in plugins_old plugins; do
      echo "== round $r: $v ($(date -u +%T.%N | cut -c1-12))"
      COIL_PLUGIN_PATH=$PWD/.deps/$v timeout 90 .deps/coil bench --backend cuda --only $g 2>&1 | grep -v "^$"
    done
  done >"$OUT/ab.log"
  RMS_ARGS="--first 3" RMS_MORE="--queued;--queued --mean;--mean" BENCH=1 NCU=0 timeout 300 \
    bash tools/device/rms_variants.sh >"$OUT/rms_variants.log" 2>&1
  echo "rms_variants: exit $?"
else
  timeout 420 bash tools/device/cuda_side_by_side.sh >/dev/null 2>&1
  timeout 150 .deps/coil-conformance --plugin cuda --source-dir . --tier model -j 16 >"$OUT/model_tier.log" 2>&1
  echo "model tier: exit $?: $(tail -n 1 "$OUT/model_tier.log")"
fi
date -u
