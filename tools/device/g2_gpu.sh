#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh), from the
# repository root: installs the coil Python package from the repository with pip (scikit-build-core
# builds libcoil.so and the plugins there, against the headers of .deps/sysroot), then
#   g2_gpu.sh test    the pytest suite (tools/python/tests) on cpu and cuda
#   g2_gpu.sh bench   tools/python/bench_models.py: eager, torch.compile and coil side by side
#   g2_gpu.sh profile kernels per model under Inductor and coil (g2_profile.py), host overhead
#   g2_gpu.sh attention  bench of the four transformers with [coil] attention = auto, then library
#   g2_gpu.sh install the package only
#   g2_gpu.sh run SCRIPT [ARGS]  python3 SCRIPT with the package installed
#   g2_gpu.sh         test and bench
# Logs and JSON under $OUT.
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-/tmp}
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
S=$PWD/.deps/sysroot
export LD_LIBRARY_PATH=$PWD/.deps/lib:$S/usr/lib/x86_64-linux-gnu:$(dirname "${nv:-/usr/local/cuda/lib64/x}")
dnn=$(python3 -c 'import sys, glob; print(next(iter(sorted(g for p in sys.path for g in glob.glob(p + "/nvidia/cudnn/lib/libcudnn.so.9"))), ""))' 2>/dev/null)
[ -n "$dnn" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$dnn")
# pkg-config for CMake: the carried pkgconf, looking only in the sysroot
export PKG_CONFIG=$S/usr/bin/pkgconf PKG_CONFIG_SYSROOT_DIR=$S
export PKG_CONFIG_LIBDIR=$S/usr/lib/x86_64-linux-gnu/pkgconfig:$S/usr/share/pkgconfig
export PYTHONUNBUFFERED=1 COIL_CACHE_DIR=/tmp/coil-cache-$$ # outside $OUT: the cache need not come back
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } >"$out/g2_env.log" 2>&1

rm -rf tools/python/build # a stale CMake cache from another machine or sysroot
start=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps -v \
  -C cmake.define.CMAKE_PROGRAM_PATH=$S/usr/bin -C cmake.define.PKG_CONFIG_EXECUTABLE=$PKG_CONFIG \
  ./tools/python >"$out/pip.log" 2>&1
rc=$?
echo "pip install: exit $rc in $(( $(date +%s) - start )) s" | tee -a "$out/g2_env.log"
if [ $rc -ne 0 ]; then
  tail -40 "$out/pip.log"
  exit 1
fi
python3 -c 'import coil, torch; print("coil", coil.__file__); from torch._dynamo import list_backends; print("coil" in list_backends())' >>"$out/g2_env.log" 2>&1

part=${1:-all}
[ "$part" = install ] && exit 0 # the package only (tools/device/g4_gpu.sh bench)
if [ "$part" = run ]; then # a script of ours with the package installed: g2_gpu.sh run SCRIPT [ARGS]
  shift
  python3 "$@"
  exit $?
fi
if [ "$part" = profile ]; then # where forward time goes (tools/device/g2_profile.py), and the host overhead again
  { python3 tools/device/g2_profile.py small_cnn squeezenet
    python3 tools/device/g2_profile.py mobilenet bert --mode reduce-overhead; } >"$out/g2_profile.log" 2>&1
  python3 tools/python/bench_models.py --device cuda --models none --json "$out/overhead.json" >"$out/overhead.log" 2>&1
  tail -n 3 "$out/overhead.log"
  grep -E "launches|us/call" "$out/g2_profile.log" | head -120
  exit 0
fi
if [ "$part" = attention ]; then # the transformers with coil.attention where the plugin takes it, and forced
  ms=gpt2,bert,encoder_layer,vit
  python3 tools/python/bench_models.py --device cuda --iters 200 --models $ms --json "$out/attn_auto.json" \
    >"$out/attn_auto.log" 2>&1
  COIL_ATTENTION=library python3 tools/python/bench_models.py --device cuda --iters 200 --models $ms \
    --json "$out/attn_library.json" >"$out/attn_library.log" 2>&1
  for f in auto library; do echo "== COIL_ATTENTION=$f"; grep -v "^{" "$out/attn_$f.log" | tail -12; done
  exit 0
fi
if [ "$part" != bench ]; then
  python3 -m pytest tools/python/tests -q -rs -p no:cacheprovider --junitxml="$out/pytest.xml" >"$out/pytest.log" 2>&1
  echo "pytest: exit $?" >>"$out/g2_env.log"
fi
if [ "$part" != test ]; then
  python3 tools/python/bench_models.py --device cuda --iters 200 --json "$out/bench_models.json" >"$out/bench_models.log" 2>&1
  echo "bench: exit $?" >>"$out/g2_env.log"
fi
cat "$out/g2_env.log"
[ "$part" != bench ] && tail -30 "$out/pytest.log"
[ "$part" != test ] && tail -40 "$out/bench_models.log"
exit 0
