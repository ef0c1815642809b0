#!/bin/bash
# On the GPU machine (the `device` tool), from the repository root: the generated convolution
# (core/lower_conv.c) in one run, for docs/benchmarks.md and docs/models.md:
#   1. the cuda plugin with [coil] convolution = generated (it claims convolution where cuDNN
#      loads; the ini keeps the generated kernel), on the op tier's convolution cases and the
#      whole model tier (CNNs included);
#   2. `coil bench --conv` on the host CPU pinned to two cores (and to one): the cpu plugin's
#      convolution as its library call (im2col + OpenBLAS) and as the generated kernel.
# The machine has none of our Debian packages: build here and carry .deps/ holding coil and
# coil-conformance, plugins/ (libcoil_cpu.so, libcoil_interp.so, libcoil_cuda.so) and lib/
# (libcjson, libinih, libxxhash, libopenblas and its libgfortran/libquadmath). Logs in $OUT.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
export COIL_CACHE_DIR=  # no compile cache: every run compiles
out=${OUT:-/tmp}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep -E "Model name|^CPU\(s\)|L3"; } \
  >"$out/conv_env.log" 2>&1
.deps/coil-conformance --plugin cuda --source-dir . --config conformance/tests/conv_generated.ini \
  --tier op --filter 'op/aten\.convolution' -j 8 \
  --csv "$out/cuda_conv_op.csv" >"$out/cuda_conv_op.log" 2>&1
.deps/coil-conformance --plugin cuda --source-dir . --config conformance/tests/conv_generated.ini --tier model -j 8 \
  >"$out/cuda_model.log" 2>&1
{ taskset -c 0,1 .deps/coil bench --conv --rounds 3 --threads 2
  taskset -c 0 .deps/coil bench --conv --rounds 2 --threads 1; } >"$out/conv_bench.log" 2>&1
tail -n 4 "$out"/cuda_conv_op.log "$out"/cuda_model.log; cat "$out/conv_bench.log"
