#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh), from the
# repository root: runs the hip plugin on HIP's NVIDIA platform (the same HIP source compiled by
# NVRTC for the GPU's sm_XY, run on the CUDA driver behind the plugin's HIP runtime table) and
# the cuda plugin, whose executor moved into coil-sdk with hip's.
#   g3_gpu.sh hip      hip: op tier (the G1 ops and tools/device/g1_ops.txt, dtypes $G3_DTYPES,
#                      default f32), model and abi tiers
#   g3_gpu.sh cuda     cuda: the same op cases and the model tier (a check of the move)
#   g3_gpu.sh bench    coil bench, cuda then hip then cuda
#   g3_gpu.sh gemm     hip's op cases of the library ops (mm, bmm, addmm, linear, matmul, views
#                      of their outputs) in f32, f16 and bf16, the model and abi tiers of both
#                      plugins, cuda's view, addmm and convolution op cases, then bench
#   g3_gpu.sh graphs   the model tier of both plugins with coil.graph_capture = true (mode
#                      reduce-overhead: each case captured into a graph and replayed), then bench
#   g3_gpu.sh blas     hip's mm and bmm through cuBLAS (option gemm = auto): its library-op cases
#                      in f32, f16, bf16, the model tier, and coil bench on the matmul graphs,
#                      cuda, hip, cuda
#   g3_gpu.sh epi      GEMM epilogues (a following bias/relu kernel folded into the generated GEMM):
#                      hip's library-op cases and model tier with gemm = generated (every match
#                      folds) and gemm = auto (small products fold), the model tier with graph
#                      capture, then bench
#   g3_gpu.sh tune     max-autotune: coil bench --autotune on four graphs, cuda then hip, and the
#                      model tier's small cases of both with [coil] mode = max-autotune
# Everything written under $OUT ends up in $OUT/g3_logs.tgz (the device tool returns only a few
# files). $G3_OPS replaces the op filter (a POSIX regular expression over case ids). Logs and CSVs
# under $OUT.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/usr/local/cuda/lib64/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
dnn=$(python3 -c 'import sys, glob; print(next(iter(sorted(g for p in sys.path for g in glob.glob(p + "/nvidia/cudnn/lib/libcudnn.so.9"))), ""))' 2>/dev/null)
[ -n "$dnn" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$dnn")
out=${OUT:-/tmp}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git rev-parse --short HEAD 2>/dev/null; } >"$out/g3_env.log" 2>&1
new=$(grep -v '^#' tools/device/g1_ops.txt | sed 's/\./\\./g' | paste -sd'|')
ops=${G3_OPS:-"op/(aten\.(index\.Tensor|gather|embedding|convolution|max_pool2d|avg_pool2d|view|cumsum|topk|_softmax|native_layer_norm|sum|var|mean|amax|argmax|max\.dim|min\.dim|prod|any|rms|mul|add|to_copy)[^/]*|$new)/(${G3_DTYPES:-f32})/"}
top=${G3_NESTED:-1}
export G3_NESTED=0
case "${1:-hip}" in
blas)
  .deps/coil-conformance --plugin hip --source-dir . --tier op,model -j 16 --csv "$out/hip_blas.csv" \
    --filter 'op/aten\.(addmm|mm|bmm|view|matmul|linear)[^/]*/(f32|f16|bf16)/|model/' >"$out/hip_blas.log" 2>&1
  tail -n 3 "$out/hip_blas.log"; grep -E "FAIL|not supported" "$out/hip_blas.log" | head -20
  g=mlp_fp16,attention_fp16,small_8mm_64,conv_bn_relu_maxpool,softmax_lastdim
  for p in cuda hip cuda; do .deps/coil bench --backend $p --only $g 2>&1 | grep -v '^  \['; done ;;
epi)
  f='op/aten\.(addmm|mm|bmm|view|matmul|linear|relu)[^/]*/(f32|f16|bf16)/|model/'
  printf '[plugin.hip]\ngemm = generated\n' >"$out/generated.ini"
  printf '[plugin.hip]\ncoil.graph_capture = true\n' >"$out/graphs_hip.ini"
  .deps/coil-conformance --plugin hip --config "$out/generated.ini" --source-dir . --tier op,model -j 16 \
    --csv "$out/hip_epi_generated.csv" --filter "$f" >"$out/hip_epi_generated.log" 2>&1
  .deps/coil-conformance --plugin hip --source-dir . --tier op,model,abi -j 16 --csv "$out/hip_epi_auto.csv" \
    --filter "$f|abi/" >"$out/hip_epi_auto.log" 2>&1
  .deps/coil-conformance --plugin hip --config "$out/graphs_hip.ini" --source-dir . --tier model -j 16 \
    --csv "$out/hip_epi_graphs.csv" >"$out/hip_epi_graphs.log" 2>&1
  for l in hip_epi_generated hip_epi_auto hip_epi_graphs; do
    echo "== $l"; tail -n 3 "$out/$l.log"; grep -E "FAIL|not supported" "$out/$l.log" | head -20
  done
  bash "$0" bench ;;
