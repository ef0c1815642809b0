#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh plus the
# template plugin in .deps/template), from the repository root: G6's changes seen on a GPU.
#   - cuda and hip (NVIDIA platform) now compile from the program's text (ABI 1.3's handoff):
#     their model and abi tiers, and cuda's op cases of the G1 ops in f32;
#   - partial offload with a GPU plugin in the list: the MLP example on template,cuda (the
#     template's kernels on host memory or its fake device, the matmuls on the GPU) and on
#     cuda,cpu, against the reference interpreter.
# Logs under $OUT.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/usr/local/cuda/lib64/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins:$PWD/.deps/template
dnn=$(python3 -c 'import sys, glob; print(next(iter(sorted(g for p in sys.path for g in glob.glob(p + "/nvidia/cudnn/lib/libcudnn.so.9"))), ""))' 2>/dev/null)
[ -n "$dnn" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$dnn")
out=${OUT:-/tmp}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >"$out/g6_env.log" 2>&1
cat "$out/g6_env.log"
for p in cuda hip; do
  .deps/coil-conformance --plugin $p --source-dir . --tier model,abi -j 16 --csv "$out/${p}_model_abi.csv" \
    >"$out/${p}_model_abi.log" 2>&1
  echo "== $p model,abi"; tail -n 2 "$out/${p}_model_abi.log"; grep -E "FAIL" "$out/${p}_model_abi.log" | head -10
done
new=$(grep -v '^#' tools/device/g1_ops.txt | sed 's/\./\\./g' | paste -sd'|')
.deps/coil-conformance --plugin cuda --source-dir . --tier op -j 16 --csv "$out/cuda_ops.csv" \
  --filter "op/(aten\.(add|mul|relu|sum|_softmax|native_layer_norm|embedding|index\.Tensor|mm|addmm|bmm)[^/]*|$new)/f32/" \
  >"$out/cuda_ops.log" 2>&1
echo "== cuda op (f32 subset)"; tail -n 2 "$out/cuda_ops.log"; grep -E "FAIL" "$out/cuda_ops.log" | head -10
m=examples/mlp.coil w=examples/mlp.weights.safetensors i=examples/mlp.inputs.safetensors
printf '[plugin.template]\ndevice = fake\n' >"$out/fake.ini"
.deps/coil run $m --backend ref --weights $w --inputs $i --out "$out/ref.st" >/dev/null
for b in template,cuda cuda,cpu; do
  echo "== mlp on $b"
  .deps/coil compile $m --backend $b 2>&1 | head -12
  .deps/coil run $m --config "$out/fake.ini" --backend $b --no-cache --weights $w --inputs $i --expect "$out/ref.st" 2>&1 | tail -2
done
