#!/usr/bin/env bash
# Security of the trace file and of the shim's inputs:
#   mode      traces are created 0600 even under umask 000;
#   symlink   a symlink planted at the output path (to a victim file, or
#             dangling) is never followed: the victim is unchanged, nothing
#             is created at the link's target, the trace goes to PATH.1;
#             an existing file is never overwritten either;
#   names     executables named with spaces, newlines, '%', "...", a
#             leading '-', shell syntax and non-UTF-8 bytes: %e expands to
#             one harmless component and every trace lands in the pattern's
#             directory; RANK=".." and a host name ".." (in a private UTS
#             namespace, as root) cannot make %r/%h climb out of it;
#   inputs    the shim reads nothing but its environment: under strace, the
#             only files a traced run opens beyond the untraced run's are
#             the shim's libraries, /proc (self, thread-self, hostname) and the trace;
#   cloexec   an exec'd program inherits no descriptor of its parent's trace.
# (Set-user-ID processes ignoring GCSPY_*: rel_loader.sh. JSON/HTML
# escaping of trace text: rel_badinput.sh.)
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_security
gs_need rel_faults
P=$GS_PROGS/rel_faults
T=$GS_T

# run_in DIR PATTERN [ENV...] -- CMD...: the program under the shim, output pattern PATTERN
run_in() {
  local pat=$1; shift
  env LD_PRELOAD="$GS_LIB" GCSPY_OUTPUT="$pat" GCSPY_QUIET=1 "$@" >/dev/null 2>"$T/last.err"
}

# ---- mode ----
mkdir -p "$T/mode"
(umask 000; run_in "$T/mode/t-%p.trace" "$P" work 10)
m=$(stat -c %a "$T"/mode/t-*.trace 2>/dev/null)
[ "$m" = 600 ] || fail "mode: trace created with mode '$m' under umask 000, expected 600"

# ---- symlink ----
mkdir -p "$T/ln"
echo "victim" >"$T/ln/victim"
ln -s "$T/ln/victim" "$T/ln/t.trace"
ln -s "$T/ln/nothere" "$T/ln/d.trace"
echo "precious" >"$T/ln/e.trace"
run_in "$T/ln/t.trace" "$P" work 10
run_in "$T/ln/d.trace" "$P" work 10
run_in "$T/ln/e.trace" "$P" work 10
[ "$(cat "$T/ln/victim")" = victim ] || fail "symlink: the victim file was changed"
[ -L "$T/ln/t.trace" ] || fail "symlink: the planted link was replaced"
[ -e "$T/ln/nothere" ] && fail "symlink: a dangling link was followed (its target was created)"
[ "$(cat "$T/ln/e.trace")" = precious ] || fail "existing file overwritten"
for f in t d e; do
  [ -f "$T/ln/$f.trace.1" ] && [ ! -L "$T/ln/$f.trace.1" ] || fail "symlink: no trace at $f.trace.1: $(ls "$T/ln" | tr '\n' ' ')"
done

# ---- names ----
mkdir -p "$T/names/out"
i=0
while IFS= read -r -d '' name; do
  i=$((i + 1))
  cp "$P" "$T/names/$name" || { fail "names: cannot make a file named '$name'"; continue; }
  for pat in "$T/names/out/%e.trace" "$T/names/out/%e" "$T/names/out/x-%e-%p"; do
    run_in "$pat" "$T/names/$name" work 10
    [ $? -eq 3 ] || fail "names: program '$name' did not run normally: $(head -2 "$T/last.err")"
  done
  rm -f "$T/names/$name"
