#!/bin/bash
# On the GPU machine, from the repository root, carrying DEPS (default build-gemm/deps: coil,
# coil-conformance, coil-probe (coil with docs/logs/g7-gemm-tb-h200-2026-12-02/bench_cuda_probe.patch:
# the bench graphs mlp_bf16, mlp_t_fp16, mlp_t_bf16), plugins/, lib/): the generated GEMM's
# transposed-B (bt) and bf16 variants (plugins/cuda/cuda_gemm.c) in one call.
#   check  tools/device/g7_gemm_tb_check.py (against float64; gemm.txt's variant words)
#   conf   coil-conformance on cuda: op tier mm|addmm and the model tier, gemm = auto and generated
#   bench  coil bench mlp_fp16 (+ the probe's three) with gemm = auto, library, then Inductor
# Logs under $OUT (logs.tar.gz, summary.log).   usage: g7_gemm_tb.sh [check] [conf] [bench]
cd "$(dirname "$0")/../.." || exit 1
deps=${DEPS:-build-gemm/deps}
[ -x "$deps/coil" ] || { echo "no $deps/coil"; exit 1; }
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/$deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/$deps/plugins
export PYTHONUNBUFFERED=1 COIL_CACHE_DIR=/tmp/coil-cache-$$
unset COIL_CUDA_GEMM COIL_CUDA_ATTENTION_KERNEL COIL_CUDA_ATTENTION_TILE
work=/tmp/g7tb_work; rm -rf "$work"; mkdir -p "$work" "${OUT:-/tmp/g7tb}"
sum=${OUT:-/tmp/g7tb}/summary.log; : >"$sum"
note() { echo "$*" | tee -a "$sum"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
  echo "nvrtc: $nv"; "$deps/coil" --version; } >"$work/env.log" 2>&1
cat "$work/env.log" | tee -a "$sum"
for s in ${*:-check conf bench}; do
  case $s in
  check)
    timeout 300 python3 tools/device/g7_gemm_tb_check.py "$deps/coil" "$work/check" >"$work/check.log" 2>&1
    rc=$?; note "check (exit $rc):"; grep -E "^check|failures|Error|error" "$work/check.log" | tee -a "$sum"
    find "$work/check" \( -name '*.safetensors' -o -name '*.cubin' \) -delete
    cp "$work/check.log" "${OUT:-/tmp/g7tb}/"
    if [ $rc -eq 3 ] || [ $rc -eq 124 ]; then note "stopping: a run did not finish"; break; fi ;;
  conf)
    for g in auto generated; do
      COIL_CUDA_GEMM=$g timeout 90 "$deps/coil-conformance" --plugin cuda --source-dir . --tier op -j 16 \
        --filter 'op/aten\.(mm|addmm)[^/]*/' >"$work/conf_op_$g.log" 2>&1
      note "conformance op mm|addmm, gemm=$g (exit $?): $(tail -n 1 "$work/conf_op_$g.log")"
      grep -E "FAIL|crash|timeout" "$work/conf_op_$g.log" | head -10 | tee -a "$sum"
      COIL_CUDA_GEMM=$g timeout 150 "$deps/coil-conformance" --plugin cuda --source-dir . --tier model -j 16 \
        >"$work/conf_model_$g.log" 2>&1
      note "conformance model tier, gemm=$g (exit $?): $(tail -n 1 "$work/conf_model_$g.log")"
      grep -E "FAIL|crash|timeout" "$work/conf_model_$g.log" | head -10 | tee -a "$sum"
    done ;;
  bench)
    for g in auto library; do
      COIL_CUDA_GEMM=$g timeout 150 "$deps/coil-probe" bench --backend cuda --only mlp_fp16,mlp_bf16,mlp_t_fp16,mlp_t_bf16 \
        --json "$work/bench_$g.json" >"$work/bench_$g.log" 2>&1
      note "coil bench gemm=$g (exit $?):"; grep -E "^(graph|mlp)" "$work/bench_$g.log" | tee -a "$sum"
    done
    timeout 200 python3 - "$work" <<'PY' 2>&1 | tee "$work/inductor.log" | tail -6 >>"$sum"
import json, sys, torch, torch.nn.functional as F
from triton.testing import do_bench
torch.backends.cuda.matmul.allow_tf32 = False
rows = {}
for dt, tag in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
    R = lambda *s: torch.randn(*s, device="cuda", dtype=dt)
    x, w1, w2 = R(4096, 4096), R(4096, 4096) / 64, R(4096, 4096) / 64
    for name, fn in ((f"mlp_{tag}", lambda x, w1, w2: F.gelu(x @ w1) @ w2),
                     (f"mlp_t_{tag}", lambda x, w1, w2: F.gelu(x @ w1.t()) @ w2.t())):
        cf = torch.compile(fn)
        cf(x, w1, w2); torch.cuda.synchronize()
        rows[f"{name} inductor"] = do_bench(lambda: cf(x, w1, w2), warmup=25, rep=100)
        rows[f"{name} eager"] = do_bench(lambda: fn(x, w1, w2), warmup=25, rep=100)
json.dump(rows, open(sys.argv[1] + "/inductor.json", "w"))
for k, v in rows.items():
    print(f"torch {k} {v:.4f} ms")
PY
    ;;
  esac
done
date -u | tee -a "$sum"
tar czf "${OUT:-/tmp/g7tb}/logs.tar.gz" -C "$work" . 2>/dev/null
echo "==== summary"; cat "$sum"
