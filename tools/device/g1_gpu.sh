#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh), from the
# repository root, in one run: the cuda plugin on the conformance cases of G1 (indexing, pooling,
# convolution, outputs that are views) and the whole model tier, then the two G1 graphs side by
# side with torch.compile: coil, Inductor (tools/device/g1_inductor.py), coil again. Logs, CSVs
# and JSON under $OUT; tools/device/cuda_table.py prints the table.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/usr/local/cuda/lib64/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
# cuDNN 9 (the cuda plugin's convolutions) as PyTorch ships it, from the nvidia-cudnn wheel
dnn=$(python3 -c 'import sys, glob; print(next(iter(sorted(g for p in sys.path for g in glob.glob(p + "/nvidia/cudnn/lib/libcudnn.so.9"))), ""))' 2>/dev/null)
[ -n "$dnn" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$dnn")
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >"$out/g1_env.log" 2>&1
.deps/coil-conformance --plugin cuda --source-dir . --tier op -j 16 --csv "$out/cuda_g1_op.csv" \
  --filter 'op/aten\.(index\.Tensor|gather|embedding|convolution|max_pool2d|avg_pool2d|view|cumsum|_softmax|native_layer_norm|sum|var|mean|amax|argmax|max\.dim|min\.dim|prod|any|rms|mul|add|to_copy)' >"$out/cuda_g1_op.log" 2>&1
.deps/coil-conformance --plugin cuda --source-dir . --tier model -j 16 --csv "$out/cuda_g1_model.csv" \
  >"$out/cuda_g1_model.log" 2>&1
printf 'coil 1\ngraph bad_embedding(%%w: f32[10, 4]) {\n  %%i = aten.arange.start_step(0, 11, 1)\n  %%out = aten.embedding.default(%%w, %%i)\n  return (%%out)\n}\n' >"$out/bad_emb.coil"
COIL_CACHE_DIR=$out/cache .deps/coil run "$out/bad_emb.coil" --backend cuda >"$out/cuda_bad_index.log" 2>&1
echo "exit status $?" >>"$out/cuda_bad_index.log"
rm -rf "$out/cache" "$out/bad_emb.coil"
graphs=embedding_layernorm,conv_bn_relu_maxpool
{ .deps/coil bench --backend cuda --only $graphs --json "$out/coil_g1_1.json"
  python3 tools/device/g1_inductor.py
  .deps/coil bench --backend cuda --only $graphs --json "$out/coil_g1_2.json"
  python3 tools/device/cuda_table.py "$out/inductor_g1.json" "$out/coil_g1_1.json" "$out/coil_g1_2.json"; } \
  >"$out/g1_bench.log" 2>&1
tail -n 3 "$out/cuda_g1_op.log" "$out/cuda_g1_model.log" "$out/cuda_bad_index.log"; grep -E "FAIL|not supported" "$out/cuda_g1_op.log" | head
cat "$out/g1_bench.log" | tail -30
