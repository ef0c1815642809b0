#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh), from the
# repository root: G7's decompose-K on the cuda plugin.
#   1. coil-conformance on cuda: the op tier's mm, addmm and bmm cases, and with decompose_k = 8
#      (conformance/tests/decompose_k.ini) the mm and addmm cases and the model tier;
#   2. coil bench --only mm_skinny_k_fp16,mm_tiny_out_fp16,mm_skinny_k_f32 with --decompose-k off, auto and each
#      slice count (one process each, three rounds: the machine drifts);
#   3. PyTorch's side, tools/device/decompose_k.py: torch.mm, the eager decomposition, Inductor
#      default and max-autotune;
# then tools/device/decompose_k_table.py prints the table; the logs and JSON in $OUT/dk_logs.tar.gz.
# About 3 minutes on an H100.
cd "$(dirname "$0")/../.." || exit 1
[ -x .deps/coil ] || { echo "no .deps/coil: run tools/device/pack.sh after a build, and carry .deps"; exit 1; }
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
export PYTHONUNBUFFERED=1 COIL_CACHE_DIR=/tmp/coil-cache-$$
out=${OUT:-/tmp/dk}
mkdir -p "$out"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } | tee "$out/dk_env.log"
timeout 240 .deps/coil-conformance --plugin cuda --source-dir . --tier op -j 16 --csv "$out/dk_op.csv" \
  --filter 'op/aten\.(mm|addmm|bmm)\.[^/]*/' >"$out/dk_op.log" 2>&1
echo "check op tier (exit $?): $(tail -n 1 "$out/dk_op.log")"
grep -E "decompose_k|FAIL|crash|timeout" "$out/dk_op.log" | head -20
# every mm and addmm whose K divides by 8 decomposed: the products of the op tier, the models
timeout 240 .deps/coil-conformance --plugin cuda --source-dir . --tier op,model -j 16 \
  --config conformance/tests/decompose_k.ini --csv "$out/dk8.csv" \
  --filter 'op/aten\.(mm|addmm)\.|model/' >"$out/dk8.log" 2>&1
echo "check decompose_k = 8, op (mm, addmm) and model tiers (exit $?): $(tail -n 1 "$out/dk8.log")"
grep -E "FAIL|crash|timeout" "$out/dk8.log" | head -20
for round in 1 2 3; do
  for s in off auto 4 8 16 32 64; do
    timeout 120 .deps/coil bench --backend cuda --only mm_skinny_k_fp16,mm_tiny_out_fp16,mm_skinny_k_f32 --decompose-k $s \
      --json "$out/coil_${s}_$round.json" >"$out/coil_${s}_$round.log" 2>&1 || echo "coil bench $s: exit $?"
  done
done
timeout 400 python3 tools/device/decompose_k.py "$out/torch.json" 2>&1 | tail -5
python3 tools/device/decompose_k_table.py "$out" | tee "$out/dk_table.md"
# one tarball (the device tool brings back few files): the table and the env stay beside it
(cd "$out" && tar czf /tmp/dk_logs.tar.gz --exclude dk_table.md --exclude dk_env.log . &&
  find . -type f ! -name dk_table.md ! -name dk_env.log -delete && mv /tmp/dk_logs.tar.gz .)
