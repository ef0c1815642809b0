#!/bin/bash
# On the GPU machine: compiles the rmsnorm benchmark graph with coil's cuda plugin, compiles the same
# graph with Inductor (torch.compile) and dumps its Triton code, PTX, TTGIR and chosen config, builds
# tools/device/rms_variants.cu after the cuda plugin's whole kernels.cu (prelude and coil's kernel),
# and runs it with coil's NVRTC cubin and Inductor's Triton cubin, so that coil's kernel, Inductor's
# and the hand-written variants are checked and timed in one harness (then coil's and Inductor's alone
# on standard normal inputs, and `coil bench` on the graph, BENCH=0 skips it); then do_bench of Inductor's
# compiled function (median) as a cross-check, ncu on one launch of each variant (NCU=0 skips it), and
# the SASS of the three kinds of kernel. Needs .deps/ (tools/device/pack.sh). Files go to $OUT
# (default: $TMPDIR/rmsv/out).
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
t=${TMPDIR:-/tmp}/rmsv; rm -rf "$t"; mkdir -p "$t/ind"
OUT=${OUT:-$t/out}; mkdir -p "$OUT"
export T=$t OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
date -u
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
kn=$(awk '/^extern "C" __global__/ {getline; sub(/\(.*/, ""); print; exit}' "$t/art/kernels.cu")
kthreads=$(awk '/^k0 / {print $3}' "$t/art/plans.txt")
echo "coil kernel $kn, plan: $(cat "$t/art/plans.txt")"

# Inductor: compile, dump, and time with do_bench (median); MODE=bench only times
cat >"$t/ind.py" <<'P'
import os, sys, json, glob
import torch, triton
from triton.testing import do_bench
t, out, mode = os.environ["T"], os.environ["OUT"], sys.argv[1]
def f(x, r, w):
    h = x + r
    hf = h.float()
    return (h * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6)).half() * w
torch.manual_seed(0)
x, r = (torch.randn(8192, 4096, device="cuda", dtype=torch.float16) for _ in range(2))
w = torch.randn(4096, device="cuda", dtype=torch.float16)
g = torch.compile(f)
y = g(x, r, w)
torch.cuda.synchronize()
ref = f(x.double(), r.double(), w.double())
print(f"inductor vs f64 eager: rel err {((y.double() - ref).norm() / ref.norm()).item():.2e}, torch {torch.__version__}, triton {triton.__version__}")
if mode == "dump":
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    ks = {}
    for m in list(sys.modules.values()):
        for k, v in list(getattr(m, "__dict__", {}).items()):
            if isinstance(v, CachingAutotuner):
                ks[k] = v
    xb, rb, kname = 1, None, None
    for k, v in ks.items():
        print("kernel", k, "candidate configs:", [str(c) for c in (getattr(v, "configs", None) or [])])
        for l in getattr(v, "launchers", None) or []:
            cfg = l.config
            xb, rb, kname = cfg.kwargs.get("XBLOCK", 1), cfg.kwargs.get("R0_BLOCK"), k
            print("  launcher config", cfg, "n_regs", getattr(l, "n_regs", "?"), "n_spills", getattr(l, "n_spills", "?"),
                  "shared", getattr(l, "shared", "?"))
    # the cubin, PTX and TTGIR from Triton's cache (Inductor may keep it under its own cache dir)
    js = [p for d in (t + "/tritoncache", t + "/indcache", os.path.expanduser("~/.triton/cache"), "/tmp/torchinductor_" + os.environ.get("USER", "root")) for p in glob.glob(d + "/**/*.json", recursive=True)
          if not os.path.basename(p).startswith("__grp__") and os.path.exists(p[:-5] + ".cubin")]
    names = [json.load(open(p)).get("name") for p in js]
    print("triton cache kernels:", names)
    # several compiles of the kernel (Inductor compiles more than one R0_BLOCK): the launcher's, by
    # the row tile in its TTGIR (tensor<XBLOCKxR0_BLOCK x ...>), taken last so that it wins
    tile = lambda p: os.path.exists(p[:-5] + ".ttgir") and f"tensor<{xb}x{rb}x" in open(p[:-5] + ".ttgir").read()
    js.sort(key=tile)
    print("compiles matching the launcher's XBLOCK x R0_BLOCK:", [tile(p) for p in js])
    for p in js:
        md = json.load(open(p))
        if md.get("name") != (kname if kname in names else md.get("name")) or not str(md.get("name")).startswith("triton_"):
            continue
        keep = {a: md[a] for a in ("name", "num_warps", "num_ctas", "num_stages", "shared", "cluster_dims", "maxnreg",
                                   "global_scratch_size", "profile_scratch_size", "target") if a in md}
        print("  triton cache", p, keep)
        for ext in ("ptx", "ttgir", "ttir"):
            if os.path.exists(p[:-5] + "." + ext):
                open(f"{out}/inductor_kernel.{ext}", "w").write(open(p[:-5] + "." + ext).read())
        open(f"{t}/ind/ind.cubin", "wb").write(open(p[:-5] + ".cubin", "rb").read())
        with open(f"{t}/ind/launch.txt", "w") as fh:
            fh.write(f"{t}/ind/ind.cubin {md['name']} {int(md['num_warps']) * 32} {int(md.get('shared', 0))} {(8192 + xb - 1) // xb}\n")
    if not js:
        print("no Triton cubin found under", t)
