#!/bin/bash
# On the development machine: a smaller .deps for the cuda side-by-side than pack.sh makes (coil, the
# cuda plugin and its tuning worker, the shared libraries they lack, the Inductor anchor script), from
# any build directory into any folder, so that a helper with its own build directory does not
# overwrite the .deps another session carries. Carry DEST and, on the GPU machine, copy it to .deps
# before running tools/device/cuda_side_by_side.sh:
#   tools/device/pack_cuda_min.sh build-g7 build-g7/deps   (then carry: ["build-g7/deps"];
#   on the device: rm -rf .deps && cp -r build-g7/deps .deps)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build} dest=${2:-.deps}
rm -rf "$dest"
mkdir -p "$dest/plugins" "$dest/lib"
cp "$build/tools/coil" "$dest/"
cp "$build/plugins/libcoil_cuda.so" "$build/plugins/coil-cuda-tune" "$dest/plugins/"
for f in $(ldd "$dest/coil" "$dest"/plugins/* | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$f")" in
  libc.so.*|libm.so.*|libgcc_s.so.*|libpthread.so.*|libdl.so.*) ;; # the GPU machine has its own
  *) cp -L "$f" "$dest/lib/" ;;
  esac
done
strip --strip-unneeded "$dest/coil" "$dest"/plugins/* "$dest"/lib/* 2>/dev/null || true
cp ../shared/anchors/inductor_baseline.py "$dest/"
du -sh "$dest"
