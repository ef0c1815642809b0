#!/bin/bash
# cuda_nvrtc_compile: every kernel of every example, golden and conformance model graph compiles
# with NVRTC for sm_90 through the cuda plugin (no GPU needed), coil.attention's kernels
# (a*.cubin) included where the core fuses attention (tests/attention_sass.sh checks those
# alone). A graph with a library op the plugin does not do yet is refused as "not supported" and
# counted apart; any other failure fails the test. Exit 77 (skipped) where NVRTC is absent.
# Usage: nvrtc_compile.sh COIL SOURCE_DIR
set -uo pipefail
coil=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[plugin.cuda]\narch = sm_90\n' >"$tmp/cuda.ini"
ok=0 unsupported=0 failed=0 kernels=0 attention=0
lsan_skipped=0
compile() { # GRAPH OUT: under ASan, LeakSanitizer can fail to stop NVRTC's threads for its exit
  # check on a loaded machine ("LeakSanitizer has encountered a fatal error": the tool, not a leak
  # found); such a run is tried once more, then once without the leak check (counted and printed:
  # the compile must still succeed and ASan's other checks still run). A leak report or any other
  # failure is not retried.
  local try
  for try in 1 2; do
    rm -rf "$2"
    COIL_CONFIG="$tmp/cuda.ini" "$coil" compile "$1" --backend cuda -o "$2" >"$tmp/log" 2>&1 && return 0
    grep -q "LeakSanitizer has encountered a fatal error" "$tmp/log" || return 1
  done
  rm -rf "$2"
  lsan_skipped=$((lsan_skipped + 1))
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    COIL_CONFIG="$tmp/cuda.ini" "$coil" compile "$1" --backend cuda -o "$2" >"$tmp/log" 2>&1
}
for g in "$src"/examples/*.coil "$src"/core/tests/golden/*.coil "$src"/conformance/models/*/graph.coil; do
  out="$tmp/art"
  if compile "$g" "$out"; then
    ok=$((ok + 1))
    kernels=$((kernels + $(ls "$out"/k*.cubin 2>/dev/null | wc -l)))
    attention=$((attention + $(ls "$out"/a*.cubin 2>/dev/null | wc -l))) # coil.attention's (cuda_attention.c)
  elif grep -q "NVRTC not found" "$tmp/log"; then
    echo "skipped: $(grep -m1 'NVRTC' "$tmp/log")"
    exit 77
  elif grep -q "UNSUPPORTED" "$tmp/log"; then
    unsupported=$((unsupported + 1))
  else
    echo "FAIL: $g:"; tail -3 "$tmp/log"
    failed=$((failed + 1))
  fi
done
echo "NVRTC (sm_90) compiled $kernels kernels and $attention attention kernels of $ok graphs; $unsupported graphs need a library op the cuda plugin does not do yet; $failed failed"
[ $lsan_skipped -eq 0 ] || echo "LeakSanitizer itself failed twice on $lsan_skipped graphs: compiled those without the leak check"

# max-autotune compiles every candidate plan too; without a GPU the worker says so and every
# kernel keeps its default plan, recorded in plans.txt with the reason in tuning.log
rm -rf "$tmp/tuned"
printf 'coil 1\ngraph g(%%x: f32[64, 1024]) {\n  %%y = aten._softmax.default(%%x, -1, False)\n  return (%%y)\n}\n' >"$tmp/sm.coil"
if ! COIL_MODE=max-autotune compile "$tmp/sm.coil" "$tmp/tuned"; then
  echo "FAIL: max-autotune compile:"; tail -3 "$tmp/log"; failed=$((failed + 1))
elif ! grep -q "^k0 " "$tmp/tuned/plans.txt" || ! grep -q "candidate 1:" "$tmp/tuned/tuning.log"; then
  echo "FAIL: max-autotune wrote no plans.txt line or no candidates in tuning.log"; failed=$((failed + 1))
else
  echo "max-autotune: $(grep -c 'candidate [0-9]*:' "$tmp/tuned/tuning.log") candidates logged; $(grep -m1 -E 'no candidate timed|chosen' "$tmp/tuned/tuning.log")"
