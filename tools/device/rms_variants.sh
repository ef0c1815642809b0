#!/bin/bash
# On the GPU machine: compiles the rmsnorm benchmark graph with coil's cuda plugin (for the
# prelude of its kernels.cu), builds tools/device/rms_variants.cu after that prelude, runs it, and
# times Inductor's kernel for the same graph with do_bench in the same call. Needs .deps/.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
t=${TMPDIR:-/tmp}/rmsv; rm -rf "$t"; mkdir -p "$t"
cat >"$t/g.coil" <<'G'
coil 1
graph g(%x: f16[8192, 4096], %r: f16[8192, 4096], %w: f16[4096]) {
  %h = aten.add.Tensor(%x, %r)
  %hf = aten._to_copy.default(%h, dtype=f32)
  %p = aten.pow.Tensor_Scalar(%hf, 2)
  %m = aten.mean.dim(%p, [-1], True)
  %e = aten.add.Tensor(%m, 1e-06)
  %s = aten.rsqrt.default(%e)
  %n = aten.mul.Tensor(%h, %s)
  %c = aten._to_copy.default(%n, dtype=f16)
  %y = aten.mul.Tensor(%c, %w)
  return (%y)
}
G
.deps/coil compile "$t/g.coil" --backend cuda -o "$t/art" >/dev/null || exit 1
{ awk '/^extern "C" __global__/ {exit} {print}' "$t/art/kernels.cu"
  echo '#include <type_traits>'; cat tools/device/rms_variants.cu; } >"$t/rv.cu"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$nvcc -O3 -std=c++17 -arch=sm_90 -o "$t/rv" "$t/rv.cu" || exit 1
"$t/rv"
python3 - <<'P'
import torch
from triton.testing import do_bench
def f(x, r, w):
    h = x + r
    hf = h.float()
    return (h * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6)).half() * w
x, r = (torch.randn(8192, 4096, device="cuda", dtype=torch.float16) for _ in range(2))
w = torch.randn(4096, device="cuda", dtype=torch.float16)
g = torch.compile(f)
g(x, r, w)
for i in range(2):
    ms = do_bench(lambda: g(x, r, w), warmup=25, rep=200)
    print(f"Inductor (torch.compile, do_bench): {ms * 1e3:8.2f} us  {3 * 8192 * 4096 * 2 / (ms * 1e-3) / 1e9:5.0f} GB/s")
P
