#!/bin/bash
# On the GPU machine: builds and runs tools/device/wgmma_attn_probe.cu (a first wgmma attention
# kernel, checked and timed) in several configurations, then times PyTorch's SDPA (cuDNN's or
# flash kernel) on the same shapes with triton's do_bench, for the ratios in one run.
cd "$(dirname "$0")"; src=$PWD/wgmma_attn_probe.cu; cd "${TMPDIR:-/tmp}"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
for v in "-DHD=64 -DWGS=2 -DMINB=1" "-DHD=64 -DWGS=2 -DMINB=2" "-DHD=64 -DBN=64 -DWGS=2 -DMINB=2" \
    "-DHD=64 -DWGS=1 -DMINB=3" "-DHD=64 -DWGS=2 -DMINB=2 -DBF16" "-DHD=64 -DWGS=2 -DMINB=2 -DCAUSAL" \
    "-DHD=128 -DBN=64 -DWGS=2 -DMINB=2" "-DHD=128 -DBN=64 -DWGS=2 -DMINB=1" "-DHD=128 -DBN=128 -DWGS=2 -DMINB=1" \
    "-DHD=128 -DBN=64 -DWGS=1 -DMINB=3"; do
  echo "== $v: $($nvcc -O3 -gencode arch=compute_90a,code=sm_90a $v -Xptxas -v -o wgmma_attn_probe "$src" 2>&1 |
    grep -E "error|registers|spill" | tr -s ' ' | paste -sd' ')"
  ./wgmma_attn_probe
done
python3 - <<'P'
import torch, torch.nn.functional as F
from triton.testing import do_bench
for heads, d, dt, causal in ((128, 64, torch.float16, False), (128, 64, torch.bfloat16, False),
                             (128, 64, torch.float16, True), (64, 128, torch.float16, False)):
    q, k, v = (torch.randn(heads // 16 if heads == 128 else 8, 16 if heads == 128 else 8, 1024, d,
                           device="cuda", dtype=dt) for _ in range(3))
    ms = do_bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), warmup=25, rep=200)
    fl = (2 if causal else 4) * heads * 1024 * 1024 * d
    print(f"torch SDPA {dt} d{d}{' causal' if causal else ''} [{heads}, 1024, {d}]: {ms:.4f} ms, {fl / (ms * 1e-3) / 1e12:.0f} TFLOP/s")
P
