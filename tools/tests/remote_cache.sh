#!/usr/bin/env bash
# The remote compile cache ([cache] remote, core/cache_remote.c) against a real redis-server
# started here on a loopback port: two processes with separate local caches share compiles;
# Redis stopped, paused, killed mid-publish, refused, or answering garbage; tampered,
# truncated, re-signed and oversized entries; the team key file's checks; 16 concurrent
# compilers of one graph publish once.
# usage: remote_cache.sh COIL_BINARY SOURCE_DIR   (exit 77: no redis-server)
set -u
coil=$1
src=$2
command -v redis-server >/dev/null 2>&1 || { echo "skipped: no redis-server (apt-get install redis-server)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d)
rpid=
fpid=
cleanup() {
  [ -n "$rpid" ] && kill -CONT "$rpid" 2>/dev/null && kill -KILL "$rpid" 2>/dev/null
  [ -n "$fpid" ] && kill -KILL "$fpid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
resp="python3 $src/tools/tests/resp.py"
pass=0
failed=0
check() { # check NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then
    pass=$((pass + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name"
    [ -f "$tmp/out" ] && sed 's/^/  out: /' "$tmp/out" | head -5
    [ -f "$tmp/err" ] && sed 's/^/  err: /' "$tmp/err" | head -5
  fi
}
rc_is() { [ "$(cat "$tmp/rc")" = "$1" ]; }
out_has() { grep -qF -- "$1" "$tmp/out"; }
err_has() { grep -qF -- "$1" "$tmp/err"; }
notes_are() { [ "$(grep -c 'coil: note: ' "$tmp/err")" = "$1" ]; }
faster_than() { awk -v t="$(cat "$tmp/secs")" -v m="$1" 'BEGIN { exit !(t < m) }'; }

# start_redis: a fresh server on a free loopback port ($port, $rpid)
start_redis() {
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 40000))
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
      --dir "$tmp" --logfile "$tmp/redis-$port.log" >/dev/null 2>&1 &
    rpid=$!
    for i in $(seq 50); do
      if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
        return 0
      fi
      kill -0 "$rpid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$rpid" 2>/dev/null
    wait "$rpid" 2>/dev/null
  done
  echo "FAIL: redis-server did not start"
  exit 1
}
stop_redis() {
  kill -CONT "$rpid" 2>/dev/null
  kill -KILL "$rpid" 2>/dev/null
  wait "$rpid" 2>/dev/null
  rpid=
}

# start_fake WHERE MODE: tools/tests/resp.py's fake server on a port or a unix socket ($fpid)
start_fake() {
  $resp "$1" fake "$2" >"$tmp/fake.out" 2>&1 &
  fpid=$!
  for i in $(seq 50); do grep -q ready "$tmp/fake.out" 2>/dev/null && break; sleep 0.1; done
}
stop_fake() {
  kill -KILL "$fpid" 2>/dev/null
  wait "$fpid" 2>/dev/null
  fpid=
}

# c NAME CMD...: runs coil with the local cache $tmp/NAME, timing it ($tmp/secs)
c() {
  local dir=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  COIL_CACHE_DIR="$tmp/$dir" "$coil" "$@" >"$tmp/out" 2>"$tmp/err"
  echo $? >"$tmp/rc"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }' >"$tmp/secs"
}

openssl_hex() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
openssl_hex >"$tmp/team.key"
chmod 600 "$tmp/team.key"
start_redis
export COIL_CACHE_REMOTE="redis://127.0.0.1:$port" COIL_CACHE_REMOTE_KEY_FILE="$tmp/team.key"
mlp=$src/examples/mlp.coil
soft=$src/examples/softmax_rows.coil
lng=$src/examples/layernorm_gelu.coil

# ---- two processes with separate local caches share a compile (the cpu plugin) ----
c a run "$mlp" --backend cpu -v --out "$tmp/a.st"
check "first process: compiles and publishes" out_has "cache: compiles 1; local hit 0, remote hit 0, remote miss 1"
check "first process: published 1" out_has "published 1,"
check "first process: exit 0" rc_is 0
c b run "$mlp" --backend cpu -v --out "$tmp/b.st"
check "second process (empty local cache): a remote hit, no compile" out_has "cache: compiles 0; local hit 0, remote hit 1,"
check "second process: exit 0, no note" rc_is 0
check "second process: no note" notes_are 0
check "second process: the same outputs, byte for byte" cmp -s "$tmp/a.st" "$tmp/b.st"
c b run "$mlp" --backend cpu -v
check "third process (the second's local cache): a local hit" out_has "cache: compiles 0; local hit 1, remote hit 0, remote miss 0"
keys=$(redis-cli -p "$port" --scan --pattern 'coil:v1:e:*' | wc -l)
check "one entry in Redis" [ "$keys" = 1 ]
c d compile "$mlp" --backend cpu -v
check "coil compile -v: a remote hit" out_has "fetched it from the remote cache into the local one"
check "coil compile -v: counts" out_has "remote hit 1,"
key=$(redis-cli -p "$port" --scan --pattern 'coil:v1:e:*' | head -1)

# ---- tampered entries (the interp plugin: quick compiles) ----
c t1 compile "$soft" --backend interp -v
skey=$(redis-cli -p "$port" --scan --pattern 'coil:v1:e:*' | grep -v "$key" | head -1)
check "softmax published" [ -n "$skey" ]
$resp "$port" get "$skey" "$tmp/good.blob"
redis-cli -p "$port" SETRANGE "$skey" 200 X >/dev/null
c t2 compile "$soft" --backend interp -v
check "a byte changed: ignored with a note" err_has "ignored: its keyed hash does not match"
check "a byte changed: compiled locally" out_has "compiled it into the compile cache"
check "a byte changed: exit 0" rc_is 0
check "a byte changed: counted" out_has "rejected 1"
check "a byte changed: the remote value is left as it was (never deleted)" \
  [ "$(redis-cli -p "$port" GETRANGE "$skey" 200 200)" = X ]
head -c -40 "$tmp/good.blob" >"$tmp/cut.blob"
$resp "$port" set "$skey" "$tmp/cut.blob"
c t3 compile "$soft" --backend interp -v
check "truncated: ignored with a note" err_has "ignored: its keyed hash does not match"
check "truncated: exit 0" rc_is 0
$resp "$port" set "$skey" "$tmp/good.blob"
openssl_hex >"$tmp/other.key"
chmod 600 "$tmp/other.key"
COIL_CACHE_REMOTE_KEY_FILE="$tmp/other.key" c t4 compile "$soft" --backend interp -v
check "another team's key: ignored with a note" err_has "published with another team key"
check "another team's key: compiled, not published over it" out_has "already there 1"
$resp "$port" resign "$skey" "$tmp/team.key" version
c t5 compile "$soft" --backend interp -v
check "signed, but from another plugin version: ignored" err_has "was compiled by plugin interp 99.0.0, not interp"
check "another plugin version: compiled locally, exit 0" rc_is 0
$resp "$port" set "$skey" "$tmp/good.blob"
$resp "$port" resign "$skey" "$tmp/team.key" extra
c t6 compile "$soft" --backend interp -v
check "signed, with bytes after the last file: ignored" err_has "bytes after its last file"
# an entry stored under another graph's key (a signed entry, but for another program)
$resp "$port" set "$skey" "$tmp/good.blob"
redis-cli -p "$port" COPY "$key" "$skey" REPLACE >/dev/null
c t7 compile "$soft" --backend interp -v
check "an entry under another key: ignored" err_has "records another cache key"
$resp "$port" set "$skey" "$tmp/good.blob"
c t8 run "$soft" --backend interp -v
check "the good entry again: a remote hit" out_has "remote hit 1,"

# ---- oversized entries ----
COIL_CACHE_REMOTE_MAX_ENTRY=1K c o1 compile "$lng" --backend interp -v
check "an entry over remote_max_entry is not published" err_has "not published: larger than remote_max_entry"
check "not published: exit 0" rc_is 0
lkey=$(redis-cli -p "$port" --scan --pattern 'coil:v1:e:*' | grep -v -e "$key" -e "$skey" | head -1)
check "nothing stored" [ -z "$lkey" ]
c o2 compile "$lng" --backend interp -v
lkey=$(redis-cli -p "$port" --scan --pattern 'coil:v1:e:*' | grep -v -e "$key" -e "$skey" | head -1)
COIL_CACHE_REMOTE_MAX_ENTRY=1K c o3 compile "$lng" --backend interp -v
check "a stored entry over remote_max_entry is not loaded" err_has "larger than remote_max_entry"
check "not loaded: compiled locally" out_has "compiled it into the compile cache"

# ---- the team key file ----
COIL_CACHE_REMOTE_KEY_FILE="$tmp/missing.key" c k1 run "$soft" --backend interp -v
check "missing key file: the run goes on" rc_is 0
check "missing key file: one note" err_has "the remote cache is off: remote_key_file $tmp/missing.key"
cp "$tmp/team.key" "$tmp/open.key"
chmod 644 "$tmp/open.key"
COIL_CACHE_REMOTE_KEY_FILE="$tmp/open.key" c k2 run "$soft" --backend interp -v
check "a key file others may read: refused" err_has "others may read it"
check "refused key: no remote" out_has "remote hit 0, remote miss 0"
printf 'abcd\n' >"$tmp/short.key"
chmod 600 "$tmp/short.key"
COIL_CACHE_REMOTE_KEY_FILE="$tmp/short.key" c k3 run "$soft" --backend interp -v
check "a short key: refused" err_has "expected 64 hex digits"
COIL_CACHE_REMOTE_KEY_FILE= c k4 run "$soft" --backend interp -v
check "no key file: refused" err_has "remote_key_file is not set"
check "no key file: exit 0" rc_is 0

# ---- configuration ----
COIL_CACHE_REMOTE="redis://alice:s3cret@127.0.0.1:$port/0" c cfg config explain
check "config explain hides the password" out_has "redis://alice:****@127.0.0.1:$port/0"
check "config explain: no password" bash -c "! grep -q s3cret '$tmp/out'"
COIL_CACHE_REMOTE="http://x" c cfg config explain
check "a bad URL is an error naming the variable" err_has "COIL_CACHE_REMOTE=http://x"
check "a bad URL: exit 1" rc_is 1
printf '[cache]\nremote = redis://127.0.0.1:%s\nremote_timeout_ms = soon\n' "$port" >"$tmp/bad.ini"
c cfg config explain --config "$tmp/bad.ini"
check "a bad [cache] value names file and line" err_has "bad.ini:3"
printf '[cache]\nremot = redis://127.0.0.1\n' >"$tmp/typo.ini"
c cfg config explain --config "$tmp/typo.ini"
check "an unknown [cache] key is named, with a suggestion" err_has "unknown key 'remot' in [cache]"

# ---- Redis down, slow, killed mid-publish, garbage ----
fport=$((port + 1))
[ "$fport" -gt 65000 ] && fport=$((port - 1))
COIL_CACHE_REMOTE="redis://127.0.0.1:$fport" c f1 compile "$lng" --backend interp -v
check "refused: exit 0" rc_is 0
check "refused: compiled locally" out_has "compiled it into the compile cache"
check "refused: one note (fetch fails, publish skipped in the back-off)" notes_are 1
check "refused: the note says so" err_has "Connection refused"
check "refused: publish skipped" out_has "skipped 1"
kill -STOP "$rpid"
COIL_CACHE_REMOTE_TIMEOUT_MS=300 c f2 compile "$lng" --backend interp -v
kill -CONT "$rpid"
check "stopped server: exit 0" rc_is 0
check "stopped server: the deadline" err_has "no answer within 300 ms"
check "stopped server: one note" notes_are 1
check "stopped server: no hang (under 5 s)" faster_than 5
redis-cli -p "$port" CLIENT PAUSE 2000 ALL >/dev/null
COIL_CACHE_REMOTE_TIMEOUT_MS=200 c f3 compile "$mlp" --backend interp -v
check "paused server: exit 0, a note" err_has "no answer within 200 ms"
check "paused server: under 2 s" faster_than 2
redis-cli -p "$port" CLIENT UNPAUSE >/dev/null
# killed mid-publish: reads go on, writes (the SET) wait, then the server is killed
redis-cli -p "$port" CLIENT PAUSE 10000 WRITE >/dev/null
(COIL_CACHE_REMOTE_TIMEOUT_MS=8000 c f4 run "$lng" --backend cpu -v; cp "$tmp/rc" "$tmp/rc4"; cp "$tmp/err" "$tmp/err4"; cp "$tmp/out" "$tmp/out4") &
bg=$!
for i in $(seq 100); do # until the SET is waiting on the pause (the compile is done)
  redis-cli -p "$port" CLIENT LIST 2>/dev/null | grep -q "cmd=set" && break
  sleep 0.1
done
check "mid-publish: the SET was on its way" bash -c "redis-cli -p $port CLIENT LIST | grep -q cmd=set"
stop_redis
wait "$bg"
cp "$tmp/rc4" "$tmp/rc"
cp "$tmp/err4" "$tmp/err"
cp "$tmp/out4" "$tmp/out"
check "killed mid-publish: exit 0 (not 141, SIGPIPE)" rc_is 0
check "killed mid-publish: a note" err_has "publish:"
check "killed mid-publish: the run's outputs" out_has "graph"
start_redis
export COIL_CACHE_REMOTE="redis://127.0.0.1:$port"
check "killed mid-publish: nothing in the new server" [ "$(redis-cli -p "$port" DBSIZE)" = 0 ]
start_fake "$fport" garbage
COIL_CACHE_REMOTE="redis://127.0.0.1:$fport" c f5 compile "$soft" --backend interp -v
check "garbage answers: exit 0" rc_is 0
check "garbage answers: one note" notes_are 1
check "garbage answers: compiled locally" out_has "compiled it into the compile cache"
stop_fake
# a reply larger than any entry: cut off at remote_max_entry, not buffered until the deadline
start_fake "$fport" flood
COIL_CACHE_REMOTE="redis://127.0.0.1:$fport" COIL_CACHE_REMOTE_MAX_ENTRY=1M COIL_CACHE_REMOTE_TIMEOUT_MS=20000 \
  c f7 compile "$soft" --backend interp -v
check "flooding server: exit 0" rc_is 0
check "flooding server: cut off at the entry limit" err_has "the reply is over 1049600 bytes"
check "flooding server: well before the 20 s deadline" faster_than 5
check "flooding server: compiled locally" out_has "compiled it into the compile cache"
stop_fake
# EPIPE on the publish: over a Unix socket a write to a closed peer raises SIGPIPE at once, which
# would end the process with 141 if the cache did not hold it off
start_fake "$tmp/fake.sock" pipe
COIL_CACHE_REMOTE="unix://$tmp/fake.sock" c f6 run "$soft" --backend cpu -v
check "EPIPE mid-publish: the server closed before the SET" grep -q "closed before the SET" "$tmp/fake.out"
check "EPIPE mid-publish: exit 0 (not 141, SIGPIPE)" rc_is 0
check "EPIPE mid-publish: one note, on the publish" bash -c "[ \"\$(grep -c 'coil: note: ' $tmp/err)\" = 1 ] && grep -q 'publish:' $tmp/err"
check "EPIPE mid-publish: the run's outputs" out_has "graph"
stop_fake

# ---- 16 concurrent compilers of one graph publish once ----
pids=()
for i in $(seq 16); do
  COIL_CACHE_DIR="$tmp/p$i" "$coil" compile "$mlp" --backend cpu -v >"$tmp/p$i.out" 2>"$tmp/p$i.err" &
  pids+=($!)
done
wait "${pids[@]}" # not the server's
ok=0
for i in $(seq 16); do grep -q "compile cache\|remote cache" "$tmp/p$i.out" && ok=$((ok + 1)); done
check "16 compilers: every one succeeded" [ "$ok" = 16 ]
published=$(cat "$tmp"/p*.out | grep -o "published [0-9]*" | awk '{ s += $2 } END { print s }')
check "16 compilers: exactly one published" [ "$published" = 1 ]
check "16 compilers: one entry in Redis" [ "$(redis-cli -p "$port" --scan --pattern 'coil:v1:e:*' | wc -l)" = 1 ]
check "16 compilers: no notes" bash -c "! cat $tmp/p*.err | grep -q 'coil: note'"
c p17 run "$mlp" --backend cpu -v
check "a 17th: a remote hit" out_has "remote hit 1,"

echo "remote cache: $pass passed, $failed failed"
[ "$failed" = 0 ]