fi
# COIL_GPU_TUNE_CANDIDATE=I takes candidate I untimed (for conformance runs over the tuned plans):
# the softmax's candidate 1 differs from its default plan
rm -rf "$tmp/forced"
if ! COIL_GPU_TUNE_CANDIDATE=1 COIL_MODE=max-autotune compile "$tmp/sm.coil" "$tmp/forced"; then
  echo "FAIL: max-autotune compile with COIL_GPU_TUNE_CANDIDATE=1:"; tail -3 "$tmp/log"; failed=$((failed + 1))
elif ! grep -q "chosen: candidate 1 of [0-9]*, forced by COIL_GPU_TUNE_CANDIDATE=1" "$tmp/forced/tuning.log" ||
  cmp -s "$tmp/forced/plans.txt" "$tmp/tuned/plans.txt"; then
  echo "FAIL: COIL_GPU_TUNE_CANDIDATE=1 did not take candidate 1:"; head -3 "$tmp/forced/tuning.log"; failed=$((failed + 1))
else
  echo "COIL_GPU_TUNE_CANDIDATE=1: $(head -c 80 "$tmp/forced/plans.txt") (default $(head -c 80 "$tmp/tuned/plans.txt"))"
fi
# max-autotune with mm lines the generated GEMM can take: each is listed for timing against the
# library; without a GPU none is timed (nor compiled) and the cost rule decides, as gemm = auto
rm -rf "$tmp/tuned"
if ! COIL_MODE=max-autotune compile "$src/plugins/cuda/tests/golden/graphs/bench_mlp_fp16.coil" "$tmp/tuned"; then
  echo "FAIL: max-autotune compile of the MLP:"; tail -3 "$tmp/log"; failed=$((failed + 1))
elif ! grep -q "^generated GEMMs: 2 mm lines" "$tmp/tuned/tuning.log" ||
  ! grep -q "the cost rule decides" "$tmp/tuned/tuning.log" ||
  [ "$(grep -c '^kernel .* coil_gemm_wg_poi_fused_gelu_0 ' "$tmp/tuned/gemm.txt")" != 1 ] ||
  [ "$(grep -c '^line ' "$tmp/tuned/gemm.txt")" != 1 ]; then
  echo "FAIL: max-autotune's GEMM choice without a GPU is not the cost rule's (the first mm with its gelu):"
  cat "$tmp/tuned/tuning.log" "$tmp/tuned/gemm.txt" | head -12; failed=$((failed + 1))
else
  echo "max-autotune GEMM choice: $(grep -m1 'the cost rule decides' "$tmp/tuned/tuning.log" | sed 's/^ *//')"
fi
# the worker reads a whole-artifact spec (cuda_tune.c writes it) to the end before it needs a GPU:
# here it must say "nogpu", not that a line is unreadable
worker=$(find "$(dirname "$coil")/.." -name coil-cuda-tune -type f 2>/dev/null | head -1)
if [ -n "$worker" ]; then
  printf 'graphs /nonexistent/libcoil_cuda.so\nin 7 2 4 8 8 1\nin 7 1 8 1\nout 7 2 4 8 8 1\nartifact %s\nartifact -\n' "$tmp/tuned" >"$tmp/gspec"
  "$worker" "$tmp/gspec" 0 >"$tmp/gout" 2>&1
  if ! grep -q "^nogpu " "$tmp/gout"; then
    echo "FAIL: coil-cuda-tune on a graphs spec:"; cat "$tmp/gout"; failed=$((failed + 1))
  fi
