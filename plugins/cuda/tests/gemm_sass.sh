#!/bin/bash
# cuda_gemm_sass: the generated GEMM (cuda_gemm.c) planned and compiled through the cuda plugin
# for each setting of option gemm (tests/gemm_compile.c, on the programs of tests/gemm/), and,
# where cuobjdump is found ($COIL_CUOBJDUMP, PATH, /usr/local/cuda/bin), every generated GEMM's
# machine code has HGMMA (wgmma) and UTMALDG (TMA loads), no LDL/STL (no local memory) and no
# stack frame; the registers of each are printed. Exit 77 (skipped) where NVRTC is absent.
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
  case=$(basename "$(dirname "$cubin")")
  if [ -n "$bad" ]; then
    echo "FAIL: $case $name:$bad"; failed=1
  else
    echo "ok   $case $name: $res"
  fi
done
echo "$n generated GEMMs checked"
[ $failed -eq 0 ] && [ $n -gt 0 ]
