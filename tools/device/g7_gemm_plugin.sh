#!/bin/bash
# On the GPU machine, from the repository root, carrying a build's deps folder (DEPS, default
# build-gemm/deps: coil, coil-conformance, plugins/libcoil_cuda.so and coil-cuda-tune, lib/): the
# cuda plugin's generated GEMM (plugins/cuda/cuda_gemm.c, option gemm) in one call.
#   check   tools/device/g7_gemm_check.py: gelu(x @ w) at 4096^3, 4096 x 4000 x 4104 and (refused
#           by the rule) 1999 x 1032 x 520, a bias/row-scale/residual/tanh epilogue, the MLP,
#           against torch in float64; fused == coil's unfused gelu kernel bit for bit
#   conf    coil-conformance on cuda: the op tier's mm and addmm cases with gemm = auto and
#           generated, the model tier with auto
#   bench   coil bench --only mlp_fp16 with gemm = auto, library, auto ($BENCH_ORDER: GEMM:ROUND
#           words), then Inductor (torch.compile, default) on the same graph as the anchor times it
# Every step under `timeout`; logs under $OUT; a short summary last.
#   usage: g7_gemm_plugin.sh [check] [conf] [bench]   (default: all three)
cd "$(dirname "$0")/../.." || exit 1
deps=${DEPS:-build-gemm/deps}
[ -x "$deps/coil" ] || { echo "no $deps/coil: pack a build (tools/device/pack_cuda_min.sh) and carry it"; exit 1; }
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/$deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/$deps/plugins
export PYTHONUNBUFFERED=1 COIL_CACHE_DIR=/tmp/coil-cache-$$
unset COIL_CUDA_GEMM COIL_CUDA_ATTENTION_KERNEL COIL_CUDA_ATTENTION_TILE
# everything under $work, packed into $OUT/logs.tar.gz at the end (few files come back from $OUT);
# the summary is written to $OUT as it grows, so a run stopped early still says how far it got
work=/tmp/g7gemm_work
out=$work
rm -rf "$work"
mkdir -p "$work" "${OUT:-/tmp/g7gemm}"
sum=${OUT:-/tmp/g7gemm}/summary.log
: >"$sum"
note() { echo "$*" | tee -a "$sum"; }
steps=${*:-check bench conf}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
  echo "nvrtc: $nv"; "$deps/coil" --version; } >"$out/env.log" 2>&1
cat "$out/env.log"
for s in $steps; do
  case $s in
  check)
    timeout 200 python3 tools/device/g7_gemm_check.py "$deps/coil" "$work/check" >"$out/check.log" 2>&1
    rc=$?
    note "check (exit $rc):"; grep -E "^check|failures|Error|error" "$out/check.log" | tee -a "$sum"
    if [ $rc -eq 3 ] || [ $rc -eq 124 ]; then # a run hung: the GEMM is broken, the other steps would hang too
      note "stopping: a run did not finish"; steps="" 
      tar czf "${OUT:-/tmp/g7gemm}/logs.tar.gz" -C "$work" --exclude='*.safetensors' . 2>/dev/null; cp "$out/check.log" "${OUT:-/tmp/g7gemm}/"
      cat "$sum"; exit 1
    fi
    find "$work/check" \( -name '*.safetensors' -o -name '*.cubin' \) -delete ;;
  conf)
    for g in auto generated; do
      COIL_CUDA_GEMM=$g timeout 90 "$deps/coil-conformance" --plugin cuda --source-dir . --tier op -j 16 \
        --filter 'op/aten\.(mm|addmm)[^/]*/' >"$out/conf_op_$g.log" 2>&1
      note "conformance op mm|addmm, gemm=$g (exit $?): $(tail -n 1 "$out/conf_op_$g.log")"
      grep -E "FAIL|crash|timeout" "$out/conf_op_$g.log" | head -10 | tee -a "$sum"
    done
    timeout 120 "$deps/coil-conformance" --plugin cuda --source-dir . --tier model -j 16 >"$out/conf_model.log" 2>&1
    note "conformance model tier, gemm=auto (exit $?): $(tail -n 1 "$out/conf_model.log")"
    grep -E "FAIL|crash|timeout" "$out/conf_model.log" | head -10 | tee -a "$sum" ;;
  bench)
    for rg in ${BENCH_ORDER:-auto:1 library:1 auto:2}; do
      g=${rg%:*} round=${rg#*:}
      {
        COIL_CUDA_GEMM=$g timeout 90 "$deps/coil" bench --backend cuda --only mlp_fp16 --json "$out/bench_${g}_$round.json" \
          >"$out/bench_${g}_$round.log" 2>&1
        note "coil bench mlp_fp16 gemm=$g round $round (exit $?): $(grep -m1 mlp_fp16 "$out/bench_${g}_$round.log")"
      }
    done
    timeout 150 python3 - "$out" <<'PY' 2>&1 | tee "$out/inductor.log" | tail -4 >>"$sum"
import json, sys, torch, torch.nn.functional as F
from triton.testing import do_bench
torch.backends.cuda.matmul.allow_tf32 = False
R = lambda *s: torch.randn(*s, device="cuda", dtype=torch.float16)
x, w1, w2 = R(4096, 4096), R(4096, 4096), R(4096, 4096)
fn = lambda x, w1, w2: F.gelu(x @ w1) @ w2
cf = torch.compile(fn)
cf(x, w1, w2); torch.cuda.synchronize()
rows = {}
for r in range(2):  # as the anchor script: do_bench, warmup 25 ms, rep 100 ms (median)
    rows[f"inductor_{r}"] = do_bench(lambda: cf(x, w1, w2), warmup=25, rep=100)
    rows[f"eager_{r}"] = do_bench(lambda: fn(x, w1, w2), warmup=25, rep=100)
    rows[f"mm_{r}"] = do_bench(lambda: x @ w1, warmup=25, rep=100)
    rows[f"mm_gelu_{r}"] = do_bench(lambda: F.gelu(x @ w1), warmup=25, rep=100)
json.dump(rows, open(sys.argv[1] + "/inductor.json", "w"))
print("torch " + ", ".join(f"{k} {v:.4f} ms" for k, v in rows.items()))
PY
    ;;
  esac
done
tar czf "${OUT:-/tmp/g7gemm}/logs.tar.gz" -C "$work" . 2>/dev/null
cp "$out/check.log" "${OUT:-/tmp/g7gemm}/" 2>/dev/null
echo "==== summary"; cat "$sum"
