#!/bin/bash
# On the GPU machine: builds tools/device/wgmma_gemm_probe.cu (a TMA + wgmma GEMM with an
# exact-gelu epilogue, docs/gemm-wgmma-notes.md) in several configurations, runs each (every
# element checked against a double reference on three shapes, then timed as do_bench times),
# then times torch.mm (cuBLAS), torch.mm + F.gelu, cuBLASLt's tanh-gelu epilogue
# (torch._addmm_activation) and Inductor's torch.compile of gelu(x @ w) on the same shapes in the
# same run, and prints one table.
#   bash tools/device/wgmma_gemm_probe.sh [CONFIG...]   CONFIG: name=flags, e.g. "a=-DBM=128 -DBN=256"
# Environment: OUT (where logs go; default a temporary folder), MAXAT=1 adds Inductor's
# max-autotune-no-cudagraphs for 4096^3 (a minute or two of autotuning), ONLY_PROBE=1 skips torch.
set -u
here=$(cd "$(dirname "$0")" && pwd); src=$here/wgmma_gemm_probe.cu
out=${OUT:-$(mktemp -d)}; bin=$(mktemp -d)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
{ date -u +"%Y-%m-%d %H:%M:%S UTC"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  $nvcc --version | tail -1; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } 2>&1 | tee "$out/env.txt"
if [ $# -gt 0 ]; then cfgs=("$@"); else cfgs=( # run1's and run2's configurations (2026-12-02)
  "r256=-DBM=128 -DBN=256 -DSTAGE_OUT=0 -DSTAGES=4"
  "r256p=-DBM=128 -DBN=256 -DSTAGE_OUT=0 -DSTAGES=4 -DEPI=0"
  "s256L=-DBM=128 -DBN=256 -DSTAGE_OUT=1 -DSTAGES=3 -DLAST_REG=1"
  "s256Lp=-DBM=128 -DBN=256 -DSTAGE_OUT=1 -DSTAGES=3 -DLAST_REG=1 -DEPI=0"
  "s256=-DBM=128 -DBN=256 -DSTAGE_OUT=1 -DSTAGES=3 -DLAST_REG=0"
  "s256p=-DBM=128 -DBN=256 -DSTAGE_OUT=1 -DSTAGES=3 -DLAST_REG=0 -DEPI=0"
  "s256g16=-DBM=128 -DBN=256 -DSTAGE_OUT=1 -DSTAGES=3 -DLAST_REG=0 -DGROUP_M=16"
  "r256np=-DBM=128 -DBN=256 -DSTAGE_OUT=0 -DSTAGES=4 -DPERSIST=0"
  "r2x128=-DBM=256 -DBN=128 -DSTAGE_OUT=0 -DSTAGES=4"
  "s2x128=-DBM=256 -DBN=128 -DSTAGE_OUT=1 -DSTAGES=3 -DLAST_REG=0"
  "s2x128L=-DBM=256 -DBN=128 -DSTAGE_OUT=1 -DSTAGES=3 -DLAST_REG=1"
  "s2x128p=-DBM=256 -DBN=128 -DSTAGE_OUT=1 -DSTAGES=3 -DLAST_REG=0 -DEPI=0"
  "r128=-DBM=128 -DBN=128 -DSTAGE_OUT=0 -DSTAGES=6"
  "s128=-DBM=128 -DBN=128 -DSTAGE_OUT=1 -DSTAGES=5 -DLAST_REG=0"
  "s128L=-DBM=128 -DBN=128 -DSTAGE_OUT=1 -DSTAGES=5 -DLAST_REG=1"
); fi
# build all in parallel (ptxas's report per configuration in build_NAME.txt)
for c in "${cfgs[@]}"; do
  n=${c%%=*}; f=${c#*=}
  ( $nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a $f -Xptxas -v -o "$bin/$n" "$src" -L"$(dirname "$nvcc")/../lib64/stubs" -lcuda \
      >"$bin/build_$n.txt" 2>&1 || echo "BUILD FAILED" >>"$bin/build_$n.txt" ) &
done
wait
{ for c in "${cfgs[@]}"; do
    n=${c%%=*}
    echo "== $n: ${c#*=}: $(grep -A3 _Z4gemm "$bin/build_$n.txt" | grep -E 'Used|spill|warn' | tr -s ' ' | paste -sd' ') $(grep -E 'error|warning|FAILED' "$bin/build_$n.txt" | head -3)"
  done
  first=${cfgs[0]%%=*}
  if command -v cuobjdump >/dev/null && [ -x "$bin/$first" ]; then
    cuobjdump -sass "$bin/$first" >"$out/sass_$first.txt" 2>&1
    echo "SASS of $first: $(grep -c HGMMA "$out/sass_$first.txt") HGMMA, $(grep -c UTMALDG "$out/sass_$first.txt") UTMALDG, $(grep -cE 'LDL|STL' "$out/sass_$first.txt") LDL/STL, $(grep -c USETMAXREG "$out/sass_$first.txt") USETMAXREG"
  fi; } 2>&1 | tee "$out/build.txt"
hangs=0
for c in "${cfgs[@]}"; do
  n=${c%%=*}
  [ -x "$bin/$n" ] || { echo "RESULT | $n | not built | FAIL"; continue; }
  [ $hangs -lt 2 ] || { echo "RESULT | $n | skipped after two timeouts | FAIL"; continue; }
  echo "== $n: ${c#*=}"
  timeout 20 "$bin/$n"; rc=$? # a run takes a few seconds; a wrong barrier count hangs
  [ $rc -eq 124 ] && hangs=$((hangs + 1))
  [ $rc -eq 0 ] || echo "RESULT | $n | exit $rc$([ $rc -eq 124 ] && echo ' (timed out: a hang)') | FAIL"
done 2>&1 | tee "$out/probe.log"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv 2>&1 | tee -a "$out/env.txt"
if [ "${ONLY_PROBE:-0}" != 1 ]; then
  PYTHONUNBUFFERED=1 timeout 300 python3 - <<'P' 2>&1 | tee "$out/torch.log"
import os, time, torch, torch.nn.functional as F
from triton.testing import do_bench
torch.manual_seed(0)
def kernels(f):
    f(); torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        f(); torch.cuda.synchronize()
    return " + ".join(e.name[:60] for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)
def report(name, shape, fn):
    M, N, K = shape
    ms = do_bench(fn, warmup=25, rep=200, return_mode="median")
    print(f"TORCH | {name} | {M}x{N}x{K} | {ms:.4f} ms | {2 * M * N * K / (ms * 1e-3) / 1e12:.0f} TFLOP/s | {kernels(fn)}")
fn = lambda x, w: F.gelu(x @ w)
modes = [("default", {})] + ([("max-autotune-no-cudagraphs", {"mode": "max-autotune-no-cudagraphs"})] if os.environ.get("MAXAT") == "1" else [])
with torch.no_grad():
    for shape in ((4096, 4096, 4096), (4096, 4000, 4104)):
        M, N, K = shape
        x = torch.randn(M, K, device="cuda", dtype=torch.float16)
        w = torch.randn(K, N, device="cuda", dtype=torch.float16)
        b = torch.zeros(N, device="cuda", dtype=torch.float16)
        h = x @ w
        report("torch.mm (cuBLAS)", shape, lambda: torch.mm(x, w))
        report("F.gelu alone (on the f16 product)", shape, lambda: F.gelu(h))
        report("torch.mm + F.gelu", shape, lambda: F.gelu(torch.mm(x, w)))
        report("cuBLASLt GELU epilogue (tanh form, _addmm_activation)", shape, lambda: torch._addmm_activation(b, x, w, use_gelu=True))
        for mode, kw in modes:
            if mode != "default" and shape != (4096, 4096, 4096):
                continue
            torch._dynamo.reset()
            t0 = time.time()
            f = torch.compile(fn, **kw)
            y = f(x, w)
            ref = F.gelu((x.double() @ w.double()))
            err = ((y.double() - ref).norm() / ref.norm()).item()
            print(f"compiled ({mode}) in {time.time() - t0:.1f} s, rel L2 err vs double {err:.2e}")
            report(f"Inductor gelu(x@w) ({mode})", shape, lambda: f(x, w))
P
fi
{ echo; echo "| config | shape | ms | TFLOP/s | check |"; echo "|---|---|---|---|---|"
  grep -h '^RESULT' "$out/probe.log" | awk -F' [|] ' '{print "| " $2 " | " $3 " | " $4 " | " $5 " | " $NF " (" $6 ") |"}'
  grep -h '^TORCH' "$out/torch.log" 2>/dev/null | awk -F' [|] ' '{print "| " $2 " | " $3 " | " $4 " | " $5 " | " $6 " |"}'; } | tee "$out/table.md"
rm -rf "$bin"