done < <(printf '%s\0' 'a b' $'new\nline' '%p%%' '...' '-rf' '$(touch pwned)' $'\xff\xfe' '..x' '.hidden' 'a.')
n=$(find "$T/names/out" -mindepth 1 -maxdepth 1 -type f | wc -l)
[ "$n" -eq $((i * 3)) ] || fail "names: $n traces in the output directory, expected $((i * 3)): $(ls -A "$T/names/out" | tr '\n' ' ')"
find "$T/names/out" -mindepth 1 ! -type f | grep -q . && fail "names: something other than files appeared: $(find "$T/names/out" -mindepth 1 ! -type f)"
extra=$(find "$T/names" -mindepth 1 -maxdepth 1 ! -name out)
[ -z "$extra" ] || fail "names: files outside the output directory: $extra"
[ -e pwned ] || [ -e "$T/names/pwned" ] && fail "names: a name was run by a shell"
bad=$(find "$T/names/out" -type f -name '*[!A-Za-z0-9._+%-]*' | head -3)
[ -z "$bad" ] || fail "names: trace names with characters outside [A-Za-z0-9._+-]: $bad"
find "$T/names/out" -type f \( -name '.' -o -name '..' -o -name '..trace' \) | grep -q . && fail "names: '.' or '..' names"

mkdir -p "$T/rank/sub/out"
RANK=.. run_in "$T/rank/sub/out/%r/t.trace" "$P" work 10
RANK=../.. run_in "$T/rank/sub/out/%r-t.trace" "$P" work 10
[ -e "$T/rank/sub/t.trace" ] && fail "names: RANK='..' in the pattern's directory part put the trace outside it ($T/rank/sub/t.trace)"
find "$T/rank" -type f | grep -v "^$T/rank/sub/out/" | grep -q . && fail "names: RANK escaped: $(find "$T/rank" -type f)"
if [ "$(id -u)" -eq 0 ] && unshare -u true 2>/dev/null; then
  mkdir -p "$T/host/sub/out"
  unshare -u bash -c '"$4" -c "import socket; socket.sethostname(\"..\")" && env LD_PRELOAD="$1" GCSPY_OUTPUT="$2/host/sub/out/%h/t.trace" GCSPY_QUIET=1 "$3" work 10 >/dev/null 2>&1' _ "$GS_LIB" "$T" "$P" "$GS_PY"
  [ -e "$T/host/sub/t.trace" ] && fail "names: host name '..' in the pattern's directory part put the trace outside it"
  [ -n "$(find "$T/host" -type f)" ] || fail "names: the host name case wrote no trace at all"
else
  echo "host name case skipped: no UTS namespace"
fi

# ---- inputs ----
if command -v strace >/dev/null; then
  strace -f -qq -e trace=%file -o "$T/plain.st" "$P" work 10 >/dev/null 2>&1
  strace -f -qq -e trace=%file -E LD_PRELOAD="$GS_LIB" -E GCSPY_OUTPUT="$T/st-%p.trace" -E GCSPY_QUIET=1 \
    -o "$T/shim.st" "$P" work 10 >/dev/null 2>&1
  # the path each file system call names (its first string argument)
  paths() { sed -n 's/^[0-9]* *[a-z0-9_]*(\(AT_FDCWD, \)\{0,1\}"\([^"]*\)".*/\2/p' "$1" | sort -u; }
  paths "$T/plain.st" >"$T/plain.files"
  paths "$T/shim.st" >"$T/shim.files"
  [ -s "$T/shim.files" ] || fail "inputs: no path found in the strace output"
  extra=$(comm -13 "$T/plain.files" "$T/shim.files" |
    grep -Ev '\.so(\.[0-9]+)*$|^/proc/self/|^/proc/thread-self/|^/proc/sys/kernel/hostname$|^/proc/self$' |
    grep -v "^$T/st-[0-9]*\.trace$")
  [ -z "$extra" ] || fail "inputs: the traced run opened files beyond its environment's: $extra"
else
  echo "inputs case skipped: no strace"
fi

# ---- cloexec ----
mkdir -p "$T/cx"
env LD_PRELOAD="$GS_LIB" GCSPY_OUTPUT="$T/cx/%e-%p.trace" GCSPY_QUIET=1 \
  bash -c 'exec ls -l /proc/self/fd/' >"$T/cx/fds" 2>&1
grep -q 'bash-[0-9]*\.trace' "$T/cx/fds" && fail "cloexec: the exec'd program holds the parent's trace open: $(grep trace "$T/cx/fds")"
ls "$T"/cx/bash-*.trace >/dev/null 2>&1 || fail "cloexec: the parent (bash) wrote no trace"
gs_done
