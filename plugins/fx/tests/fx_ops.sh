#!/bin/bash
# fx_ops: the conformance op tier through the fx plugin's GraphModules. coil-conformance
# --write-cases writes every op case (graph, the inputs the op tier gives a plugin, the reference
# interpreter's outputs), then fx_models.py compiles each with --backend fx and runs it in
# PyTorch, compared by the op tier's rule (NMSE per dtype, integers exactly).
# Usage: fx_ops.sh CONFORMANCE COIL SOURCE_DIR. Needs $COIL_FX_TORCH_PYTHON (a Python with torch,
# Triton, safetensors; exit 77 without it). $COIL_FX_DEVICE: cpu (default; Triton's interpreter,
# about 0.4 s a case) or cuda. $COIL_FX_OPS_FILTER: the cases (an ERE over op/NAME/DTYPE/SHAPE;
# default every shape class but "large", whose tensors take 2.6 GB of files).
set -uo pipefail
conf=$1 coil=$2 src=$3
[ -n "${COIL_FX_TORCH_PYTHON:-}" ] || { echo "skipped: COIL_FX_TORCH_PYTHON is not set"; exit 77; }
filter=${COIL_FX_OPS_FILTER:-'^op/[^/]+/[^/]+/([^/:]+:)?(base|odd|scalar|odd1d|broadcast|permuted|sliced|zero|unaligned|symbolic|chain)$'}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$conf" --write-cases "$tmp/cases" --filter "$filter" || exit 1
exec "$COIL_FX_TORCH_PYTHON" "$src/plugins/fx/tests/fx_models.py" "$coil" "$tmp/cases" \
  --device "${COIL_FX_DEVICE:-cpu}" -j "$(nproc)" --keep "$tmp/out"
