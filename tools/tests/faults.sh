#!/usr/bin/env bash
# Fault injection (issue 13): each write-side call coil makes (an output file, an artifact, the
# compile cache, the standard output) fails in turn with ENOSPC or EIO, once (transient) or from
# then on (persistent), through the LD_PRELOAD library faultwrite.c; then the C compiler is
# killed, hangs, or kills coil itself during a cpu compile. After each: exit status 0 and the
# right output, or a non-zero status (never a signal, never a hang) with a message naming the file
# and the error; never a partial file at an output path, no temporary file left, and the next run
# without faults succeeds. docs/reliability.md ("Fault injection") says more.
# usage: faults.sh COIL_BINARY SOURCE_DIR FAULTWRITE_LIBRARY|none
set -u
coil=$1
src=$2
lib=$3
if [ "$lib" = none ]; then
  echo "tools_faults: skipped: the sanitizer build (an LD_PRELOAD library cannot be loaded before ASan's runtime)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mlp=$src/examples/mlp.coil
# -O0: the faults are in coil, not in the code the compiler makes, and the sweep compiles often
printf '[plugin.cpu]\ncflags = -O0\nportable = true\n' >"$tmp/fast.ini"
export COIL_CONFIG=$tmp/fast.ini
export TMPDIR=$tmp/tmpdir # where the cpu plugin keeps the source of a failed compile
mkdir "$tmp/tmpdir"
pass=0
failed=0
shown=0

fail() { # fail WHAT: one failed check, with the run's stderr and the report (the first 20)
  failed=$((failed + 1))
  shown=$((shown + 1))
  [ $shown -gt 20 ] && return
  echo "FAIL: $1"
  sed 's/^/  stderr: /' "$tmp/err" | head -5
  [ -f "$tmp/report" ] && sed 's/^/  report: /' "$tmp/report" | head -3
}
check() { # check WHAT CONDITION-COMMAND...
  local what=$1
  shift
  if "$@"; then pass=$((pass + 1)); else fail "$what"; fi
}
# quiet CMD...: CMD's status, its output to $tmp/out and $tmp/err, within 30 s
quiet() {
  timeout -k 5 30 "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# faulty N ERRNO PERSIST CMD...: quiet CMD with coil's Nth write-side call failing with ERRNO
faulty() {
  local n=$1 e=$2 p=$3
  shift 3
  rm -f "$tmp/report"
  quiet env LD_PRELOAD="$lib" COIL_FAULT_EXE="$coil" COIL_FAULT_WRITE="$n" COIL_FAULT_ERRNO="$e" \
    COIL_FAULT_PERSIST="$p" COIL_FAULT_REPORT="$tmp/report" "$@"
}
# calls NAME CMD...: runs CMD counting coil's write-side calls; the trace goes to $tmp/NAME.calls
calls() {
  local name=$1
  shift
  rm -f "$tmp/report"
  quiet env LD_PRELOAD="$lib" COIL_FAULT_EXE="$coil" COIL_FAULT_TRACE=1 COIL_FAULT_REPORT="$tmp/report" "$@"
  cp "$tmp/report" "$tmp/$name.calls"
  [ $rc = 0 ] || fail "$name: the run without faults succeeds"
}
# only DIR NAME...: DIR holds exactly the NAMEs (none: it is empty)
only() {
  local dir=$1
  shift
  [ "$(ls -A "$dir" | tr '\n' ' ')" = "$(printf '%s ' "$@" | sed 's/^ $//')" ]
}
errtext() { case $1 in ENOSPC) echo "No space left on device" ;; EIO) echo "Input/output error" ;; esac; }
# a failed run's message says why (the errno's text) and where (a path under $tmp, or stdout)
# (or, for the standard output, that it failed: a stdio error seen at exit has lost its errno)
says_why() {
  { grep -qF -- "$(errtext "$1")" "$tmp/err" && grep -qF -- "$tmp/" "$tmp/err"; } ||
    grep -qF "cannot write the standard output" "$tmp/err"
}
# a run that failed must exit with an error status of its own, not a signal or the timeout
clean_failure() { [ $rc -ne 0 ] && [ $rc -lt 124 ]; }

