#!/bin/bash
# On the GPU machine: builds tools/device/attn_kernel_bench.cu (coil's wgmma attention kernel,
# plugins/cuda/cuda_attention.cu as the plugin has it) once per set of -D flags given as
# arguments (each one argument, "" for none), runs each twice, and times PyTorch's SDPA on the
# same shape in the same run.
#   attn_kernel_bench.sh "" "-DATTN_WG_LAZY" "-DWG_HD=128 -DWG_BN=64" ...
cd "$(dirname "$0")"; src=$PWD/attn_kernel_bench.cu; cd "${TMPDIR:-/tmp}" || exit 1
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
i=0
for v in "$@"; do
  i=$((i + 1))
  ( $nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a $v -Xptxas -v -o akb$i "$src" >akb$i.log 2>&1 ) &
done
wait
i=0
for v in "$@"; do
  i=$((i + 1))
  echo "== [$v]: $(grep -E "error|registers|spill" akb$i.log | grep -v "0 bytes stack frame, 0 bytes spill" | tr -s ' ' | paste -sd' ' | cut -c1-200)"
  [ -x akb$i ] && ./akb$i && ./akb$i
done
python3 - <<'P'
import torch, torch.nn.functional as F
from triton.testing import do_bench
for b, h, d in ((8, 16, 64), (8, 8, 128)):
    q, k, v = (torch.randn(b, h, 1024, d, device="cuda", dtype=torch.float16) for _ in range(3))
    ms = do_bench(lambda: F.scaled_dot_product_attention(q, k, v), warmup=25, rep=200)
    print(f"torch SDPA f16 [{b * h}, 1024, {d}]: {ms:.4f} ms, {4 * b * h * 1024 * 1024 * d / (ms * 1e-3) / 1e12:.0f} TFLOP/s")
P
