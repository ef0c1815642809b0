#!/bin/bash
# G7 probes of 2026-12-04 (session 41), on the GPU machine with .deps carried: the gelu variants with
# coil's two-vector plan as NVRTC and nvcc build it (SASS of both), and rms_variants' coil and
# Inductor kernels in several processes (is the 2.5 % between them a per-process state?).
# STEP=1: the first call (the full rms sweep on normal inputs, ncu on a dirty L2); STEP=2 the second.
cd "$(dirname "$0")/../.." || exit 1
set -x
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
date -u
mkdir -p "$OUT/gelu" "$OUT/rms"
OUT=$OUT/gelu timeout 240 bash tools/device/gelu_variants.sh 3 >"$OUT/gelu.log" 2>&1
if [ "${STEP:-2}" = 1 ]; then
  OUT=$OUT/rms RMS_ARGS=--normal NCU_DIRTY=1 timeout 330 bash tools/device/rms_variants.sh >"$OUT/rms.log" 2>&1
else
  # rms_variants.sh builds /tmp/rmsv/rv; then the harness alone, five processes, coil's and Inductor's kernels
  OUT=$OUT/rms NCU=0 BENCH=1 RMS_ARGS="--normal" timeout 200 bash tools/device/rms_variants.sh >"$OUT/rms.log" 2>&1
  /tmp/rmsv/rv --coil /tmp/rmsv/art/k0.cubin $(awk '/^extern "C" __global__/ {getline; sub(/\(.*/, ""); print; exit}' /tmp/rmsv/art/kernels.cu) 256 \
    --inductor $(cat /tmp/rmsv/ind/launch.txt) --normal --first 3 --tseeds ${TSEEDS:-1006,1126,1006,1126,5,77} | grep -E "^(tseed|coil|inductor)" >"$OUT/rms_seeds.log" 2>&1
  for i in ${PROCS-1 2 3 4 5}; do
    /tmp/rmsv/rv --coil /tmp/rmsv/art/k0.cubin $(awk '/^extern "C" __global__/ {getline; sub(/\(.*/, ""); print; exit}' /tmp/rmsv/art/kernels.cu) 256 \
      --inductor $(cat /tmp/rmsv/ind/launch.txt) --normal --first 3 | grep -E "^(coil|inductor)" | grep -v check
  done >"$OUT/rms_procs.log" 2>&1
fi
date -u
tar czf "$OUT/all.tar.gz" -C "$OUT" gelu rms
rm -rf "$OUT/gelu" "$OUT/rms"
