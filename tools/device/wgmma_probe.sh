#!/bin/bash
# On the GPU machine: builds and runs tools/device/wgmma_probe.cu (the wgmma facts of
# docs/attention-wgmma-notes.md checked on one 64x64 tile: descriptors, 128-byte swizzle,
# accumulator and A-register layouts, N-major B). Prints PASS or FAIL and the errors.
cd "$(dirname "$0")"; src=$PWD/wgmma_probe.cu; cd "${TMPDIR:-/tmp}"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o wgmma_probe "$src" 2>&1 | tail -5 && ./wgmma_probe
