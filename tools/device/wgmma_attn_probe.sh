#!/bin/bash
# On the GPU machine: builds and runs tools/device/wgmma_attn_probe.cu (a first wgmma attention
# kernel, checked and timed), then times PyTorch's SDPA (cuDNN's or flash kernel) on the same
# shape with triton's do_bench, for the ratio in one run.
cd "$(dirname "$0")"; src=$PWD/wgmma_attn_probe.cu; cd "${TMPDIR:-/tmp}"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
for v in "2 1" "2 2" "3 1" "1 2" "1 3"; do # warpgroups a block, blocks an SM
  set -- $v
  $nvcc -O3 -gencode arch=compute_90a,code=sm_90a -DWGS=$1 -DMINB=$2 -Xptxas -v -o wgmma_attn_probe "$src" 2>&1 |
    grep -E "error|registers|spill" | tail -2
  ./wgmma_attn_probe
done
python3 - <<'P'
import torch, torch.nn.functional as F
from triton.testing import do_bench
q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.float16) for _ in range(3))
ms = do_bench(lambda: F.scaled_dot_product_attention(q, k, v), warmup=25, rep=200)
print(f"torch SDPA f16 [8x16, 1024, 64]: {ms:.4f} ms, {4 * 128 * 1024 * 1024 * 64 / (ms * 1e-3) / 1e12:.0f} TFLOP/s")
P
