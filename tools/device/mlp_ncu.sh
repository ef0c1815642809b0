#!/bin/bash
# On the GPU machine (carrying .deps/): the MLP benchmark graph's kernels (gelu(x @ w1) @ w2, f16
# 4096^3) under Nsight Compute, coil's (`coil bench --only mlp_fp16`) and Inductor's
# (torch.compile of the anchor's lambda), one duration per launch, to see which of the three
# kernels holds the gap. Writes $OUT/mlp_ncu_{coil,inductor}.csv and prints the launches.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins COIL_CACHE_DIR=/tmp/mlpc$$
out=${OUT:-/tmp}
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
m="--clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv --page raw"
timeout 200 $ncu $m --launch-skip 30 --launch-count 9 .deps/coil bench --backend cuda --only mlp_fp16 >"$out/mlp_ncu_coil.csv" 2>"$out/mlp_ncu_coil.err"
timeout 200 $ncu $m -k regex:'gemm|gelu|triton|sm90|cutlass|nvjet' --launch-skip 30 --launch-count 9 python3 -c '
import torch, torch.nn.functional as F
R = lambda: torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
x, w1, w2 = R(), R(), R()
f = torch.compile(lambda x, w1, w2: F.gelu(x @ w1) @ w2)
for _ in range(20): f(x, w1, w2)
torch.cuda.synchronize()' >"$out/mlp_ncu_inductor.csv" 2>"$out/mlp_ncu_inductor.err"
for s in coil inductor; do
  echo "== $s"
  python3 - "$out/mlp_ncu_$s.csv" <<'P'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if h is None:
    print(open(sys.argv[1]).read()[-800:]); sys.exit()
k, u = rows[h], dict(zip(rows[h], rows[h + 1]))
print("units:", u.get("gpu__time_duration.sum"), u.get("dram__bytes_read.sum"))
for r in rows[h + 2:]:
    d = dict(zip(k, r))
    print("%-70s %10s  rd %8s  wr %8s" % (d["Kernel Name"][:70], d.get("gpu__time_duration.sum"), d.get("dram__bytes_read.sum"), d.get("dram__bytes_write.sum")))
P
done
