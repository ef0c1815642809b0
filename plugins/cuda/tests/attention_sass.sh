#!/bin/bash
# cuda_attention_sass: coil.attention's kernels compile with NVRTC through the cuda plugin for
# sm_80 and sm_90 (tests/attention_compile.c: the kernels planned per line, refusals), and, where
# cuobjdump is found ($COIL_CUOBJDUMP, PATH, /usr/local/cuda/bin), every tensor-core kernel's
# machine code has HMMA (mma.sync) or, for the wgmma kernels of sm_90, HGMMA, and no LDL/STL
# (no local memory: registers spilled or an array indexed at run time), and no kernel has a
# stack frame; the registers of each kernel are printed. Exit 77 (skipped) where NVRTC is absent.
# Usage: attention_sass.sh CUDA-ATTENTION-COMPILE PLUGIN
set -uo pipefail
tool=$1 plugin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for arch in sm_80 sm_90; do
  "$tool" "$plugin" $arch "$tmp/$arch" >"$tmp/log" 2>&1
  rc=$?
  [ $rc -eq 77 ] && { cat "$tmp/log"; exit 77; }
  if [ $rc -ne 0 ]; then
    echo "FAIL: cuda-attention-compile $arch:"; grep -v '^ok' "$tmp/log"; failed=$((failed + 1))
  else
    echo "$arch: $(grep -c '^ok' "$tmp/log") programs compiled or refused as expected"
  fi
done
obj=${COIL_CUOBJDUMP:-}
[ -n "$obj" ] || obj=$(command -v cuobjdump 2>/dev/null || true)
[ -n "$obj" ] || { [ -x /usr/local/cuda/bin/cuobjdump ] && obj=/usr/local/cuda/bin/cuobjdump; }
if [ -z "$obj" ]; then
  echo "no cuobjdump (set COIL_CUOBJDUMP): machine code not checked"
  [ $failed -eq 0 ]
  exit
fi
tc=0
for arch in sm_80 sm_90; do
  for plan in "$tmp/$arch"/*/attention.txt; do
    dir=$(dirname "$plan")
    while read -r _ i kind _; do
      cubin=$dir/a$i.cubin
      sass=$("$obj" -sass "$cubin" 2>/dev/null)
      res=$("$obj" -res-usage "$cubin" 2>/dev/null | grep -o 'REG:[0-9]* STACK:[0-9]* SHARED:[0-9]*')
      name=$(grep -o -m1 'Function : [A-Za-z0-9_]*' <<<"$sass" | cut -d' ' -f3)
      bad=""
      [ -z "$sass" ] && bad="cuobjdump read nothing"
      case "$res" in *STACK:0\ *) ;; *) bad="$bad; a stack frame ($res)" ;; esac
      if [ "$kind" = tc ]; then
        tc=$((tc + 1))
        grep -q HMMA <<<"$sass" || bad="$bad; no HMMA"
        grep -q LDSM <<<"$sass" || bad="$bad; no LDSM"
      fi
      if [ "$kind" = wg ]; then
        tc=$((tc + 1))
        grep -q HGMMA <<<"$sass" || bad="$bad; no HGMMA (wgmma)"
      fi
      if [ "$kind" = tc ] || [ "$kind" = wg ]; then
        grep -qE '\b(LDL|STL)\b' <<<"$sass" && bad="$bad; local memory (LDL/STL)"
        grep -q LDGSTS <<<"$sass" || bad="$bad; no LDGSTS (cp.async)"
      fi
      if [ -n "$bad" ]; then
        echo "FAIL: $arch $(basename "$dir") $name:$bad"; failed=$((failed + 1))
      else
        echo "ok   $arch $(basename "$dir") $name: $res"
      fi
    done < <(grep '^kernel ' "$plan")
  done
done
echo "$tc tensor-core kernels checked; $failed failed"
[ $failed -eq 0 ] && [ $tc -gt 0 ]