for i in range(2):
    ms = do_bench(lambda: g(x, r, w), warmup=25, rep=200, return_mode="median")
    print(f"Inductor (torch.compile, do_bench median): {ms * 1e3:8.2f} us  {3 * 8192 * 4096 * 2 / (ms * 1e-3) / 1e9:5.0f} GB/s")
P
export TORCHINDUCTOR_CACHE_DIR=$t/indcache TRITON_CACHE_DIR=$t/tritoncache PYTHONUNBUFFERED=1
TORCH_LOGS=output_code python3 "$t/ind.py" dump 2>"$OUT/inductor_output_code.log"
ind=$(cat "$t/ind/launch.txt" 2>/dev/null)
echo "inductor launch: ${ind:-none}"
[ -z "$ind" ] && tail -20 "$OUT/inductor_output_code.log"

{ cat "$t/art/kernels.cu"; echo '#include <type_traits>'; cat tools/device/rms_variants.cu; } >"$t/rv.cu"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$nvcc -O3 -std=c++17 -arch=sm_90 -w -DCOIL_KNAME="$kn" -Xptxas -v -Xcompiler -fopenmp -o "$t/rv" "$t/rv.cu" -lcuda -lgomp \
  >"$OUT/ptxas.log" 2>&1 || { cat "$OUT/ptxas.log"; exit 1; }
echo "registers (ptxas -v):"
awk "/Compiling entry function/ {match(\$0, /'[^']*'/); f=substr(\$0, RSTART+1, RLENGTH-2)} /Used [0-9]+ registers/ {match(\$0, /Used [0-9]+ registers/); print \"  \" substr(\$0, RSTART+5, RLENGTH-15), f}" \
  "$OUT/ptxas.log" | { command -v c++filt >/dev/null && c++filt || cat; } | sed 's/(unsigned short const\*, unsigned short const\*, unsigned short const\*, unsigned short\*)//'
grep -q "[1-9][0-9]* bytes spill" "$OUT/ptxas.log" && echo "SPILLS:" && grep "[1-9][0-9]* bytes spill" "$OUT/ptxas.log"

