#!/usr/bin/env bash
# Installs what coil needs to build and test on Debian 12, if it is missing. As root it runs
# apt-get; otherwise it prints the apt-get line to run and fails. Sourced by setup.sh and test.sh.
set -euo pipefail

missing=()
command -v cc >/dev/null 2>&1 || missing+=(gcc)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if command -v pkg-config >/dev/null 2>&1; then
  pkg-config --exists libcjson || missing+=(libcjson-dev)
  pkg-config --exists inih || missing+=(libinih-dev)
  pkg-config --exists criterion || missing+=(libcriterion-dev)
  pkg-config --exists libxxhash || missing+=(libxxhash-dev)
  pkg-config --exists libsodium || missing+=(libsodium-dev)
  pkg-config --exists openblas || missing+=(libopenblas-dev)
  pkg-config --exists hiredis || missing+=(libhiredis-dev) # [cache] remote: the Redis client
else
  missing+=(libcjson-dev libinih-dev libcriterion-dev libxxhash-dev libsodium-dev libopenblas-dev libhiredis-dev)
fi
# Tests only: the remote cache's tests start their own redis-server on a loopback port (the
# package may also start a system service where systemd runs; the tests do not use it).
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# Tests only: the fx plugin's Python is checked with python3 -m py_compile.
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# OpenMP needs nothing more: gcc brings libgomp.
# ROCm 5.2 (Debian's own packages): the hip plugin compiles kernels in process with hiprtc, which
# Debian ships inside libamdhip64 (libamdhip64-5, with libhiprtc-builtins5 beside it); it needs
# the device libraries and comgr at run time; hipcc compiles a dumped kernels-*.hip by hand. The
# plugin dlopens libamdhip64.so.5 and links against none of them: without them it builds and
# loads, and its compile test is skipped.
# LLVM 19 and clang: the cpu plugin's in-process code generation ([plugin.cpu] codegen = llvm):
# cpu-llvm.so links libLLVM-19, and clang compiles its run-time helpers to bitcode at build time.
# Without them the build leaves codegen = llvm out and the C path still works.
for pkg in llvm-19-dev clang; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
for pkg in libamdhip64-dev hipcc rocm-device-libs libamd-comgr-dev; do # no pkg-config files: ask dpkg
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
# Tests only, so not required: clang and its runtimes (libFuzzer, the sanitizers) for test.sh's
# sanitizer build and the fuzz harnesses. Installed as root; otherwise test.sh falls back to gcc.
optional=()
bash "$(dirname "${BASH_SOURCE[0]}")/fuzz/have-libfuzzer.sh" || optional+=(clang libclang-rt-dev)
if [ ${#optional[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    missing+=("${optional[@]}")
  else
    echo "coil: for the clang sanitizer build and fuzzing: apt-get install -y ${optional[*]}" >&2
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "coil: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "coil: missing packages; run as root:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