tune)
  g=softmax_lastdim,layernorm,sum_dim1,pointwise_gelu_affine
  for p in cuda hip; do
    .deps/coil bench --backend $p --autotune --only $g --json "$out/tune_bench_$p.json" >"$out/tune_bench_$p.log" 2>&1
    tail -n 6 "$out/tune_bench_$p.log"
    printf '[coil]\nmode = max-autotune\n' >"$out/tune.ini"
    .deps/coil-conformance --plugin $p --config "$out/tune.ini" --source-dir . --tier model -j 16 \
      --filter 'model/(e0|m01)' --csv "$out/${p}_model_tune.csv" >"$out/${p}_model_tune.log" 2>&1
    tail -n 2 "$out/${p}_model_tune.log"; grep FAIL "$out/${p}_model_tune.log" | head
  done
  printf 'coil 1\ngraph g(%%x: f32[4096, 1000]) {\n  %%y = aten._softmax.default(%%x, -1, False)\n  return (%%y)\n}\n' >"$out/sm.coil"
  printf '[coil]\nmode = max-autotune\n' >"$out/tune.ini"
  for p in cuda hip; do
    COIL_CONFIG="$out/tune.ini" .deps/coil compile "$out/sm.coil" --backend $p -o "$out/art_$p" >/dev/null 2>&1
    echo "== $p tuning.log"; cat "$out/art_$p/tuning.log"
  done ;;
graphs)
  for p in hip cuda; do
    printf '[plugin.%s]\ncoil.graph_capture = true\n' $p >"$out/graphs_$p.ini"
    .deps/coil-conformance --plugin $p --config "$out/graphs_$p.ini" --source-dir . --tier model -j 16 \
      --csv "$out/${p}_model_graphs.csv" >"$out/${p}_model_graphs.log" 2>&1
    tail -n 2 "$out/${p}_model_graphs.log"; grep FAIL "$out/${p}_model_graphs.log" | head -20
  done
  bash "$0" bench ;;
gemm)
  G3_OPS='op/aten\.(addmm|mm|bmm|view|matmul|linear)[^/]*/(f32|f16|bf16)/' bash "$0" hip
  G3_OPS='op/aten\.(view|addmm|convolution)[^/]*/f32/' bash "$0" cuda
  bash "$0" bench ;;
hip)
  .deps/coil-conformance --plugin hip --source-dir . --tier op -j 16 --csv "$out/hip_op.csv" --filter "$ops" \
    >"$out/hip_op.log" 2>&1
  .deps/coil-conformance --plugin hip --source-dir . --tier model,abi -j 16 --csv "$out/hip_model_abi.csv" \
    >"$out/hip_model_abi.log" 2>&1
  tail -n 4 "$out/hip_op.log" "$out/hip_model_abi.log"
  grep -E "FAIL|not supported" "$out/hip_op.log" "$out/hip_model_abi.log" | head -40 ;;
cuda)
  .deps/coil-conformance --plugin cuda --source-dir . --tier op -j 16 --csv "$out/cuda_op.csv" --filter "$ops" \
    >"$out/cuda_op.log" 2>&1
  .deps/coil-conformance --plugin cuda --source-dir . --tier model,abi -j 16 --csv "$out/cuda_model_abi.csv" \
    >"$out/cuda_model_abi.log" 2>&1
  tail -n 4 "$out/cuda_op.log" "$out/cuda_model_abi.log"
  grep -E "FAIL" "$out/cuda_op.log" "$out/cuda_model_abi.log" | head -40 ;;
bench)
  { .deps/coil bench --backend cuda --json "$out/bench_cuda_1.json"
    .deps/coil bench --backend hip --json "$out/bench_hip.json"
    .deps/coil bench --backend cuda --json "$out/bench_cuda_2.json"; } >"$out/g3_bench.log" 2>&1
  tail -60 "$out/g3_bench.log" ;;
esac
if [ "$top" = 1 ]; then
  t=$(mktemp -d)
  (cd "$out" && tar czf "$t/g3_logs.tgz" . && find . -mindepth 1 -delete && mv "$t/g3_logs.tgz" .)
fi
exit 0
