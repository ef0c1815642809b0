#!/usr/bin/env bash
# The README's first command: install what is missing, build into build/, run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
echo
echo "== coil run examples/mlp.coil (default backend: cpu, C + OpenMP)"
./build/tools/coil run examples/mlp.coil --weights examples/mlp.weights.safetensors \
  --inputs examples/mlp.inputs.safetensors
