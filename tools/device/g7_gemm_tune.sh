#!/bin/bash
# On the GPU machine, from the repository root, carrying .deps (tools/device/pack.sh): max-autotune's
# choice between the cuda plugin's generated GEMM and cuBLASLt (plugins/cuda/cuda_tune.c,
# cuda_tune_gemm), in one call:
#   choose  COIL_MODE=max-autotune coil compile on GEMM graphs (the MLP in f16 and bf16, a plain
#           4096^3 mm, gelu(x @ w.t()), an odd 1999 x 1032 x 520 gelu, 8 x (64^2 mm + relu)): the
#           compile's wall time, tuning.log's GEMM lines and the gemm.txt each chose
#   bench   coil bench --only mlp_fp16 default, --autotune, default, --autotune (kernel_ms)
#   conf    coil-conformance on cuda under max-autotune: the op tier's mm/addmm/linear/matmul
#           cases, then the model tier
#   m06     m06_bert_tiny tuned 8 times at once (COIL_AUTOTUNE=true coil compile, then coil run
#           --expect against PyTorch's outputs): plans.txt and tuning.log of each, kernels.cu
#           of any that fails (a tuned plan that computes wrongly)
#   redop   the op tier's reductions (one case in 3) under COIL_AUTOTUNE=true
#   force   the model tier with every kernel on its tuned candidate I (COIL_GPU_TUNE_CANDIDATE,
#           I = 1..$FORCE_MAX, default 15; nothing timed)
#   sweep   each kernel of $SWEEP_MODELS (default m06_bert_tiny) alone on each of its candidates,
#           run twice with coil run --expect
#   modes   the model tier under reduce-overhead, under autotune alone, and m06_bert_tiny under
#           max-autotune again (which of the mode's two settings a difference comes from)
# Every step under `timeout`; logs under $OUT (summary.log first).
#   usage: g7_gemm_tune.sh [choose] [bench] [conf]   (default: all three)
cd "$(dirname "$0")/../.." || exit 1
deps=.deps
[ -x "$deps/coil" ] || { echo "no $deps/coil: run tools/device/pack.sh and carry .deps"; exit 1; }
nv=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9] 2>/dev/null | head -1)
[ -n "$nv" ] || nv=$(find / -name 'libnvrtc.so.1[0-9]*' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$PWD/$deps/lib:$(dirname "${nv:-/x/x}") COIL_PLUGIN_PATH=$PWD/$deps/plugins
export COIL_CACHE_DIR=/tmp/coil-cache-$$
unset COIL_CUDA_GEMM COIL_MODE
res=${OUT:-/tmp/g7tune}
work=/tmp/g7tune_work
out=$work/logs # packed into $res/logs.tar.gz at the end (few files come back from $OUT)
rm -rf "$work"
mkdir -p "$res" "$out"
sum=$res/summary.log
trap 'tar czf "$res/logs.tar.gz" -C "$out" .' EXIT
: >"$sum"
note() { echo "$*" | tee -a "$sum"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } 2>&1 | tee -a "$sum"
graph() { # NAME BODY INPUTS
  printf 'coil 1\ngraph g(%s) {\n%b}\n' "$3" "$2" >"$work/$1.coil"
}
graph mlp_bf16 '  %h = aten.mm.default(%x, %w1)\n  %g = aten.gelu.default(%h)\n  %y = aten.mm.default(%g, %w2)\n  return (%y)\n' \
  '%x: bf16[4096, 4096], %w1: bf16[4096, 4096], %w2: bf16[4096, 4096]'
graph mm_plain '  %y = aten.mm.default(%x, %w)\n  return (%y)\n' '%x: f16[4096, 4096], %w: f16[4096, 4096]'
graph gelu_wt '  %t = aten.permute.default(%w, [1, 0])\n  %h = aten.mm.default(%x, %t)\n  %y = aten.gelu.default(%h)\n  return (%y)\n' \
  '%x: f16[4096, 4096], %w: f16[4096, 4096]'
graph gelu_odd '  %h = aten.mm.default(%x, %w)\n  %y = aten.gelu.default(%h)\n  return (%y)\n' '%x: f16[1999, 520], %w: f16[520, 1032]'
cp plugins/cuda/tests/golden/graphs/bench_mlp_fp16.coil "$work/mlp_fp16.coil"
cp plugins/cuda/tests/golden/graphs/bench_small_8mm_64.coil "$work/small_8mm.coil"
steps=${*:-choose bench conf}
for s in $steps; do
  case $s in
  choose)
    for g in mlp_fp16 mlp_bf16 mm_plain gelu_wt gelu_odd small_8mm; do
      t0=$(date +%s.%N)
      COIL_MODE=max-autotune timeout 120 "$deps/coil" compile "$work/$g.coil" --backend cuda -o "$work/art_$g" \
        >"$out/compile_$g.log" 2>&1
      rc=$?
      t1=$(date +%s.%N)
      note "== $g: max-autotune compile exit $rc, $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"
      sed -n '/^generated GEMMs/,/^kernel /p' "$work/art_$g/tuning.log" 2>/dev/null | grep -v '^kernel ' | tee -a "$sum"
      if [ -f "$work/art_$g/gemm.txt" ]; then grep '^kernel\|^line' "$work/art_$g/gemm.txt" | tee -a "$sum"
      else note "  (no gemm.txt: every mm on the library)"; fi
      cp "$work/art_$g/tuning.log" "$out/tuning_$g.log" 2>/dev/null
    done ;;
  bench)
    for r in 1 2; do
      for a in "" --autotune; do
        timeout 150 "$deps/coil" bench --backend cuda --only mlp_fp16 $a >"$out/bench_mlp${a}_$r.log" 2>&1
        note "coil bench mlp_fp16 ${a:-default} round $r (exit $?): $(grep -m1 mlp_fp16 "$out/bench_mlp${a}_$r.log")"
      done
    done ;;
  conf)
    COIL_MODE=max-autotune timeout 180 "$deps/coil-conformance" --plugin cuda --source-dir . --tier op -j 16 \
      --filter 'op/aten\.(mm|addmm|linear|matmul)[^/]*/' >"$out/conf_op_tuned.log" 2>&1
    note "conformance op mm|addmm|linear|matmul, max-autotune (exit $?): $(tail -n 1 "$out/conf_op_tuned.log")"
    grep -E "FAIL|crash|timeout" "$out/conf_op_tuned.log" | head -10 | tee -a "$sum"
    COIL_MODE=max-autotune timeout 150 "$deps/coil-conformance" --plugin cuda --source-dir . --tier model -j 16 \
      >"$out/conf_model_tuned.log" 2>&1
    note "conformance model tier, max-autotune (exit $?): $(tail -n 1 "$out/conf_model_tuned.log")"
    grep -E "FAIL|crash|timeout" "$out/conf_model_tuned.log" | head -10 | tee -a "$sum" ;;
  m06)
    m=conformance/models/m06_bert_tiny
    for i in 1 2 3 4 5 6 7 8; do
      (
        a=$work/m06_$i
        COIL_AUTOTUNE=true timeout 200 "$deps/coil" compile $m/graph.coil --backend cuda -o "$a" >"$out/m06_compile_$i.log" 2>&1
        timeout 60 "$deps/coil" run "$a" --weights $m/weights.safetensors --inputs $m/inputs.safetensors \
          --expect $m/expected.safetensors >"$out/m06_run_$i.log" 2>&1
        rc=$?
        mkdir -p "$out/m06_$i"
        cp "$a/plans.txt" "$a/tuning.log" "$out/m06_$i/" 2>/dev/null
        [ $rc -eq 0 ] || cp "$a/kernels.cu" "$out/m06_$i/"
        echo "m06 tuned $i: run exit $rc: $(grep -m1 '^out0:' "$out/m06_run_$i.log")" >"$out/m06_$i/result"
      ) &
    done
    wait
    cat "$out"/m06_*/result | tee -a "$sum"
    md5sum "$out"/m06_*/plans.txt | awk '{print $1}' | sort | uniq -c | tee -a "$sum" ;;
  redop)
    COIL_AUTOTUNE=true timeout 200 "$deps/coil-conformance" --plugin cuda --source-dir . --tier op -j 16 --sample 3 \
      --filter 'op/aten\.(sum|mean|amax|amin|max|min|prod|var|std|norm|_softmax|_log_softmax|native_layer_norm|cumsum|argmax|argmin|logsumexp)[^/]*/' \
      >"$out/conf_op_red_tuned.log" 2>&1
    note "conformance op reductions --sample 3, autotune (exit $?): $(tail -n 1 "$out/conf_op_red_tuned.log")"
    grep -E "FAIL|crash|timeout" "$out/conf_op_red_tuned.log" | head -10 | tee -a "$sum" ;;
  force)
    for i in $(seq 1 ${FORCE_MAX:-15}); do
      COIL_AUTOTUNE=true COIL_GPU_TUNE_CANDIDATE=$i timeout 90 "$deps/coil-conformance" --plugin cuda --source-dir . \
        --tier model -j 16 >"$out/conf_model_cand$i.log" 2>&1
      note "conformance model tier, every kernel's tuned candidate $i (exit $?): $(tail -n 1 "$out/conf_model_cand$i.log")"
      grep -E "FAIL|crash|timeout" "$out/conf_model_cand$i.log" | head -10 | tee -a "$sum"
    done ;;
  sweep)
    # each kernel of each model alone on each of its candidates (COIL_GPU_TUNE_CANDIDATE=I@K), run
    # twice against PyTorch's outputs: which plan computes wrongly, and whether it does so every time
    one() { # MODEL K I
      local m=conformance/models/$1 a=$work/sw_$1_$2_$3
      COIL_AUTOTUNE=true COIL_GPU_TUNE_CANDIDATE=$3@$2 timeout 60 "$deps/coil" compile $m/graph.coil --backend cuda -o "$a" \
        >"$a.compile.log" 2>&1 || { echo "$1 k$2 c$3: compile failed"; return; }
      local got=$(grep -m1 "forced by" "$a/tuning.log" | sed 's/.*chosen: candidate \([0-9]* of [0-9]*\).*/\1/')
      [ -n "$got" ] || { rm -rf "$a"; return; } # kernel K has no candidates (or no such kernel)
      [ "${got%% of *}" = "$3" ] || { rm -rf "$a"; return; } # I past the last: already tried
      local r1 r2
      timeout 30 "$deps/coil" run "$a" --weights $m/weights.safetensors --inputs $m/inputs.safetensors \
        --expect $m/expected.safetensors >"$a.run1.log" 2>&1; r1=$?
      timeout 30 "$deps/coil" run "$a" --weights $m/weights.safetensors --inputs $m/inputs.safetensors \
        --expect $m/expected.safetensors >"$a.run2.log" 2>&1; r2=$?
      local plan=$(grep "^k$2 " "$a/plans.txt")
      echo "$1 k$2 candidate $got [$plan]: runs exit $r1 $r2 $(grep -m1 -h 'MISMATCH' "$a.run1.log" "$a.run2.log" | head -1)"
      if [ $r1 -ne 0 ] || [ $r2 -ne 0 ]; then mkdir -p "$out/sweep_$1_$2_$3"; cp "$a/kernels.cu" "$a/plans.txt" "$a.run1.log" "$a.run2.log" "$out/sweep_$1_$2_$3/"; fi
      rm -rf "$a"
    }
    export -f one; export work deps out
    for mdl in ${SWEEP_MODELS:-m06_bert_tiny}; do
      COIL_AUTOTUNE=true COIL_GPU_TUNE_CANDIDATE=0@-1 "$deps/coil" compile conformance/models/$mdl/graph.coil --backend cuda \
        -o "$work/nk_$mdl" >/dev/null 2>&1
      nk=$(grep -c '^kernel ' "$work/nk_$mdl/tuning.log")
      for k in $(seq 0 $((nk - 1))); do for i in $(seq 1 11); do echo "$mdl $k $i"; done; done
    done | timeout ${SWEEP_TIMEOUT:-300} xargs -P 8 -n 3 bash -c 'one "$@"' _ >"$out/sweep.log" 2>&1
    note "sweep: $(grep -c 'runs exit' "$out/sweep.log") plans run, $(grep 'runs exit' "$out/sweep.log" | grep -vc 'runs exit 0 0') failing"
    grep 'runs exit' "$out/sweep.log" | grep -v 'runs exit 0 0' | sort | head -40 | tee -a "$sum" ;;
  modes)
    for m in "COIL_MODE=reduce-overhead" "COIL_AUTOTUNE=true" "COIL_GRAPH_CAPTURE=true COIL_AUTOTUNE=true"; do
      tag=$(echo "$m" | tr ' =' '__')
      env $m timeout 150 "$deps/coil-conformance" --plugin cuda --source-dir . --tier model -j 16 \
        >"$out/conf_model_$tag.log" 2>&1
      note "conformance model tier, $m (exit $?): $(tail -n 1 "$out/conf_model_$tag.log")"
      grep -E "FAIL|crash|timeout" "$out/conf_model_$tag.log" | head -10 | tee -a "$sum"
    done ;;
  esac
done