# sweep NAME [compiles|stdout]: for N over coil's write-side calls in a run of scenario NAME, each
# errno, transient and persistent: NAME_setup (which empties the scenario's directory and sets
# cmd), the run under the fault, then NAME_ok (after status 0), or NAME_failed, a run without
# faults and NAME_ok. Every N for ENOSPC, except the standard output's calls after its first one
# (stdout: all of them; run_ref sweeps them); for the scenarios that run the C compiler
# (compiles), 0.2 s a run, EIO takes every 4th N (transient from the 1st, persistent from the
# 3rd): coil's error paths do not depend on the errno, only its messages do.
sweep() {
  local name=$1 how=${2:-} e p n total list i before
  [ -n "${FAULTS_ONLY:-}" ] && [ "$FAULTS_ONLY" != "$name" ] && return
  "${name}_setup"
  calls "$name" "${cmd[@]}"
  total=$(awk '/^calls/ { print $2 }' "$tmp/$name.calls")
  list=$(awk -v out="$tmp/out" -v all="$([ "$how" = stdout ] && echo 1)" '/^call [0-9]+:/ {
           n = $2 + 0; if ($4 == out && !all && seen++) next; print n }' "$tmp/$name.calls")
  [ -n "$list" ] || fail "$name: the run without faults makes write-side calls"
  echo "$name: $total write-side calls, $(echo $list | wc -w) swept"
  for e in ENOSPC EIO; do
    for p in 0 1; do
      i=0
      for n in $list; do
        i=$((i + 1))
        [ "$how" = compiles ] && [ $e = EIO ] && [ $(((i - 1 - 2 * p) % 4)) != 0 ] && continue
        before=$failed
        "${name}_setup"
        faulty "$n" "$e" "$p" "${cmd[@]}"
        local what="$name: call $n ($(sed -n "s/^call $n: //p" "$tmp/$name.calls" | sed "s#$tmp/##g")) fails with $e$([ $p = 1 ] && echo ', persistent')"
        grep -q "^fault: call $n:" "$tmp/report" || { fail "$what: the fault was injected"; continue; }
        if [ $rc = 0 ]; then
          "${name}_ok" || fail "$what: exit status 0 with the right output"
        else
          clean_failure || fail "$what: a clean failure (status $rc)"
          says_why "$e" || fail "$what: the message names the file and the error"
          "${name}_failed" || fail "$what: no partial file, no temporary file"
          quiet "${cmd[@]}"
          [ $rc = 0 ] && "${name}_ok" || fail "$what: the next run without faults succeeds"
        fi
        [ $failed = "$before" ] && pass=$((pass + 1))
      done
    done
  done
}

# ---- run --backend ref --out FILE over an older FILE ----
d=$tmp/run-ref
"$coil" run "$mlp" --backend ref --seed 2 --out "$tmp/old.st" >/dev/null 2>&1
"$coil" run "$mlp" --backend ref --seed 1 --out "$tmp/ref.st" >"$tmp/ref.stdout" 2>/dev/null
run_ref_setup() {
  rm -rf "$d" && mkdir "$d" && cp "$tmp/old.st" "$d/out.st"
  cmd=("$coil" run "$mlp" --backend ref --seed 1 --out "$d/out.st")
}
run_ref_ok() { cmp -s "$d/out.st" "$tmp/ref.st" && cmp -s "$tmp/out" "$tmp/ref.stdout" && only "$d" out.st; }
run_ref_failed() { { cmp -s "$d/out.st" "$tmp/old.st" || cmp -s "$d/out.st" "$tmp/ref.st"; } && only "$d" out.st; }
sweep run_ref stdout

# ---- compile -o FILE.wir where there is none ----
d=$tmp/compile-wir
"$coil" compile "$mlp" -o "$tmp/ref.wir" >"$tmp/ref.compile.stdout" 2>/dev/null
compile_wir_setup() {
  rm -rf "$d" && mkdir "$d"
  cmd=("$coil" compile "$mlp" -o "$d/prog.wir")
}
compile_wir_ok() { cmp -s "$d/prog.wir" "$tmp/ref.wir" && only "$d" prog.wir; }
compile_wir_failed() { only "$d" || { cmp -s "$d/prog.wir" "$tmp/ref.wir" && only "$d" prog.wir; }; }
sweep compile_wir

# ---- compile --dump DIR: the compile stages' dumps ----
d=$tmp/dump
"$coil" compile "$mlp" --dump "$tmp/ref-dump" >/dev/null 2>&1
dump_setup() {
  rm -rf "$d" && mkdir "$d"
  cmd=("$coil" compile "$mlp" --dump "$d/dump")
}
# every dump there is complete (the same as a run without faults), and no temporary file
dumps_complete() {
  local f
  for f in "$d"/dump/*; do
    [ -e "$f" ] || continue
    cmp -s "$f" "$tmp/ref-dump/${f##*/}" || return 1
  done
}
dump_ok() { only "$d" dump && [ "$(ls -A "$d/dump")" = "$(ls -A "$tmp/ref-dump")" ] && dumps_complete; }
dump_failed() { only "$d" || { only "$d" dump && dumps_complete; }; }
sweep dump

