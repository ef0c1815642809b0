#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh), from the
# repository root: G7's memory-bound graphs and the small-kernel chain, coil against Inductor.
#   g7_mem.sh [side|ncu|code] ...   (default: side ncu code)
#   side   tools/device/cuda_side_by_side.sh: coil bench, the anchor script (Inductor), coil
#          again and coil max-autotune, one table (table.md)
#   ncu    Nsight Compute (a fixed metric list, clocks not locked) on three launches of each
#          kernel of coil's and of Inductor's for the five memory-bound graphs and the chain:
#          duration, DRAM bytes and throughput, instructions, occupancy, grid, block, registers
#   code   Inductor's generated Triton code for the same graphs (TORCH_LOGS=output_code), to
#          compare block shapes and cache hints with coil's kernels.cu
# Logs and CSVs under $OUT, a summary last. About 6 minutes on an H100.
cd "$(dirname "$0")/../.." || exit 1
[ -x .deps/coil ] || { echo "no .deps/coil: run tools/device/pack.sh after a build, and carry .deps"; exit 1; }
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
export PYTHONUNBUFFERED=1 COIL_CACHE_DIR=/tmp/coil-cache-$$
out=${OUT:-/tmp/g7mem}
mkdir -p "$out"
sum=$out/g7_mem_summary.log
: >"$sum"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
graphs="pointwise_gelu_affine softmax_lastdim layernorm sum_dim1 rmsnorm_residual_fp16 small_chain_10ops_1k"
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread,lts__t_sector_hit_rate.pct,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio

# the anchor's graphs as Python, one per name, for Inductor under ncu and for its code
cat >"$out/inductor_graph.py" <<'EOF'
import sys, torch, torch.nn.functional as F
f32, f16 = torch.float32, torch.float16
R = lambda *s, dt=f32: torch.randn(*s, device="cuda", dtype=dt)
def chain(x):
    for i in range(10): x = torch.sin(x) * 1.01 + 0.1
    return x
G = {
  "pointwise_gelu_affine": (lambda x, w, b: F.gelu(x * w + b), lambda: (R(8192, 8192), R(8192), R(8192))),
  "softmax_lastdim": (lambda x: torch.softmax(x, -1), lambda: (R(8192, 4096),)),
  "layernorm": (lambda x, w, b: F.layer_norm(x, (4096,), w, b), lambda: (R(8192, 4096), R(4096), R(4096))),
  "sum_dim1": (lambda x: x.sum(1), lambda: (R(16384, 8192),)),
  "rmsnorm_residual_fp16": (lambda x, r, w: ((x + r) * torch.rsqrt((x + r).float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(f16) * w,
                            lambda: (R(8192, 4096, dt=f16), R(8192, 4096, dt=f16), R(4096, dt=f16))),
  "small_chain_10ops_1k": (chain, lambda: (R(1024),)),
}
fn, mk = G[sys.argv[1]]
args = mk()
cf = torch.compile(fn)
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 8):
    cf(*args)
torch.cuda.synchronize()
EOF

section_side() {
  cp ../shared/anchors/inductor_baseline.py .deps/ 2>/dev/null || true
  timeout 540 bash tools/device/cuda_side_by_side.sh >"$out/side.log" 2>&1
  note "side: exit $?"
  [ -f "$out/table.md" ] && cat "$out/table.md" >>"$sum"
}

section_ncu() {
  [ -n "$ncu" ] || { note "ncu: not here"; return; }
  for g in $graphs; do
    # coil: bench runs warm-up launches first; skip them, then three launches of its kernels
    timeout 120 "$ncu" --metrics $metrics --clock-control none -k regex:'^coil_' --launch-skip 6 --launch-count 3 \
      --csv .deps/coil bench --backend cuda --only "$g" >"$out/ncu_coil_$g.csv" 2>"$out/ncu_coil_$g.err"
    note "ncu coil $g: exit $?"
    timeout 200 "$ncu" --metrics $metrics --clock-control none -k regex:'^triton_' --launch-skip 3 --launch-count 3 \
      --csv python3 "$out/inductor_graph.py" "$g" 8 >"$out/ncu_inductor_$g.csv" 2>"$out/ncu_inductor_$g.err"
    note "ncu inductor $g: exit $?"
  done
  python3 - "$out" $graphs <<'EOF' | tee -a "$sum"
import csv, io, sys, collections
out, graphs = sys.argv[1], sys.argv[2:]
short = {"gpu__time_duration.sum": "us", "dram__bytes_read.sum": "rd_MB", "dram__bytes_write.sum": "wr_MB",
         "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%", "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm%",
         "smsp__inst_executed.sum": "Minst", "sm__warps_active.avg.pct_of_peak_sustained_active": "occ%",
         "launch__grid_size": "grid", "launch__block_size": "block", "launch__registers_per_thread": "regs",
         "lts__t_sector_hit_rate.pct": "L2hit%", "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio": "lsb"}
scale = {"us": 1e-3, "rd_MB": 1e-6, "wr_MB": 1e-6, "Minst": 1e-6}
print("%-24s %-8s %-44s %s" % ("graph", "who", "kernel", " ".join("%8s" % v for v in short.values())))
for g in graphs:
    for who in ("coil", "inductor"):
        try:
            text = open(f"{out}/ncu_{who}_{g}.csv").read()
            text = text[text.index('"ID"'):]
        except Exception:
            print(f"{g:24s} {who:8s} (no profile)"); continue
        rows = collections.OrderedDict()
        for r in csv.DictReader(io.StringIO(text)):
            key = (r["ID"], r["Kernel Name"][:44])
            rows.setdefault(key, {})[r["Metric Name"]] = (r["Metric Unit"], r["Metric Value"])
        for (i, name), m in rows.items():
            vals = []
            for k, s in short.items():
                unit, v = m.get(k, ("", "nan"))
                try:
                    x = float(v.replace(",", ""))
                except ValueError:
                    vals.append("%8s" % v[:8]); continue
                if unit in ("nsecond",) and s == "us": x *= 1e3
                if unit == "usecond" and s == "us": x *= 1e3
                if unit == "msecond" and s == "us": x *= 1e6
                if unit == "Kbyte": x *= 1e3
                if unit == "Mbyte": x *= 1e6
                if unit == "Gbyte": x *= 1e9
                vals.append("%8.3g" % (x * scale.get(s, 1)))
            print("%-24s %-8s %-44s %s" % (g, who, name, " ".join(vals)))
EOF
}

section_code() {
  for g in $graphs; do
    TORCH_LOGS=output_code timeout 200 python3 "$out/inductor_graph.py" "$g" 1 >"$out/code_$g.log" 2>&1
    note "code $g: exit $?, $(grep -c '@triton.jit' "$out/code_$g.log") triton kernels"
  done
}

note() { echo "$*" | tee -a "$sum"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee -a "$sum"
parts=${*:-side ncu code}
for p in $parts; do
  start=$(date +%s)
  case $p in
  side) section_side ;;
  ncu) section_ncu ;;
  code) section_code ;;
  *) echo "unknown section $p (side, ncu, code)"; exit 2 ;;
  esac
  echo "[$p: $(($(date +%s) - start)) s]" | tee -a "$sum"
done
echo "==== summary"
cat "$sum"
if [ -n "$OUT" ]; then
  (cd "$out" && tar czf /tmp/g7_mem_logs.tar.gz . && find . -mindepth 1 -maxdepth 1 ! -name g7_mem_summary.log -exec rm -rf {} + &&
    mv /tmp/g7_mem_logs.tar.gz .)
fi
