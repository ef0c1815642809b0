#!/usr/bin/env bash
# The remote compile cache on the CPU benchmark graphs (those of `coil bench`), side by side in
# one run: a cold compile (empty local cache, Redis miss, compile, publish), a remote hit (a
# second process with an empty local cache: fetch, check, install, check), a local hit (that
# process again). Times are coil_cache_fetch's own, as `coil compile -v` prints them (the
# process's start and the graph's parse are not in them); median of ROUNDS rounds, each round
# on a fresh key prefix so that its cold compile is cold in Redis too. Starts its own
# redis-server on a loopback port. The local caches it fills live where the default cache does
# (under ${XDG_CACHE_HOME:-$HOME/.cache}; COIL_BENCH_CACHE_PARENT picks another directory): a
# remote hit creates a directory and seven files, and file creation costs differ between file
# systems (on one VM here, 25 us in $HOME against 390 us in /tmp, both ext4 on one disk).
#   tools/bench_remote_cache.sh [COIL_BINARY] [BACKEND] [ROUNDS]   (defaults build/tools/coil cpu 5)
set -euo pipefail
coil=${1:-build/tools/coil}
backend=${2:-cpu}
rounds=${3:-5}
tmp=$(mktemp -d)
parent=${COIL_BENCH_CACHE_PARENT:-${XDG_CACHE_HOME:-$HOME/.cache}}
mkdir -p "$parent"
caches=$(mktemp -d "$parent/coil-bench.XXXXXX")
rpid=
trap '[ -n "$rpid" ] && kill -KILL "$rpid" 2>/dev/null; rm -rf "$tmp" "$caches"' EXIT
port=$((20000 + RANDOM % 40000))
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$tmp" \
  --logfile "$tmp/redis.log" >/dev/null 2>&1 &
rpid=$!
disown "$rpid" # killed by the trap: no "Killed" line from the shell
for i in $(seq 50); do redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$tmp/team.key"
chmod 600 "$tmp/team.key"
export COIL_CACHE_REMOTE="redis://127.0.0.1:$port" COIL_CACHE_REMOTE_KEY_FILE="$tmp/team.key"

N=4096
cat >"$tmp/pointwise_gelu_affine.coil" <<EOF
coil 1
graph g(%x: f32[$N, $N], %w: f32[$N], %b: f32[$N]) {
  %m = aten.mul.Tensor(%x, %w)
  %a = aten.add.Tensor(%m, %b)
  %y = aten.gelu.default(%a)
  return (%y)
}
EOF
cat >"$tmp/softmax_lastdim.coil" <<EOF
coil 1
graph g(%x: f32[$N, $N]) {
  %y = aten._softmax.default(%x, -1, False)
  return (%y)
}
EOF
cat >"$tmp/layernorm.coil" <<EOF
coil 1
graph g(%x: f32[$N, $N], %w: f32[$N], %b: f32[$N]) {
  %l = aten.native_layer_norm.default(%x, [$N], %w, %b, 1e-05)
  %y = getitem(%l, 0)
  return (%y)
}
EOF
cat >"$tmp/sum_dim1.coil" <<EOF
coil 1
graph g(%x: f32[$N, $N]) {
  %y = aten.sum.dim_IntList(%x, [1])
  return (%y)
}
EOF
cat >"$tmp/rmsnorm_residual_f32.coil" <<EOF
coil 1
graph g(%x: f32[$N, $N], %r: f32[$N, $N], %w: f32[$N]) {
  %h = aten.add.Tensor(%x, %r)
  %p = aten.pow.Tensor_Scalar(%h, 2)
  %m = aten.mean.dim(%p, [-1], True)
  %e = aten.add.Tensor(%m, 1e-06)
  %s = aten.rsqrt.default(%e)
  %n = aten.mul.Tensor(%h, %s)
  %y = aten.mul.Tensor(%n, %w)
  return (%y)
}
EOF

# ms GRAPH DIR EXPECT: coil_cache_fetch's time from coil compile -v, after checking the outcome
ms() {
  COIL_CACHE_DIR="$2" "$coil" compile "$1" --backend "$backend" -v >"$tmp/out" 2>"$tmp/err"
  grep -q "$3" "$tmp/out" || { echo "unexpected outcome for $1 (wanted '$3'):"; cat "$tmp/out" "$tmp/err"; exit 1; }
  sed -n 's/^plugin .*(\([0-9.]*\) ms)$/\1/p' "$tmp/out"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

date -u +"%Y-%m-%d %H:%M UTC"
echo "backend $backend, $rounds rounds, redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1"
echo "local caches under $caches ($(df -PT "$caches" | awk 'NR == 2 { print $2 }'))"
printf '%-22s %10s %10s %10s %10s %12s\n' graph "cold ms" "remote ms" "local ms" "entry KiB" "cold/remote"
for g in pointwise_gelu_affine softmax_lastdim layernorm sum_dim1 rmsnorm_residual_f32; do
  : >"$tmp/cold" && : >"$tmp/remote" && : >"$tmp/local"
  for r in $(seq "$rounds"); do
    export COIL_CACHE_REMOTE_PREFIX="bench-$$-$r"
    rm -rf "$caches/c1" "$caches/c2"
    ms "$tmp/$g.coil" "$caches/c1" "compiled it into" >>"$tmp/cold"
    ms "$tmp/$g.coil" "$caches/c2" "fetched it from the remote" >>"$tmp/remote"
    ms "$tmp/$g.coil" "$caches/c2" "found in the local" >>"$tmp/local"
  done
  kib=$(du -sk "$caches/c2" | awk '{ print $1 }')
  cold=$(median <"$tmp/cold") remote=$(median <"$tmp/remote") local=$(median <"$tmp/local")
  printf '%-22s %10.2f %10.2f %10.2f %10s %11.1fx\n' "$g" "$cold" "$remote" "$local" "$kib" \
    "$(awk -v a="$cold" -v b="$remote" 'BEGIN { print a / b }')"
done