# ---- compile --backend cpu -o DIR --embed-weights W: an artifact, with its weights ----
d=$tmp/compile-cpu
weights=$src/examples/mlp.weights.safetensors
"$coil" run "$mlp" --backend cpu --seed 1 --no-cache --out "$tmp/ref-cpu.st" >"$tmp/ref-cpu.stdout" 2>/dev/null
"$coil" compile "$mlp" --backend cpu -o "$tmp/ref-art" --embed-weights "$weights" >/dev/null 2>&1
"$coil" run "$tmp/ref-art" --seed 1 --out "$tmp/ref-art.st" >/dev/null 2>&1
# artifact_ok DIR REFERENCE: the artifact at DIR runs, gives the outputs in REFERENCE, and holds
# no temporary file
artifact_ok() {
  rm -f "$tmp/art.st"
  "$coil" run "$1" --seed 1 --out "$tmp/art.st" >/dev/null 2>&1 && cmp -s "$tmp/art.st" "$2" &&
    [ -z "$(find "$1" -name '*.tmp*')" ]
}
compile_cpu_setup() {
  rm -rf "$d" && mkdir "$d"
  cmd=("$coil" compile "$mlp" --backend cpu -o "$d/art" --embed-weights "$weights")
}
compile_cpu_ok() { only "$d" art && artifact_ok "$d/art" "$tmp/ref-art.st"; }
compile_cpu_failed() { only "$d" || compile_cpu_ok; }
sweep compile_cpu compiles

# ---- run --backend cpu: a compile into the cache ----
d=$tmp/run-cpu
export COIL_CACHE_DIR=$d/cache
run_cpu_setup() {
  rm -rf "$d" && mkdir "$d"
  cmd=("$coil" run "$mlp" --backend cpu --seed 1)
}
# no cache (coil runs without one when it cannot make its directory), an empty one, or one
# holding the right entry and nothing else (no temporary directory)
# the cache holds nothing, or its secret key (.key) and at most one entry, complete and valid
cache_ok() {
  only "$d" && return 0
  only "$d" cache || return 1
  local entries
  entries=$(ls -A "$d/cache" | grep -vx '\.key')
  [ -z "$entries" ] || { [ "$(wc -l <<<"$entries")" = 1 ] && artifact_ok "$d/cache/$entries" "$tmp/ref-cpu.st"; }
}
run_cpu_ok() { cmp -s "$tmp/out" "$tmp/ref-cpu.stdout" && cache_ok; }
run_cpu_failed() { cache_ok; }
sweep run_cpu compiles
unset COIL_CACHE_DIR
# durability: an artifact the user names is fsynced; a cache entry is not (every open rehashes
# its files, so one a crash left torn is compiled again: docs/reliability.md)
if [ -z "${FAULTS_ONLY:-}" ]; then
  check "compile -o fsyncs the artifact's files" grep -qE "^call [0-9]+: fsync $tmp/compile-cpu/\.art\.tmp-[^/]*/coil\.json" "$tmp/compile_cpu.calls"
  check "a cache entry is written without fsync" bash -c "! grep -E '^call [0-9]+: fsync $tmp/run-cpu/cache/\.[0-9a-f]{32}\.tmp-' '$tmp/run_cpu.calls'"
  check "... which the trace would show" grep -qE "^call [0-9]+: [a-z]+ $tmp/run-cpu/cache/[^/]*\.tmp-[^/]*/coil\.json" "$tmp/run_cpu.calls"
fi

