#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh), from the
# repository root: coil.attention on the cuda plugin (G7: plugins/cuda/cuda_attention.c, the
# SIMT and tensor-core kernels of cuda_attention.cu).
#   g7_gpu.sh [all|build|check|sanitize|bench|sweep|ncu] ...   (default: all = the first five)
#   build     the carried binaries run here: GPU, driver, torch; each test graph compiled for
#             cuda, and which attention kernels its artifact holds (attention.txt)
#   check     coil-conformance on cuda: the op tier's bmm, _softmax, mm and addmm cases (the
#             attention templates are bmm's) and the model tier; then full-size graphs (f16 d64
#             as the benchmark, bf16 d128 with a causal mask, f16 with a padding mask whose last
#             batch has no key, f32, f16 with E = 48) against torch in float64 on the same inputs,
#             with the default kernels and with attention_kernel = mma and simt
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck on small attention runs (the
#             tensor-core kernel with and without a mask, the SIMT kernel)
#   bench     coil bench --only attention_fp16 against Inductor (torch.compile of the same graph)
#             and eager SDPA, one Python process: Inductor compiled once, then three rounds of
#             coil (a subprocess), Inductor, SDPA, coil's mma.sync kernel; medians; coil's unfused path (--attention
#             generated) once
#   sweep     coil bench --only attention_fp16: the default (wgmma on sm_90), the mma.sync kernel
#             (attention_kernel = mma) and two of its tiles ($COIL_CUDA_ATTENTION_TILE), the SIMT
#             kernel and the unfused path
#   ncu       Nsight Compute on one launch of coil's attention kernel and of PyTorch's SDPA
# Every step runs under `timeout`; logs, CSVs and JSON under $OUT; a short summary last. About 7
# minutes for `all` on an H100.
cd "$(dirname "$0")/../.." || exit 1
[ -x .deps/coil ] || { echo "no .deps/coil: run tools/device/pack.sh after a build, and carry .deps"; exit 1; }
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
dnn=$(python3 -c 'import sys, glob; print(next(iter(sorted(g for p in sys.path for g in glob.glob(p + "/nvidia/cudnn/lib/libcudnn.so.9"))), ""))' 2>/dev/null)
[ -n "$dnn" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$dnn")
export PYTHONUNBUFFERED=1 COIL_CACHE_DIR=/tmp/coil-cache-$$ # outside $OUT: the cache need not come back
unset COIL_CUDA_ATTENTION_KERNEL COIL_CUDA_ATTENTION_TILE
out=${OUT:-/tmp/g7}
mkdir -p "$out/graphs" "$out/art"
sum=$out/g7_summary.log
: >"$sum"
note() { echo "$*" | tee -a "$sum"; }
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)

# ---- the graphs: attention spelled out as exports do (the core fuses it into coil.attention) ----
graph() { # NAME DT B H L S E EV SCALE MASK-SHAPE|-
  local name=$1 dt=$2 B=$3 H=$4 L=$5 S=$6 E=$7 EV=$8 scale=$9 mask=${10} ins add="" x=%m
  ins="%q: $dt[$B, $H, $L, $E], %k: $dt[$B, $H, $S, $E], %v: $dt[$B, $H, $S, $EV]"
  if [ "$mask" != - ]; then
    ins="$ins, %mask: $dt$mask"
    add="  %x = aten.add.Tensor(%m, %mask)"$'\n'
    x=%x
  fi
  cat >"$out/graphs/$name.coil" <<EOF
coil 1
graph g($ins) {
  %kt = aten.transpose.int(%k, -1, -2)
  %q3 = aten.view.default(%q, [$((B * H)), $L, $E])
  %k3 = aten.view.default(%kt, [$((B * H)), $E, $S])
  %s3 = aten.bmm.default(%q3, %k3)
  %s = aten.view.default(%s3, [$B, $H, $L, $S])
  %m = aten.mul.Tensor(%s, $scale)
$add  %p = aten._softmax.default($x, -1, False)
  %p3 = aten.view.default(%p, [$((B * H)), $L, $S])
  %v3 = aten.view.default(%v, [$((B * H)), $S, $EV])
  %o3 = aten.bmm.default(%p3, %v3)
  %o = aten.view.default(%o3, [$B, $H, $L, $EV])
  return (%o)
}
EOF
}
graph f16_d64 f16 8 16 1024 1024 64 64 0.125 -
graph bf16_d128_causal bf16 2 8 512 512 128 128 0.08838834764831845 "[1, 1, 512, 512]"
graph f16_d64_padding f16 4 12 200 200 64 64 0.125 "[4, 1, 1, 200]"
graph f32_d40 f32 2 4 300 300 40 40 0.2 -
graph f16_d48 f16 3 5 77 77 48 48 0.14433756729740643 -
graph small_f16_d64 f16 1 2 200 300 64 64 0.125 -
graph small_f16_d64_mask f16 1 2 200 300 64 64 0.125 "[1, 2, 200, 300]"
graph small_f32 f32 2 2 50 70 40 24 0.2 -
# inputs for a graph: random q, k, v (torch's normal) and its mask (causal, or padding with
# batch b losing its last 20 b keys: the last batch every key, a row of -inf: NaN as in torch)
cat >"$out/graphs/inputs.py" <<'EOF'
import sys, torch
from safetensors.torch import save_file
name, path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
g = torch.Generator().manual_seed(seed)
text = open(path.rsplit("/", 1)[0] + "/" + name + ".coil").read()
dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
ins = {}
for part in text.split("(", 1)[1].split(")", 1)[0].split("], "):
    n, t = part.split(": ")
    d, shape = t.split("[")
    ins[n.strip("%")] = (dt[d], [int(x) for x in shape.strip("]").split(", ")])
tensors = {}
for n, (d, shape) in ins.items():
    if n == "mask":
        L, S = shape[-2], shape[-1]
        if shape[0] == 1 and shape[-2] > 1 and shape[1] == 1:  # causal
            m = torch.triu(torch.full((L, S), float("-inf")), 1).reshape(shape)
        elif shape[-2] == 1:  # padding: batch b loses its last 20 b keys
            m = torch.zeros(shape)
            for b in range(shape[0]):
                m[b, ..., S - 20 * b:] = float("-inf") if b else 0
            m[-1] = float("-inf")
        else:  # random, a fifth -inf
            m = torch.randn(shape, generator=g)
            m[torch.rand(shape, generator=g) < 0.2] = float("-inf")
        tensors[n] = m.to(d)
    else:
        tensors[n] = torch.randn(shape, generator=g).to(d)
save_file(tensors, path)
EOF

section_build() {
  { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
    echo "nvrtc: $nv"; .deps/coil --version; .deps/coil plugins; } >"$out/g7_env.log" 2>&1
  cat "$out/g7_env.log"
  for g in "$out"/graphs/*.coil; do
    n=$(basename "$g" .coil)
    rm -rf "$out/art/$n"
    if timeout 120 .deps/coil compile "$g" --backend cuda -o "$out/art/$n" >"$out/art_$n.log" 2>&1; then
      plan=$(find "$out/art/$n" -name attention.txt | head -1)
      if [ -n "$plan" ]; then
        note "build $n: coil.attention, kernels: $(grep '^kernel' "$plan" | awk '{print $3 "/" $4 (($3 != "simt") ? " d" $6 " " $7 "x" $8 "x" $9 "x" $10 "x" $11 : "")}' | paste -sd, -)"
      else
        note "build $n: NOT fused (no coil.attention line: the core's matcher or claim)"
      fi
    else
      note "build $n: compile FAILED: $(tail -1 "$out/art_$n.log")"
    fi
  done
}

section_check() {
  timeout 300 .deps/coil-conformance --plugin cuda --source-dir . --tier op -j 16 --csv "$out/g7_op.csv" \
    --filter 'op/aten\.(bmm|_softmax|mm|addmm)[^/]*/' >"$out/g7_op.log" 2>&1
  note "check op tier (exit $?): $(tail -n 1 "$out/g7_op.log")"
  grep -E "FAIL|crash|timeout" "$out/g7_op.log" | head -20 | tee -a "$sum"
  timeout 300 .deps/coil-conformance --plugin cuda --source-dir . --tier model -j 16 --csv "$out/g7_model.csv" \
    >"$out/g7_model.log" 2>&1
  note "check model tier (exit $?): $(tail -n 1 "$out/g7_model.log")"
  grep -E "FAIL|crash|timeout" "$out/g7_model.log" | head -20 | tee -a "$sum"
  # full size, against torch in float64 on the same inputs
  for n in f16_d64 bf16_d128_causal f16_d64_padding f32_d40 f16_d48; do
    timeout 60 python3 "$out/graphs/inputs.py" $n "$out/graphs/$n.in.safetensors" 7 || { note "check $n: no inputs"; continue; }
    for kernel in auto mma simt; do
      rm -f "$out/graphs/$n.$kernel.safetensors"
      COIL_CUDA_ATTENTION_KERNEL=$kernel timeout 120 .deps/coil run "$out/graphs/$n.coil" --backend cuda --no-cache \
        --inputs "$out/graphs/$n.in.safetensors" --out "$out/graphs/$n.$kernel.safetensors" >"$out/run_$n.$kernel.log" 2>&1 ||
        { note "check $n ($kernel): run FAILED: $(tail -1 "$out/run_$n.$kernel.log")"; continue; }
    done
    timeout 120 python3 - "$out/graphs" $n >>"$sum" 2>&1 <<'EOF'
import sys, torch
from safetensors.torch import load_file
d, n = sys.argv[1], sys.argv[2]
x = {k: t.cuda().double() for k, t in load_file(f"{d}/{n}.in.safetensors").items()}
scale = float(open(f"{d}/{n}.coil").read().split("aten.mul.Tensor(%s, ")[1].split(")")[0])
s = x["q"] @ x["k"].transpose(-1, -2) * scale + (x["mask"] if "mask" in x else 0)
ref = torch.softmax(s, -1) @ x["v"]
tol = {torch.float16: 2e-3, torch.bfloat16: 1.2e-2, torch.float32: 1e-5}
for kernel in ("auto", "mma", "simt"):
    try:
        got = load_file(f"{d}/{n}.{kernel}.safetensors")["out0"]
    except Exception as e:
        print(f"check {n} ({kernel}): no output ({e})"); continue
    t = tol[got.dtype]
    got = got.cuda().double()
    nan_ref, nan_got = torch.isnan(ref), torch.isnan(got)
    ok = ~nan_ref
    rel = ((got[ok] - ref[ok]).norm() / ref[ok].norm()).item() if ok.any() else 0.0
    same_nan = bool((nan_ref == nan_got).all())
    print(f"check {n} ({kernel}): rel L2 error {rel:.2e} (limit {t:g}), NaN rows as torch: {same_nan}, "
          f"max abs {((got[ok] - ref[ok]).abs().max().item() if ok.any() else 0):.3g}"
          f" -> {'ok' if rel <= t and same_nan else 'FAIL'}")
EOF
  done
  grep "^check f\|^check b" "$sum" | tail -10
}

section_sanitize() {
  [ -n "$san" ] || { note "sanitize: no compute-sanitizer here"; return; }
  for n in small_f16_d64 small_f16_d64_mask small_f32; do
    for tool in memcheck racecheck synccheck; do
      [ $tool != memcheck ] && [ $n = small_f32 ] && continue
      timeout 120 "$san" --tool $tool --error-exitcode 9 .deps/coil run "$out/graphs/$n.coil" --backend cuda --no-cache \
        --seed 3 >"$out/san_${n}_$tool.log" 2>&1
      rc=$?
      note "sanitize $n $tool: exit $rc, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san_${n}_$tool.log" | tail -1)"
    done
  done
}