fi
# the code generator picks the layout the plan says: 16-byte vectors with a scalar variant for
# unaligned params, rows in registers read as vectors, shared-memory tiles for transposing copies
shape() { # NAME GRAPH-BODY INPUT PATTERN...
  local name=$1 body=$2 input=$3; shift 3
  printf 'coil 1\ngraph g(%%x: %s) {\n%b  return (%%y)\n}\n' "$input" "$body" >"$tmp/$name.coil"
  rm -rf "$tmp/$name"
  if ! compile "$tmp/$name.coil" "$tmp/$name"; then
    echo "FAIL: $name does not compile:"; tail -3 "$tmp/log"; failed=$((failed + 1)); return
  fi
  for pat in "$@"; do
    if ! grep -q -- "$pat" "$tmp/$name/kernels.cu"; then
      echo "FAIL: $name: kernels.cu lacks '$pat'"; failed=$((failed + 1))
    fi
  done
}
shape pointwise '  %y = aten.gelu.default(%x)\n' 'f32[256, 256]' 'coil_vec<float, 4>' '__unaligned('
shape pointwise_f16 '  %y = aten.relu.default(%x)\n' 'f16[256, 256]' 'coil_vec<uint16_t, 8>'
# a small kernel (<= COIL_GPU_SMALL_X points) is latency-bound: one element a thread, no vectors
shape pointwise_small '  %y = aten.gelu.default(%x)\n' 'f32[64, 64]' 'launch_bounds__(128)'
if grep -q 'coil_vec<' "$tmp/pointwise_small/kernels.cu"; then
  echo "FAIL: pointwise_small: a small kernel got a vector variant"; failed=$((failed + 1))
fi
shape persistent '  %y = aten._softmax.default(%x, -1, False)\n' 'f32[64, 1024]' 'const int64_t rbase' 'coil_block_reduce' '__unaligned('
shape transpose '  %t = aten.t.default(%x)\n  %y = aten.clone.default(%t)\n' 'f32[96, 80]' '__shared__ float tile0\[32\]\[33\]'
shape looped '  %y = aten.sum.dim_IntList(%x, [1])\n' 'f32[4, 100000]' 'rindex += blockDim.x'
# pointwise kernels whose indices provably fit 32 bits take one tile a block (no grid-stride loop)
shape pointwise_i32 '  %y = aten.relu.default(%x)\n' 'f32[1024, 1024]' 'const uint32_t xbase' 'const int32_t x1'
echo "layout checks: $failed failed so far"

# which products the plugin claims (the rest the core's loop nest, [coil] matmul = auto): with
# gemm = auto every mm and bmm is a library call; with gemm = generated only the f16 mm on sm_90
# (the wgmma template's), and on another arch none, so that mode never needs cuBLAS at compile
printf 'coil 1\ngraph g(%%a: f16[64, 128], %%b: f16[128, 64], %%c: f32[64, 128], %%d: f32[128, 64], %%e: f16[2, 64, 128], %%f: f16[2, 128, 64]) {\n  %%x = aten.mm.default(%%a, %%b)\n  %%y = aten.mm.default(%%c, %%d)\n  %%z = aten.bmm.default(%%e, %%f)\n  return (%%x, %%y, %%z)\n}\n' >"$tmp/mm.coil"
claims() { # GEMM ARCH WANT: the extern_call ops of the program, in order
  printf '[plugin.cuda]\narch = %s\ngemm = %s\n' "$2" "$1" >"$tmp/mm.ini"
  rm -rf "$tmp/mmd"
  local got
  if ! COIL_CONFIG="$tmp/mm.ini" "$coil" compile "$tmp/mm.coil" --backend cuda --dump "$tmp/mmd" >"$tmp/log" 2>&1; then
    echo "FAIL: products with gemm = $1 on $2 do not compile:"; tail -3 "$tmp/log"; failed=$((failed + 1)); return
  fi
  got=$(grep -o 'extern_call [a-z_.]*' "$tmp/mmd/program.wir" | cut -d' ' -f2 | tr '\n' ' ')
  if [ "$got" != "$3" ]; then
    echo "FAIL: gemm = $1 on $2: library products '$got', expected '$3'"; failed=$((failed + 1))
  fi
}
claims auto sm_90 'aten.mm.default aten.mm.default aten.bmm.default '
claims generated sm_90 'aten.mm.default '
claims generated sm_80 ''
echo "all checks: $failed failed"
[ $failed -eq 0 ] && [ $ok -gt 10 ]
