#!/bin/bash
# On the GPU machine: what separates `coil bench`'s rmsnorm time (~54 us on an H200) from the same
# cubin's ~51 us in tools/device/rms_variants.sh's harness (G7, 2026-12-02b). Runs
# `coil bench --backend cuda --only rmsnorm_residual_fp16` under the COIL_PROBE_* knobs of the probe
# build of tools/bench_cuda.c (buffer placement, input values, synchronizing each rep, a raw
# cuLaunchKernel of the artifact's cubin beside the executor's call), two rounds; then the
# memory-bound graphs under a few of them; then where PyTorch's allocator puts rmsnorm's tensors
# and Inductor's time for it (do_bench, mean and median). The knobs are not in the committed
# bench_cuda.c: build coil with docs/logs/g7-h200-2026-12-02b/bench_cuda_probe.patch applied, then
# tools/device/pack_cuda_min.sh into .deps (the logs of the run are in that folder).
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
q="name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw"
date -u; nvidia-smi --query-gpu=$q --format=csv,noheader
configs=(
  "default|"
  "raw|COIL_PROBE_RAW=1"
  "sync_each|COIL_PROBE_SYNC_EACH=1"
  "uniform|COIL_PROBE_UNIFORM=1"
  "pad4100k|COIL_PROBE_PAD_KIB=4100"
  "pad2048k|COIL_PROBE_PAD_KIB=2048"
  "arena_gap4k|COIL_PROBE_ARENA_GAP_KIB=4"
  "arena_gap0|COIL_PROBE_ARENA_GAP_KIB=0"
  "arena_gap1m|COIL_PROBE_ARENA_GAP_KIB=1024"
  "nocopy|COIL_PROBE_NOCOPY=1"
  "flush_last|COIL_PROBE_FLUSH_LAST=1"
  "harness_order|COIL_PROBE_NOCOPY=1 COIL_PROBE_FLUSH_LAST=1"
  "harness_all|COIL_PROBE_NOCOPY=1 COIL_PROBE_FLUSH_LAST=1 COIL_PROBE_SYNC_EACH=1 COIL_PROBE_UNIFORM=1 COIL_PROBE_RAW=1"
)
for round in 1 2; do
  for c in "${configs[@]}"; do
    n=${c%%|*} e=${c#*|}
    echo "== round $round $n ($e)"
    env $e .deps/coil bench --backend cuda --only rmsnorm_residual_fp16 2>&1 | grep -E "^(rmsnorm|probe)"
  done
done 2>&1 | tee "$out/probe_rms.log"
mem=pointwise_gelu_affine,softmax_lastdim,layernorm,sum_dim1,rmsnorm_residual_fp16,transpose_copy_f32
for c in "default|" "pad4100k|COIL_PROBE_PAD_KIB=4100" "arena_gap4k|COIL_PROBE_ARENA_GAP_KIB=4" \
         "harness_order|COIL_PROBE_NOCOPY=1 COIL_PROBE_FLUSH_LAST=1" "default|"; do
  n=${c%%|*} e=${c#*|}
  echo "== memory-bound set, $n ($e)"
  env $e .deps/coil bench --backend cuda --only $mem 2>&1 | grep -v "^probe"
done 2>&1 | tee "$out/probe_mem.log"
cat >/tmp/ind_rms.py <<'P'
import torch
from triton.testing import do_bench
f16 = torch.float16
def f(x, r, w):
    return ((x + r) * torch.rsqrt((x + r).float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(f16) * w
R = lambda *s: torch.randn(*s, device="cuda", dtype=f16)
x, r, w = R(8192, 4096), R(8192, 4096), R(4096)
g = torch.compile(f)
y = g(x, r, w)
y2 = g(x, r, w)
print("torch allocator: x %#x r %#x (+%d KiB) w %#x y %#x (+%d KiB), next y %#x" % (x.data_ptr(), r.data_ptr(),
      (r.data_ptr() - x.data_ptr()) // 1024, w.data_ptr(), y.data_ptr(), (y.data_ptr() - x.data_ptr()) // 1024, y2.data_ptr()))
for i in range(3):
    print("inductor rmsnorm do_bench mean %.4f median %.4f ms" % (do_bench(lambda: g(x, r, w), warmup=25, rep=100),
          do_bench(lambda: g(x, r, w), warmup=25, rep=100, return_mode="median")))
P
timeout 120 python3 /tmp/ind_rms.py 2>&1 | grep -v Warning | tail -6 | tee "$out/probe_inductor.log"
date -u; nvidia-smi --query-gpu=$q --format=csv,noheader