section_bench() {
  timeout 420 python3 - .deps/coil "$out" <<'EOF' 2>&1 | tee "$out/g7_bench.log" | tail -14 >>"$sum"
import json, os, statistics, subprocess, sys
import torch, torch.nn.functional as F
import triton
from triton.testing import do_bench
coil, out = sys.argv[1], sys.argv[2]
torch.backends.cuda.matmul.allow_tf32 = False
R = lambda *s: torch.randn(*s, device="cuda", dtype=torch.float16)
q, k, v = R(8, 16, 1024, 64), R(8, 16, 1024, 64), R(8, 16, 1024, 64)
attn = lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) * 0.125, -1) @ v  # the anchor's graph
cf = torch.compile(attn)
ref = attn(q.float(), k.float(), v.float())
err = ((cf(q, k, v).float() - ref).norm() / ref.norm()).item()
sdpa = lambda: F.scaled_dot_product_attention(q, k, v, scale=0.125)
print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__, f"inductor rel err {err:.2e}")

def coil_bench(tag, *extra, kernel=None):
    path = f"{out}/coil_{tag}.json"
    env = dict(os.environ, **({"COIL_CUDA_ATTENTION_KERNEL": kernel} if kernel else {}))
    r = subprocess.run([coil, "bench", "--backend", "cuda", "--only", "attention_fp16", "--json", path, *extra],
                       capture_output=True, text=True, timeout=120, env=env)
    open(f"{out}/coil_{tag}.log", "w").write(r.stdout + r.stderr)
    try:
        row = json.load(open(path))["rows"][0]
        return row["kernel_ms"], row.get("graph_ms", float("nan"))
    except Exception:
        print(f"coil bench {tag} failed:", (r.stdout + r.stderr)[-400:])
        return float("nan"), float("nan")

