#!/bin/bash
# hip_compile: every kernel of every example, golden and conformance model graph, and a spread of
# op cases (each launch-plan kind, f16, bf16, scans, combining stores), compiles with hiprtc for
# gfx90a (wavefront 64) and gfx1030 (wavefront 32) through the hip plugin, no AMD GPU needed; each
# code object is checked by co_check (an AMDGPU ELF for its arch, each kernel's function and
# descriptor in the symbol table, the metadata naming it with the planned wavefront), and so is
# each generated GEMM (mm and bmm lines). A graph refused as not supported for a library op
# with no generated kernel (a topk longer than the core generates) is counted apart; one refused
# for anything else, or any other failure, fails the test. Exit 77 (skipped) where hiprtc is
# absent.
# Usage: hip_compile.sh COIL CO_CHECK SOURCE_DIR
set -uo pipefail
coil=$1 check=$2 src=$3
# In a sanitizer build, LeakSanitizer cannot stop the threads that ROCm's compiler (hiprtc, comgr,
# loaded into coil by the plugin) leaves running, and aborts at exit ("LeakSanitizer has
# encountered a fatal error") after a correct compile. AddressSanitizer's other checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[plugin.hip]\narch = gfx90a,gfx1030\n' >"$tmp/hip.ini"
ok=0 unsupported=0 failed=0 objects=0 gemms=0
# every code object of artifact $1 against its arch, wavefront and kernel names
check_artifact() {
  local dir=$1 arch wave k name names plan bad=0
  mapfile -t names < <(sed -n 's/^kernel \([A-Za-z0-9_]*\) .*/\1/p' "$dir/program.wir")
  for arch in gfx90a gfx1030; do
    wave=64; [ $arch = gfx1030 ] && wave=32
    for k in "${!names[@]}"; do
      name=${names[$k]}
      plan=$(grep "^k$k " "$dir/plans-wave$wave.txt")
      set -- $plan
      if [ "${5:-1}" -gt 1 ]; then set -- "$name" "${name}__unaligned"; else set -- "$name"; fi
      if "$check" "$dir/k$k-$arch.co" $arch $wave "$@"; then
        objects=$((objects + 1))
      else
        bad=1
      fi
    done
    for name in $(ls "$dir" | sed -n "s/^gemm-\([a-z0-9]*\)-$arch\.co\$/\1/p"); do
      if "$check" "$dir/gemm-$name-$arch.co" $arch $wave "coil_gemm_$name" "coil_gemm_${name}_small"; then
        objects=$((objects + 1)) gemms=$((gemms + 1))
      else
        bad=1
      fi
    done
  done
  return $bad
}
compile() { # GRAPH NAME
  rm -rf "$tmp/art"
  if COIL_CONFIG="$tmp/hip.ini" "$coil" compile "$1" --backend hip -o "$tmp/art" >"$tmp/log" 2>&1; then
    if check_artifact "$tmp/art"; then ok=$((ok + 1)); else echo "FAIL: $2: a code object is wrong"; failed=$((failed + 1)); fi
  elif grep -q "hiprtc not found" "$tmp/log"; then
    echo "skipped: $(grep -m1 'hiprtc not found' "$tmp/log")"
    exit 77
  elif grep -q "UNSUPPORTED.*library op aten\.\(topk\|cumsum\)" "$tmp/log"; then
    echo "not supported: $2: $(grep -o 'library op [a-z_.]*' "$tmp/log" | head -1)"
    unsupported=$((unsupported + 1))
  else
    echo "FAIL: $2:"; tail -3 "$tmp/log"
    failed=$((failed + 1))
  fi
}
for g in "$src"/examples/*.coil "$src"/core/tests/golden/*.coil "$src"/conformance/models/*/graph.coil; do
  compile "$g" "$g"
done
# op cases: one graph each, named for what it exercises
op() { # NAME INPUT BODY
  printf 'coil 1\ngraph g(%%x: %s) {\n%b  return (%%y)\n}\n' "$2" "$3" >"$tmp/$1.coil"
  compile "$tmp/$1.coil" "op $1"
}
op pointwise_f32 'f32[64, 64]' '  %y = aten.gelu.default(%x)\n'
op pointwise_f16 'f16[64, 64]' '  %y = aten.relu.default(%x)\n'
op cast_bf16 'f32[33, 7]' '  %y = aten._to_copy.default(%x, dtype=bf16)\n'
op softmax_persistent 'f32[64, 1024]' '  %y = aten._softmax.default(%x, -1, False)\n'
op softmax_rows_warp 'f32[4096, 256]' '  %y = aten._softmax.default(%x, -1, False)\n'
op sum_rows_thread 'f32[4096, 9]' '  %y = aten.sum.dim_IntList(%x, [1])\n'
op transpose 'f32[96, 80]' '  %t = aten.t.default(%x)\n  %y = aten.clone.default(%t)\n'
op sum_looped 'f32[4, 100000]' '  %y = aten.sum.dim_IntList(%x, [1])\n'
op var_welford 'f32[8, 20000]' '  %y = aten.var.correction(%x, [1], correction=1)\n'
op argmax 'f32[16, 3000]' '  %y = aten.argmax.default(%x, 1)\n'
op cumsum 'f32[8, 5000]' '  %y = aten.cumsum.default(%x, 1)\n'
op cumsum_i64 'i64[8, 300]' '  %y = aten.cumsum.default(%x, 1)\n'
op sin_f64 'f64[1000]' '  %y = aten.sin.default(%x)\n'
op mm_f16 'f16[33, 70]' '  %w = aten.t.default(%x)\n  %y = aten.mm.default(%x, %w)\n'
op bmm_bf16 'bf16[3, 5, 9]' '  %w = aten.transpose.int(%x, 1, 2)\n  %y = aten.bmm.default(%x, %w)\n'
echo "hiprtc (gfx90a, gfx1030) compiled and checked $objects code objects ($gemms of them GEMMs) of $ok graphs; $unsupported refused for a library op with no generated kernel; $failed failed"
[ $failed -eq 0 ] && [ $ok -gt 40 ] && [ $gemms -gt 10 ]
