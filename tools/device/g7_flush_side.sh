#!/bin/bash
# On the GPU machine (G7, 2026-12-02b), in one call: (1) tools/device/g7_flush_probe.py, coil's rmsnorm
# cubin and Inductor's rmsnorm in one PyTorch process under several L2 flushes; (2) `coil bench`'s
# events with nothing between them after each of its flush modes; (3) `coil bench` on the anchor's
# graphs with the cuMemsetD8Async flush; (4) tools/device/cuda_side_by_side.sh with the flush that
# FLUSH names (COIL_PROBE_FLUSH of the probe build of tools/bench_cuda.c; 3 = a coil fill kernel).
# The COIL_PROBE_* knobs are not in the committed bench_cuda.c: build coil with
# docs/logs/g7-h200-2026-12-02b/bench_cuda_probe.patch applied, then tools/device/pack_cuda_min.sh
# into .deps (FLUSH=0 is the committed flush). Each step has its own time limit, so that what ran
# comes back; the side-by-side's files are packed into side.tar.gz.
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins PYTHONUNBUFFERED=1
out=${OUT:-/tmp/g7fs}; mkdir -p "$out/s"; rm -f /tmp/flush0
flush=${FLUSH:-3}
anchor=pointwise_gelu_affine,softmax_lastdim,layernorm,sum_dim1,rmsnorm_residual_fp16,mlp_fp16,attention_fp16,small_chain_10ops_1k,small_8mm_64
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; } | tee "$out/probe_coil.log"
cat >/tmp/g.coil <<'G'
coil 1
graph g(%x: f16[8192, 4096], %r: f16[8192, 4096], %w: f16[4096]) {
  %h = aten.add.Tensor(%x, %r)
  %hf = aten._to_copy.default(%h, dtype=f32)
  %p = aten.pow.Tensor_Scalar(%hf, 2)
  %m = aten.mean.dim(%p, [-1], True)
  %e = aten.add.Tensor(%m, 1e-06)
  %s = aten.rsqrt.default(%e)
  %n = aten.mul.Tensor(%h, %s)
  %c = aten._to_copy.default(%n, dtype=f16)
  %y = aten.mul.Tensor(%c, %w)
  return (%y)
}
G
rm -rf /tmp/rmsart && .deps/coil compile /tmp/g.coil --backend cuda -o /tmp/rmsart >/dev/null
echo "== (1) flush probe"
timeout 100 python3 tools/device/g7_flush_probe.py /tmp/rmsart 2>&1 | grep -v -i warn | tee "$out/flush_probe.log"
{
  echo "== (2) empty intervals; rmsnorm with the fill-kernel flush"
  COIL_PROBE_EMPTY=1 COIL_PROBE_FLUSH=3 timeout 60 .deps/coil bench --backend cuda --only rmsnorm_residual_fp16 >/tmp/empty.log 2>&1
  rc=$?
  grep -v "^probe rms" /tmp/empty.log
  [ $rc = 0 ] || { echo "the fill-kernel flush failed (rc $rc): side by side with the cuMemsetD8Async flush"; echo 0 >/tmp/flush0; }
  echo "== (3) anchor graphs, cuMemsetD8Async flush (coil bench as committed)"
  timeout 70 .deps/coil bench --backend cuda --only $anchor --json "$out/s/coil_d8.json" 2>&1 | grep -v "^probe"
} 2>&1 | tee -a "$out/probe_coil.log"
[ -f /tmp/flush0 ] && flush=0
echo "== (4) side by side, COIL_PROBE_FLUSH=$flush"
COIL_PROBE_FLUSH=$flush OUT=$out/s timeout 240 bash tools/device/cuda_side_by_side.sh 2>&1 | grep -v "^probe" >"$out/s/side.log"
cp "$out/s/cuda_side_by_side.log" "$out/s/table.md" "$out/" 2>/dev/null
cat "$out/table.md" 2>/dev/null || tail -40 "$out/s/side.log"
tar czf "$out/side.tar.gz" -C "$out" s && rm -rf "$out/s"
date -u