rows = []
for r in range(3):
    c_ms, c_graph = coil_bench(f"r{r}")
    i_ms = do_bench(lambda: cf(q, k, v), warmup=25, rep=200, return_mode="median")
    s_ms = do_bench(sdpa, warmup=25, rep=200, return_mode="median")
    m_ms, _ = coil_bench(f"mma{r}", kernel="mma")
    rows.append((c_ms, c_graph, i_ms, s_ms, m_ms))
    print(f"round {r}: coil {c_ms:.4f} ms (CUDA graph {c_graph:.4f}), inductor {i_ms:.4f} ms, sdpa {s_ms:.4f} ms, "
          f"coil mma.sync kernel {m_ms:.4f} ms")
u_ms, _ = coil_bench("unfused", "--attention", "generated")
med = [statistics.median(x[i] for x in rows) for i in range(5)]
flop = 4 * 8 * 16 * 1024 * 1024 * 64
print(f"coil unfused (bmm, softmax, bmm): {u_ms:.4f} ms")
print("%-22s %9s %9s" % ("attention_fp16", "median_ms", "TFLOP/s"))
for name, ms in (("coil", med[0]), ("coil (CUDA graph)", med[1]), ("inductor", med[2]), ("sdpa (eager)", med[3]),
                 ("coil mma.sync kernel", med[4])):
    print("%-22s %9.4f %9.1f" % (name, ms, flop / ms / 1e9))
