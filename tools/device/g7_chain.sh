#!/bin/bash
# On the GPU machine: the 10-op chain of small_chain_10ops_1k (sin, *1.01, +0.1, ten times, 1024
# f32) as hand-written CUDA in six launch shapes (tools/device/g7_chain.cu), each launched 20
# times under ncu (gpu__time_duration, clocks locked by ncu: compare shapes, not absolute times).
# Output: $OUT/chain_ncu.csv and the median per shape.
cd "$(dirname "$0")"; src=$PWD/g7_chain.cu; cd "${TMPDIR:-/tmp}"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$nvcc -O3 -arch=sm_90 -o chain "$src" 2>&1 | tail -3
./chain
$ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --csv ./chain 2>/dev/null > $OUT/chain_ncu.csv
python3 - <<'P'
import csv, os, statistics, collections
lines = open(os.environ["OUT"] + "/chain_ncu.csv").read().splitlines()
rows = list(csv.DictReader(lines[next(i for i, l in enumerate(lines) if l.startswith('"ID"')):]))
t = collections.defaultdict(list)
for i, r in enumerate(r for r in rows if r["Metric Name"] == "gpu__time_duration.sum"):
    t["ABCDEF"[i % 6]].append(float(r["Metric Value"].replace(",", "")))
for k in "ABCDEF": print(k, "median ns", statistics.median(t[k]) if t[k] else None)
P
