#!/bin/bash
# On the GPU machine (the `device` tool, carrying .deps/ from tools/device/pack.sh), from the
# repository root: the fx plugin's GraphModules on the GPU (PyTorch and Triton of that machine).
#   g4_gpu.sh models   every model case of conformance/models through its GraphModule against
#                      PyTorch's outputs (plugins/fx/tests/fx_models.py --device cuda)
#   g4_gpu.sh ops      the op tier: coil-conformance --write-cases (every shape class but large,
#                      or $G4_OPS), each case through its GraphModule against the reference
#                      interpreter by the op tier's rule, 16 at a time; G4_DEADLINE=S starts no case
#                      after S seconds
#   g4_gpu.sh export   print_readable and torch.export of loaded modules (tools/device/g4_export.py)
#   g4_gpu.sh bench    installs the coil package (g2_gpu.sh install), then Inductor, coil's fx
#                      backend and coil's cuda plugin side by side (tools/device/g4_fx_bench.py)
#   g4_gpu.sh          models, export, ops
# Logs under $OUT.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/usr/local/cuda/lib64/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton-cache-g4
out=${OUT:-/tmp}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git rev-parse --short HEAD 2>/dev/null
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } >"$out/g4_env.log" 2>&1
cat "$out/g4_env.log"
part=${1:-all}
if [ "$part" = models ] || [ "$part" = all ]; then
  python3 plugins/fx/tests/fx_models.py .deps/coil conformance/models --device cuda -j 8 --keep /tmp/g4-models \
    >"$out/g4_models.log" 2>&1
  tail -n 1 "$out/g4_models.log"; grep -v '^pass' "$out/g4_models.log" | head -20
fi
if [ "$part" = export ] || [ "$part" = all ]; then
  python3 tools/device/g4_export.py .deps/coil conformance/models >"$out/g4_export.log" 2>&1
  tail -n 30 "$out/g4_export.log"
fi
if [ "$part" = ops ] || [ "$part" = all ]; then
  f=${G4_OPS:-'^op/[^/]+/[^/]+/([^/:]+:)?(base|odd|scalar|odd1d|broadcast|permuted|sliced|zero|unaligned|symbolic|chain)$'}
  if [ ! -e /tmp/g4-cases/.complete ]; then # a warm machine keeps them from an earlier call
    rm -rf /tmp/g4-cases
    .deps/coil-conformance --write-cases /tmp/g4-cases --filter "$f" >"$out/g4_write_cases.log" 2>&1 &&
      touch /tmp/g4-cases/.complete
    tail -n 1 "$out/g4_write_cases.log"
  fi
  python3 plugins/fx/tests/fx_models.py .deps/coil /tmp/g4-cases --device cuda -j 16 --keep /tmp/g4-ops \
    --deadline "${G4_DEADLINE:-0}" >"$out/g4_ops.log" 2>&1
  tail -n 1 "$out/g4_ops.log"; grep -v '^pass' "$out/g4_ops.log" | head -40
fi
if [ "$part" = bench ]; then
  OUT=$out bash tools/device/g2_gpu.sh install || exit 1
  python3 tools/device/g4_fx_bench.py --json "$out/g4_bench.json" >"$out/g4_bench.log" 2>&1
  tail -n 20 "$out/g4_bench.log"
fi
exit 0
