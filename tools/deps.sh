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
  pkg-config --exists openblas || missing+=(libopenblas-dev)
else
  missing+=(libcjson-dev libinih-dev libcriterion-dev libxxhash-dev libopenblas-dev)
fi
# OpenMP needs nothing more: gcc brings libgomp.
# clang and its runtimes (libFuzzer, the sanitizers): test.sh's sanitizer build and fuzzing.
bash "$(dirname "${BASH_SOURCE[0]}")/fuzz/have-libfuzzer.sh" || missing+=(clang libclang-rt-dev)

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
