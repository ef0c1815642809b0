#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh), from the
# repository root: `g1_gpu.sh conformance` runs the cuda plugin on the op cases of G1 and of the
# ops added since (tools/device/g1_ops.txt) and on the whole model tier; `g1_gpu.sh bench` runs
# the G1 graphs side by side with torch.compile (coil, Inductor, coil, Inductor, coil:
# tools/device/g1_inductor.py); no argument does both. Logs, CSVs and JSON under $OUT;
# tools/device/cuda_table.py prints the tables.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/usr/local/cuda/lib64/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
# cuDNN 9 (the cuda plugin's convolutions) as PyTorch ships it, from the nvidia-cudnn wheel
dnn=$(python3 -c 'import sys, glob; print(next(iter(sorted(g for p in sys.path for g in glob.glob(p + "/nvidia/cudnn/lib/libcudnn.so.9"))), ""))' 2>/dev/null)
[ -n "$dnn" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$dnn")
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >"$out/g1_env.log" 2>&1
part=${1:-all} # conformance, bench or all (one device call may not hold both)
if [ "$part" != bench ]; then
# the op cases: the G1 ops, and the ops of tools/device/g1_ops.txt (about 4,300 cases in all
# dtypes, more than one device call runs), in the dtypes of $G1_DTYPES (a regular expression,
# default f32)
new=$(grep -v '^#' tools/device/g1_ops.txt | sed 's/\./\\./g' | paste -sd'|')
.deps/coil-conformance --plugin cuda --source-dir . --tier op -j 16 --csv "$out/cuda_g1_op.csv" \
  --filter "op/(aten\.(index\.Tensor|gather|embedding|convolution|max_pool2d|avg_pool2d|view|cumsum|topk|_softmax|native_layer_norm|sum|var|mean|amax|argmax|max\.dim|min\.dim|prod|any|rms|mul|add|to_copy)[^/]*|$new)/(${G1_DTYPES:-f32})/" \
  >"$out/cuda_g1_op.log" 2>&1
.deps/coil-conformance --plugin cuda --source-dir . --tier model -j 16 --csv "$out/cuda_g1_model.csv" \
  >"$out/cuda_g1_model.log" 2>&1
printf 'coil 1\ngraph bad_embedding(%%w: f32[10, 4]) {\n  %%i = aten.arange.start_step(0, 11, 1)\n  %%out = aten.embedding.default(%%w, %%i)\n  return (%%out)\n}\n' >"$out/bad_emb.coil"
COIL_CACHE_DIR=$out/cache .deps/coil run "$out/bad_emb.coil" --backend cuda >"$out/cuda_bad_index.log" 2>&1
echo "exit status $?" >>"$out/cuda_bad_index.log"
rm -rf "$out/cache" "$out/bad_emb.coil"
fi
if [ "$part" != conformance ]; then
graphs=embedding_layernorm,conv_bn_relu_maxpool,cumsum_rows
# Inductor's times of these graphs vary more from run to run than coil's: it runs twice, around
# coil's second run, and the table is printed against each
{ .deps/coil bench --backend cuda --only $graphs --json "$out/coil_g1_1.json"
  python3 tools/device/g1_inductor.py && cp "$out/inductor_g1.json" "$out/inductor_g1_a.json"
  .deps/coil bench --backend cuda --only $graphs --json "$out/coil_g1_2.json"
  python3 tools/device/g1_inductor.py && cp "$out/inductor_g1.json" "$out/inductor_g1_b.json"
  .deps/coil bench --backend cuda --only $graphs --json "$out/coil_g1_3.json"
  python3 tools/device/cuda_table.py "$out/inductor_g1_a.json" "$out/coil_g1_1.json" "$out/coil_g1_2.json"
  python3 tools/device/cuda_table.py "$out/inductor_g1_b.json" "$out/coil_g1_2.json" "$out/coil_g1_3.json"; } \
  >"$out/g1_bench.log" 2>&1
fi
ls /usr/local/cuda/bin 2>/dev/null | grep -E '^(ncu|nsys)$' >"$out/profilers.txt"
[ "$part" != bench ] && { tail -n 3 "$out/cuda_g1_op.log" "$out/cuda_g1_model.log" "$out/cuda_bad_index.log"
  grep -E "FAIL|not supported" "$out/cuda_g1_op.log" | head -40; }
[ "$part" != conformance ] && tail -30 "$out/g1_bench.log"
exit 0
