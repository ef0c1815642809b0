#!/bin/bash
# On the GPU machine, from the repository root, with .deps/ carried (tools/device/pack_cuda_min.sh):
# compiles the gelu(x*w+b) benchmark graph with coil's cuda plugin, builds tools/device/gelu_variants.cu
# after the plugin's whole kernels.cu into a shared library, and runs tools/device/gelu_variants.py,
# which checks every variant against float64 and times it beside Inductor in one process (do_bench).
# Writes under $OUT: gelu_variants.log, ptxas.log, gelu_sass.tar.gz.   usage: gelu_variants.sh [ROUNDS]
cd "$(dirname "$0")/../.." || exit 1
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/.deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/.deps/plugins
export PYTHONUNBUFFERED=1
t=${TMPDIR:-/tmp}/gelv; rm -rf "$t"; mkdir -p "$t"
out=${OUT:-$t/out}; mkdir -p "$out"
cat >"$t/g.coil" <<'G'
coil 1
graph g(%x: f32[8192, 8192], %w: f32[8192], %b: f32[8192]) {
  %m = aten.mul.Tensor(%x, %w)
  %a = aten.add.Tensor(%m, %b)
  %y = aten.gelu.default(%a)
  return (%y)
}
G
.deps/coil compile "$t/g.coil" --backend cuda -o "$t/art" >/dev/null || exit 1
kn=$(awk '/^extern "C" __global__/ {getline; sub(/\(.*/, ""); print; exit}' "$t/art/kernels.cu")
echo "coil kernel $kn, plan: $(cat "$t/art/plans.txt")" | tee "$out/gelu_variants.log"
# coil's NVRTC cubins as the plugin runs them: the default plan, and max-autotune's candidates
# GV_CANDS (default "3": 256 threads x 2 vectors) forced by COIL_GPU_TUNE_CANDIDATE
cub=""
addcub() { # LABEL ARTIFACT: plans.txt is "k0 ? THREADS ? VEC ? NVEC ..."
  local th ve nv
  read -r th ve nv < <(awk '/^k0 / {print $3, $5, $6}' "$2/plans.txt")
  cub="$cub $1=$2/k0.cubin:$kn:$th:$((8192 * 8192 / (th * ve * (nv > 0 ? nv : 1))))"
  echo "  $1: $(cat "$2/plans.txt")" | tee -a "$out/gelu_variants.log"
}
addcub nvrtc "$t/art"
for c in ${GV_CANDS-3}; do
  COIL_MODE=max-autotune COIL_GPU_TUNE_CANDIDATE=$c .deps/coil compile "$t/g.coil" --backend cuda -o "$t/art$c" >/dev/null &&
    addcub nvrtc$c "$t/art$c"
done
export GV_CUBINS="$cub"
{ cat "$t/art/kernels.cu"; cat tools/device/gelu_variants.cu; } >"$t/gv.cu"
# and the candidates' kernel source built by nvcc beside the rest (src3, ...): NVRTC against nvcc
extra=""
for c in ${GV_CANDS-3}; do
  [ -f "$t/art$c/kernels.cu" ] || continue
  awk -v kn="$kn" -v c="$c" '/^extern "C" __global__/ && !done {on = 1} on {s = $0; if (s ~ "^" kn "\\(") sub(kn, kn "_src" c, s); print s}
    on && /^}/ {on = 0; done = 1}' "$t/art$c/kernels.cu" >>"$t/gv.cu"
  read -r th ve nv < <(awk '/^k0 / {print $3, $5, $6}' "$t/art$c/plans.txt")
  printf 'extern "C" int gv_src%s(const float *x, const float *w, const float *b, float *y, cudaStream_t s)\n{\n  %s_src%s<<<%d, %d, 0, s>>>(x, w, b, y);\n  return (int)cudaGetLastError();\n}\n' \
    "$c" "$kn" "$c" $((8192 * 8192 / (th * ve * (nv > 0 ? nv : 1)))) "$th" >>"$t/gv.cu"
  extra="$extra src$c"
done
export GV_EXTRA="$extra"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
read -r th ve nv < <(awk '/^k0 / {print $3, $5, $6}' "$t/art/plans.txt") # the default plan's block and tile
$nvcc -O3 -std=c++17 -arch=sm_90 -w -shared -Xcompiler -fPIC -DCOIL_KNAME="$kn" -DCOIL_THREADS="$th" \
  -DCOIL_TILE=$((th * ve * (nv > 0 ? nv : 1))) -Xptxas -v -o "$t/libgv.so" "$t/gv.cu" \
  >"$out/ptxas.log" 2>&1 || { cat "$out/ptxas.log"; exit 1; }
grep -E "Compiling entry|Used [0-9]+ registers" "$out/ptxas.log" | sed 's/ptxas info *: //' | paste - - | \
  sed -E 's/Compiling entry function .(_Z[0-9]*)?([A-Za-z_0-9]*).*Used ([0-9]+) registers.*/  \2: \3 registers/' | tee -a "$out/gelu_variants.log"
python3 tools/device/gelu_variants.py "$t/libgv.so" "${1:-3}" 2>&1 | grep -v Warning | tee -a "$out/gelu_variants.log"
command -v cuobjdump >/dev/null && {
  mkdir -p "$t/sass"
  cuobjdump --dump-sass "$t/libgv.so" >"$t/sass/gv.sass" 2>&1
  cuobjdump --dump-sass "$t/art/k0.cubin" >"$t/sass/coil_nvrtc.sass" 2>&1
  for c in ${GV_CANDS-3}; do [ -f "$t/art$c/k0.cubin" ] && cuobjdump --dump-sass "$t/art$c/k0.cubin" >"$t/sass/coil_nvrtc$c.sass" 2>&1; done
  cp "$t/gv.cu" "$t/sass/"
  tar czf "$out/gelu_sass.tar.gz" -C "$t" sass
}
