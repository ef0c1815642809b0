#!/bin/bash
# cuda_gemm_sass: the generated GEMM (cuda_gemm.c) planned and compiled through the cuda plugin
# for each setting of option gemm (tests/gemm_compile.c, on the programs of tests/gemm/), and,
# where cuobjdump is found ($COIL_CUOBJDUMP, PATH, /usr/local/cuda/bin), every generated GEMM's
# machine code has HGMMA (wgmma) and UTMALDG (TMA loads), no LDL/STL (no local memory) and no
# stack frame, and its wgmma is the variant gemm.txt names (bf16 or f16; B transposed, bt, or not);
# the registers of each are printed. Exit 77 (skipped) where NVRTC is absent.
# Usage: gemm_sass.sh CUDA-GEMM-COMPILE PLUGIN WIR_DIR
set -uo pipefail
tool=$1 plugin=$2 wir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset COIL_CUDA_GEMM # the cases set the option themselves
"$tool" "$plugin" "$wir" "$tmp/out" >"$tmp/log" 2>&1
rc=$?
[ $rc -eq 77 ] && { cat "$tmp/log"; exit 77; }
failed=0
if [ $rc -ne 0 ]; then
  echo "FAIL: cuda-gemm-compile:"; grep -v '^ok' "$tmp/log"; failed=1
else
  echo "$(grep -c '^ok' "$tmp/log") cases planned, compiled or refused as expected"
fi
obj=${COIL_CUOBJDUMP:-}
[ -n "$obj" ] || obj=$(command -v cuobjdump 2>/dev/null || true)
[ -n "$obj" ] || { [ -x /usr/local/cuda/bin/cuobjdump ] && obj=/usr/local/cuda/bin/cuobjdump; }
if [ -z "$obj" ]; then
  echo "no cuobjdump (set COIL_CUOBJDUMP): machine code not checked"
  exit $failed
fi
n=0
for cubin in "$tmp"/out/*/g*.cubin; do
  [ -e "$cubin" ] || continue
  n=$((n + 1))
  sass=$("$obj" -sass "$cubin" 2>/dev/null)
  res=$("$obj" -res-usage "$cubin" 2>/dev/null | grep -o 'REG:[0-9]* STACK:[0-9]* SHARED:[0-9]*')
  name=$(grep -o -m1 'Function : [A-Za-z0-9_]*' <<<"$sass" | cut -d' ' -f3)
  bad=""
  [ -z "$sass" ] && bad="cuobjdump read nothing"
  case "$res" in *STACK:0\ *) ;; *) bad="$bad; a stack frame ($res)" ;; esac
  grep -q HGMMA <<<"$sass" || bad="$bad; no HGMMA (wgmma)"
  grep -q UTMALDG <<<"$sass" || bad="$bad; no UTMALDG (TMA)"
  grep -qE '\b(LDL|STL)\b' <<<"$sass" && bad="$bad; local memory (LDL/STL)"
  # the variant gemm.txt names (kernel I NAME LINE [bf16] [bt]) is the one compiled: B K-major
  # (bt) without HGMMA's tnspB, N-major with it; bf16 as HGMMA...F32.BF16, f16 as HGMMA...F32
  i=$(basename "$cubin" .cubin); i=${i#g}
  words=$(grep -m1 "^kernel $i " "$(dirname "$cubin")/gemm.txt" | cut -d' ' -f5-)
  hg=$(grep -m1 -o 'HGMMA[^;]*' <<<"$sass")
  case " $words " in *" bt "*) [[ $hg == *tnspB* ]] && bad="$bad; bt but tnspB ($hg)" ;;
  *) [[ $hg == *tnspB* ]] || bad="$bad; B N-major but no tnspB ($hg)" ;; esac
  case " $words " in *" bf16 "*) [[ $hg == *.F32.BF16* ]] || bad="$bad; bf16 but $hg" ;;
  *) [[ $hg == *.F32.BF16* ]] && bad="$bad; f16 but $hg" ;; esac
  case=$(basename "$(dirname "$cubin")")
  if [ -n "$bad" ]; then
    echo "FAIL: $case $name:$bad"; failed=1
  else
    echo "ok   $case $name: $res"
  fi
done
echo "$n generated GEMMs checked"
[ $failed -eq 0 ] && [ $n -gt 0 ]