# ---- the C compiler killed, hanging, or killing coil during a cpu compile ----
[ -z "${FAULTS_ONLY:-}" ] || [ "$FAULTS_ONLY" = cc ] && {
d=$tmp/cc
mkdir "$d"
rm -f "$tmp/report"
export COIL_CACHE_DIR=$d/cache
# age_temps CACHE: the killed run's temporaries look a minute old: the cache sweeps a dead
# writer's directory only once it has not changed for 60 s (core/cache.c, STALE_SECONDS)
age_temps() {
  find "$1" -mindepth 1 -maxdepth 1 -name '.*tmp*' -exec touch -h -d '2 minutes ago' {} +
}
# no_stale CACHE: no temporary directory is left in CACHE (the names left go to $tmp/err)
no_stale() {
  ls -A "$1" 2>/dev/null | grep -F tmp | sed 's/^/left: /' >"$tmp/err"
  [ ! -s "$tmp/err" ]
}
cat >"$d/killed-cc" <<'SH'
#!/bin/sh
# a C compiler killed midway: half a library written, then SIGKILL
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
head -c 4096 /bin/sh >"$out"
kill -KILL $$
SH
cat >"$d/hanging-cc" <<'SH'
#!/bin/sh
# a C compiler that never finishes
echo $$ >"$(dirname "$0")/hanging.pid"
exec sleep 300
SH
cat >"$d/killer-cc" <<'SH'
#!/bin/sh
# coil itself killed (SIGKILL) while its C compiler runs
kill -KILL $PPID
exit 1
SH
chmod +x "$d"/*-cc
ref_run() { # the same run with the real compiler: it succeeds, with the right outputs
  quiet "$coil" run "$mlp" --backend cpu --seed 1
  [ $rc = 0 ] && cmp -s "$tmp/out" "$tmp/ref-cpu.stdout"
}

quiet env CC="$d/killed-cc" "$coil" run "$mlp" --backend cpu --seed 1
check "killed cc: run fails" [ $rc = 1 ]
check "killed cc: ... saying the compiler got signal 9" grep -qF "the C compiler failed (signal 9)" "$tmp/err"
check "killed cc: ... leaving no cache entry and no temporary directory (the key only)" only "$d/cache" .key
check "killed cc: the next run with the real compiler succeeds" ref_run
quiet env CC="$d/killed-cc" "$coil" compile "$mlp" --backend cpu -o "$d/art"
check "killed cc: compile -o fails" [ $rc = 1 ]
check "killed cc: ... leaving no artifact and no temporary directory" only "$d" cache hanging-cc killed-cc killer-cc

# a failed compile keeps its source in $TMPDIR; under ENOSPC at each of coil's write-side calls,
# the message says so only when the copy is complete
"$coil" compile "$mlp" --backend cpu -o "$d/good" >/dev/null 2>&1
faulty 0 ENOSPC 0 env CC="$d/killed-cc" "$coil" compile "$mlp" --backend cpu -o "$d/art"
bad=0
for n in $(seq 1 "$(awk '/^calls/ { print $2 }' "$tmp/report")"); do
  rm -rf "$TMPDIR"/*
  faulty "$n" ENOSPC 0 env CC="$d/killed-cc" "$coil" compile "$mlp" --backend cpu -o "$d/art"
  kept=$(sed -n 's|.*the source is kept in \(.*\)/kernels.c$|\1|p' "$tmp/err")
  if [ $rc != 1 ] || { [ -n "$kept" ] && ! cmp -s "$kept/kernels.c" "$d/good/kernels.c"; } ||
    { [ -z "$kept" ] && [ -n "$(ls -A "$TMPDIR")" ]; }; then
    bad=$((bad + 1))
    [ $bad = 1 ] && fail "failed compile, call $n fails: status 1, and the source kept complete or not at all"
  fi
done
[ $bad = 0 ] && pass=$((pass + 1))
rm -rf "$d/art" "$d/good" "$TMPDIR"/* "$tmp/report"

rm -rf "$d/cache"
printf '[plugin.cpu]\ncflags = -O0\nportable = true\ncc_timeout = 1\n' >"$d/timeout.ini"
quiet env CC="$d/hanging-cc" COIL_CONFIG="$d/timeout.ini" "$coil" run "$mlp" --backend cpu --seed 1
check "hanging cc: run fails (before the script's 30 s timeout)" [ $rc = 1 ]
check "hanging cc: ... saying the compiler ran past cc_timeout" grep -qF "ran past cc_timeout (1 s) and was killed" "$tmp/err"
check "hanging cc: ... leaving no cache entry and no temporary directory (the key only)" only "$d/cache" .key
check "hanging cc: ... and the compiler was killed" eval '! kill -0 "$(cat "$d/hanging.pid")" 2>/dev/null'
printf '[plugin.cpu]\ncc_timeout = -1\n' >"$d/bad.ini"
quiet env COIL_CONFIG="$d/bad.ini" "$coil" run "$mlp" --backend cpu --seed 1
check "cc_timeout = -1 is refused" grep -qF "option cc_timeout: expected 0 (no limit) to 86400 seconds, got '-1'" "$tmp/err"
rm -f "$d/hanging.pid"
quiet env CC="$d/hanging-cc" timeout 2 "$coil" run "$mlp" --backend cpu --seed 1
[ -f "$d/hanging.pid" ] && kill "$(cat "$d/hanging.pid")" 2>/dev/null
check "hanging cc, coil killed by timeout (SIGTERM) first" [ $rc = 124 ]
age_temps "$d/cache"
check "hanging cc, coil killed: the next run with the real compiler succeeds" ref_run
check "hanging cc, coil killed: ... and no temporary directory of the killed run is left in the cache (swept: its writer died a minute ago)" no_stale "$d/cache"

rm -rf "$d/cache"
quiet env CC="$d/killer-cc" "$coil" run "$mlp" --backend cpu --seed 1 2>/dev/null # (no "Killed" from bash)
check "coil killed during its compile: status 137 (SIGKILL)" [ $rc = 137 ]
age_temps "$d/cache"
check "coil killed during its compile: the next run succeeds" ref_run
check "coil killed during its compile: ... and no temporary directory of the killed run is left in the cache (swept: its writer died a minute ago)" no_stale "$d/cache"
unset COIL_CACHE_DIR
}

echo "faults: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