args=(--coil "$t/art/k0.cubin" "$kn" "${kthreads:-256}")
[ -n "$ind" ] && args+=(--inductor $ind)
export OMP_NUM_THREADS=$(nproc)
echo "== every variant, inputs ${RMS_ARGS:-uniform} (RMS_ARGS)"
"$t/rv" "${args[@]}" $RMS_ARGS
# RMS_MORE="ARGS;ARGS...": the first three variants again under each set of extra arguments
IFS=';' read -ra more <<<"${RMS_MORE:-}"
for m in "${more[@]}"; do
  echo "== coil's and Inductor's kernels again: $m ($(date -u +%T))"
  "$t/rv" "${args[@]}" --first 3 $m | grep -v "^check"
done
echo "== coil's and Inductor's kernels again, standard normal inputs"
"$t/rv" "${args[@]}" --normal --first 3 | grep -v "^check"
python3 "$t/ind.py" bench 2>/dev/null
if [ "${BENCH:-1}" = 1 ]; then
  echo "== coil bench (the plugin's executor, standard normal inputs), twice"
  for i in 1 2; do .deps/coil bench --backend cuda --only rmsnorm_residual_fp16 2>&1 | grep -v "^$"; done
fi

# ncu_table CSV [full]: one line a launch (us, DRAM MB read / written, L2 hit %; full: achieved
# occupancy %, registers and block too)
ncu_table() {
  python3 - "$1" "${2:-}" <<'P'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: sys.exit()
h = rows[0]; ix = {k: h.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
d = collections.OrderedDict()
for r in rows[1:]:
    d.setdefault((r[ix["ID"]], r[ix["Kernel Name"]]), {})[r[ix["Metric Name"]]] = r[ix["Metric Value"]]
for (i, k), m in d.items():
    g = lambda n: float(m.get(n, "nan").replace(",", ""))
    line = (f"  {i:>3} {k[:60]:60} {g('gpu__time_duration.sum') / 1e3:7.2f} {g('dram__bytes_read.sum') / 1e6:7.1f}"
            f" {g('dram__bytes_write.sum') / 1e6:6.1f} {g('lts__t_sector_hit_rate.pct'):5.1f}")
    if sys.argv[2] == "full":
        line += f" {g('sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f} {m.get('launch__registers_per_thread')} {m.get('launch__block_size')}"
    print(line)
P
}

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  timeout 200 ncu --clock-control none \
    --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size,launch__occupancy_limit_registers \
    --csv "$t/rv" "${args[@]}" --once >"$OUT/ncu.csv" 2>"$t/ncu.err" || { echo "ncu rc $?"; tail -5 "$t/ncu.err"; }
  echo "ncu (one launch each, in the harness's order): us, DRAM MB read / written, L2 hit %, achieved occupancy %, regs, block"
  ncu_table "$OUT/ncu.csv" full
  if [ "${NCU_DIRTY:-0}" = 1 ]; then
    # each launch after a 256 MB write by a kernel, L2 left as it is (dirty, as under do_bench's
    # zero_()): what each variant reads and writes in DRAM then, write-backs of the flush included
    timeout 200 ncu --clock-control none --cache-control none --print-units base \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
      --csv "$t/rv" "${args[@]}" --ncuflush --normal >"$OUT/ncu_dirty.csv" 2>"$t/ncu2.err" || { echo "ncu rc $?"; tail -5 "$t/ncu2.err"; }
    echo "ncu, each launch after a 256 MB kernel write, --cache-control none (L2 dirty), normal inputs: us, DRAM MB read / written, L2 hit %"
    ncu_table "$OUT/ncu_dirty.csv"
  fi
fi
command -v cuobjdump >/dev/null && {
  mkdir -p "$t/sass"
  cuobjdump --dump-sass "$t/art/k0.cubin" >"$t/sass/coil_k0.sass" 2>&1
  [ -f "$t/ind/ind.cubin" ] && cuobjdump --dump-sass "$t/ind/ind.cubin" >"$t/sass/inductor.sass" 2>&1
  cuobjdump --dump-sass "$t/rv" >"$t/sass/rv.sass" 2>&1
  cp "$t/rv.cu" "$t/sass/"
  tar czf "$OUT/sass.tar.gz" -C "$t" sass
}
ls -la "$OUT"