print(f"coil speed vs Inductor: {med[2] / med[0]:.2f}x; vs SDPA: {med[3] / med[0]:.2f}x (target >= 0.90x)")
json.dump(dict(device=torch.cuda.get_device_name(), rounds=rows, medians=med, unfused_ms=u_ms), open(f"{out}/g7_bench.json", "w"))
EOF
  tail -14 "$out/g7_bench.log"
}

section_sweep() {
  local tiles="128x64x2x2x2 128x64x1x2x2"
  { for t in default mma $tiles simt unfused; do
      case $t in
      default) env= extra= ;;
      mma) env=COIL_CUDA_ATTENTION_KERNEL=mma extra= ;;
      simt) env=COIL_CUDA_ATTENTION_KERNEL=simt extra= ;;
      unfused) env= extra="--attention generated" ;;
      *) env=COIL_CUDA_ATTENTION_TILE=$t extra= ;;
      esac
      env $env timeout 90 .deps/coil bench --backend cuda --only attention_fp16 $extra --json "$out/sweep_$t.json" \
        >"$out/sweep_$t.log" 2>&1
      printf '%-14s %s\n' "$t" "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print("%.4f ms  %.1f TFLOP/s  graph %.4f ms" % (r["kernel_ms"], r["tflops"], r["graph_ms"]))' "$out/sweep_$t.json" 2>/dev/null || echo "failed: $(grep -v '^$' "$out/sweep_$t.log" | tail -1)")"
    done; } | tee "$out/g7_sweep.log" | sed 's/^/sweep /' >>"$sum"
  cat "$out/g7_sweep.log"
}

section_ncu() {
  [ -n "$ncu" ] || { note "ncu: not here"; return; }
  timeout 180 "$ncu" --set full --clock-control none -k regex:coil_attn -c 1 -o "$out/coil_attn" -f \
    .deps/coil bench --backend cuda --only attention_fp16 >"$out/ncu_coil.log" 2>&1
  note "ncu coil: exit $? ($out/coil_attn.ncu-rep)"
  timeout 180 "$ncu" --set full --clock-control none -k regex:'flash|fmha|attn' -c 1 -o "$out/torch_sdpa" -f python3 -c '
import torch, torch.nn.functional as F
q = torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.float16)
for _ in range(3): F.scaled_dot_product_attention(q, q, q, scale=0.125)
torch.cuda.synchronize()' >"$out/ncu_sdpa.log" 2>&1
  note "ncu sdpa: exit $? ($out/torch_sdpa.ncu-rep)"
  for r in coil_attn torch_sdpa; do
    [ -f "$out/$r.ncu-rep" ] && "$ncu" --import "$out/$r.ncu-rep" --page details --csv >"$out/$r.csv" 2>/dev/null
  done
}

parts=${*:-all}
[ "$parts" = all ] && parts="build check sanitize bench sweep"
for p in $parts; do
  start=$(date +%s)
  case $p in
  build) section_build ;;
  check) section_check ;;
  sanitize) section_sanitize ;;
  bench) section_bench ;;
  sweep) section_sweep ;;
  ncu) section_ncu ;;
  *) echo "unknown section $p (build, check, sanitize, bench, sweep, ncu)"; exit 2 ;;
  esac
  echo "[$p: $(($(date +%s) - start)) s]" | tee -a "$sum"
done
echo "==== summary ($sum)"
cat "$sum"
# the device tool brings back a few files: the logs in one archive (no inputs, no cubins)
if [ -n "$OUT" ]; then
  (cd "$out" && tar czf /tmp/g7_logs.tar.gz --exclude='*.safetensors' --exclude='*.cubin' --exclude='*.ncu-rep' . &&
    find . -mindepth 1 -maxdepth 1 ! -name g7_summary.log ! -name '*.ncu-rep' -exec rm -rf {} + && mv /tmp/g7_logs.tar.gz .)
fi
