cd /work/main 2>/dev/null || true
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
dnn=$(python3 -c 'import sys, glob; print(next(iter(sorted(g for p in sys.path for g in glob.glob(p + "/nvidia/cudnn/lib/libcudnn.so.9"))), ""))')
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/usr/local/cuda/lib64/x}"):$(dirname "$dnn") COIL_PLUGIN_PATH=$PWD/.deps/plugins
.deps/coil-conformance --plugin cuda --source-dir . --tier op,model -j 16 --filter 'op/aten\.convolution|op/.*/rows|model/(m02|m03|m04|e11)' 2>&1 | tail -12
.deps/coil bench --backend cuda --only embedding_layernorm,conv_bn_relu_maxpool 2>&1 | tail -4
