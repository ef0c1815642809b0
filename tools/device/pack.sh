#!/bin/bash
# On the development machine, after a build into build/: fills .deps/ (git-ignored) with what the
# GPU machine needs to run coil without our Debian packages: coil, coil-conformance, the plugins
# and the tuning workers in .deps/plugins, the shared libraries it lacks in .deps/lib, and the anchor
# scripts. Carry .deps with the `device` tool (carry: [".deps"]); the scripts beside this one
# set LD_LIBRARY_PATH and COIL_PLUGIN_PATH from it.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .deps
mkdir -p .deps/plugins .deps/lib
cp build/tools/coil build/conformance/coil-conformance .deps/
cp -P build/core/libcoil.so* .deps/lib/ 2>/dev/null || true # the embedding API (the Python package loads it)
cp build/plugins/libcoil_*.so build/plugins/coil-*-tune .deps/plugins/
for f in $(ldd .deps/coil .deps/coil-conformance .deps/plugins/* | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$f")" in
  libc.so.*|libm.so.*|libgcc_s.so.*|libpthread.so.*|libdl.so.*) ;; # the GPU machine has its own
  *) cp -L "$f" .deps/lib/ ;;
  esac
done
# the cpu plugin dlopens OpenBLAS on first use (ldd does not list it): carry it and what it needs
blas=$(ldconfig -p | awk '/libopenblas\.so\.0 .*x86-64/ {print $NF; exit}')
if [ -n "$blas" ]; then
  cp -L "$blas" .deps/lib/libopenblas.so.0
  for f in $(ldd "$blas" | awk '/=>/ {print $3}'); do
    case "$(basename "$f")" in
    libc.so.*|libm.so.*|libgcc_s.so.*|libpthread.so.*|libdl.so.*) ;;
    *) cp -L "$f" .deps/lib/ ;;
    esac
  done
fi
strip --strip-unneeded .deps/coil .deps/coil-conformance .deps/plugins/* .deps/lib/* 2>/dev/null || true
cp ../shared/anchors/*.py .deps/ 2>/dev/null || true
du -sh .deps
# A sysroot with the headers and pkg-config files of the libraries coil builds against, and
# pkgconf itself, so `pip install tools/python` can build coil on the GPU machine (which has
# cmake and a compiler but none of our Debian packages): tools/device/g2_gpu.sh points
# PKG_CONFIG_SYSROOT_DIR at it.
debs=$(mktemp -d)
(cd "$debs" && apt-get download libcjson-dev libinih-dev libxxhash-dev libsodium-dev pkgconf-bin libpkgconf3 >/dev/null 2>&1) || true
if ls "$debs"/*.deb >/dev/null 2>&1; then
  mkdir -p .deps/sysroot
  for d in "$debs"/*.deb; do dpkg -x "$d" .deps/sysroot; done
  rm -rf .deps/sysroot/usr/share/doc .deps/sysroot/usr/share/man
  # the -dev packages' libX.so links point at runtime libraries they do not hold: put those there
  # (and no static archives: a shared libcoil.so cannot take non-PIC ones)
  lib=.deps/sysroot/usr/lib/x86_64-linux-gnu
  rm -f "$lib"/*.a
  for so in libcjson.so.1 libinih.so.1 libxxhash.so.0 libsodium.so.23; do
    cp -L ".deps/lib/$so" "$lib/" && ln -sf "$so" "$lib/${so%%.so.*}.so"
  done
fi
rm -rf "$debs"
du -sh .deps
