#!/usr/bin/env bash
# Programs LD_PRELOAD cannot reach, and the shim in a set-user-ID process:
#   static   tests/programs/rel_static.c (-static): under LD_PRELOAD it runs
#            as without it and leaves no trace; `gcspy run` says in one line
#            that it is statically linked and LD_PRELOAD cannot reach it,
#            and returns the program's status (3).
#   setuid   tests/programs/rel_setuid.c installed set-user-ID to nobody
#            (secure-execution mode when run by root): the loader ignores
#            LD_PRELOAD, no trace; `gcspy run` says so in one line; status 4.
#   linked   the same program linked against libgcspy.so, set-user-ID: the
#            shim ignores every GCSPY_* variable (GCSPY_OUTPUT, GCSPY_QUIET,
#            GCSPY_DISABLE set by the caller): the trace goes under the
#            default name in the working directory, mode 0600, owned by the
#            program's user, and its PROCESS_START carries the set-user-ID
#            flag (0x2); run without set-user-ID, the same variables are
#            obeyed and the flag is clear.
# The set-user-ID cases need root (chown) and a file system without nosuid;
# they are skipped otherwise. What the set-user-ID programs load comes from a
# world-readable temporary directory, never from the build tree: a clone
# under /root (mode 700) is out of nobody's reach, and the loader ignores
# $ORIGIN and LD_LIBRARY_PATH in secure mode, so the linked program is
# linked again there against a copy of libgcspy.so, with that directory as
# its run path.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init rel_loader
gs_need rel_static rel_setuid rel_setuid_linked rel_tracecount
COUNT=$GS_PROGS/rel_tracecount

# ---- static ----
S=$GS_PROGS/rel_static
gs_run static "$S"
[ "$GS_RC" -eq 3 ] || fail "static: exit status $GS_RC under LD_PRELOAD, expected 3"
grep -qx 'static ok' "$GS_DIR/out" || fail "static: output: $(cat "$GS_DIR/out")"
[ -z "$(gs_traces)" ] || fail "static: a trace appeared: $(gs_traces)"
GS_DIR=$GS_T/static-run; mkdir -p "$GS_DIR"
(cd "$GS_DIR" && "$GS_CLI" run -o "$GS_DIR/%e-%p.trace" -- "$S" >out 2>err); rc=$?
[ $rc -eq 3 ] || fail "static: gcspy run exit status $rc, expected the program's 3"
grep -qx 'static ok' "$GS_DIR/out" || fail "static: gcspy run did not run the program"
[ "$(wc -l <"$GS_DIR/err")" -eq 1 ] && grep -Eiq 'static.*LD_PRELOAD|LD_PRELOAD.*static' "$GS_DIR/err" ||
  fail "static: gcspy run should say in one line that LD_PRELOAD cannot reach a statically linked program; stderr: '$(head -2 "$GS_DIR/err" | tr '\n' '|')'"

# ---- set-user-ID ----
if [ "$(id -u)" -ne 0 ]; then
  echo "setuid cases skipped: not root (cannot chown to another user)"
  gs_done
fi
D=$GS_T/suid
mkdir -p "$D" && chmod 1777 "$D" && chmod 755 "$GS_T"
cp "$GS_PROGS/rel_setuid" "$GS_LIB" "$D/" && chmod 755 "$D/libgcspy.so"
${CC:-cc} -std=gnu11 -O1 -g -fno-omit-frame-pointer -pthread -Iinclude -o "$D/rel_setuid_linked" \
  tests/programs/rel_setuid.c -Wl,--no-as-needed "$D/libgcspy.so" -Wl,-rpath,"$D" ||
  fail "cannot link rel_setuid_linked against $D/libgcspy.so"
chown 65534 "$D/rel_setuid" "$D/rel_setuid_linked" && chmod 4755 "$D/rel_setuid" "$D/rel_setuid_linked"
secure=$(cd "$D" && ./rel_setuid | sed -n 's/^secure=\([0-9]\).*/\1/p')
if [ "$secure" != 1 ]; then
  echo "setuid cases skipped: the set-user-ID bit has no effect here (nosuid mount?)"
  gs_done
fi

(cd "$D" && env LD_PRELOAD="$GS_LIB" GCSPY_OUTPUT="$D/pre-%p.trace" ./rel_setuid >pre.out 2>pre.err); rc=$?
[ $rc -eq 4 ] || fail "setuid: exit status $rc, expected 4"
grep -q '^secure=1 euid=65534' "$D/pre.out" || fail "setuid: output: $(cat "$D/pre.out")"
ls "$D"/*.trace* >/dev/null 2>&1 && fail "setuid: a trace appeared: $(ls "$D"/*.trace*)"
(cd "$D" && "$GS_CLI" run -o "$D/run-%p.trace" -- ./rel_setuid >run.out 2>run.err); rc=$?
[ $rc -eq 4 ] || fail "setuid: gcspy run exit status $rc, expected the program's 4"
[ "$(wc -l <"$D/run.err")" -eq 1 ] && grep -Eiq '(set-?user-?id|setuid|set-?group-?id|setgid).*LD_PRELOAD|LD_PRELOAD.*(set-?user-?id|setuid|setgid)' "$D/run.err" ||
  fail "setuid: gcspy run should say in one line that the loader ignores LD_PRELOAD for a set-user-ID program; stderr: '$(head -2 "$D/run.err" | tr '\n' '|')'"

# the shim linked in: GCSPY_* ignored in secure mode, and the trace says so
rm -f "$D"/*.trace*
(cd "$D" && env GCSPY_OUTPUT="$D/evil-%p.trace" GCSPY_QUIET=1 GCSPY_DISABLE=1 ./rel_setuid_linked >lk.out 2>lk.err); rc=$?
[ $rc -eq 4 ] || fail "linked: exit status $rc, expected 4"
ls "$D"/evil-* >/dev/null 2>&1 && fail "linked: GCSPY_OUTPUT was obeyed in a set-user-ID process"
t=$(ls "$D"/gcspy-rel_setuid_linked-*.trace 2>/dev/null | head -1)
if [ -z "$t" ]; then
  fail "linked: no trace under the default name (GCSPY_DISABLE=1 obeyed?): $(ls "$D")"
else
  [ "$(stat -c '%a %u' "$t")" = "600 65534" ] || fail "linked: trace mode/owner $(stat -c '%a %u' "$t"), expected 600 65534"
  "$COUNT" --size 6543 6543 "$t" >"$D/c" 2>&1 || fail "linked: trace check: $(grep -m3 -E '^error|rel_' "$D/c" | tr '\n' ';')"
  grep -qx 'sel_allocs=1' "$D/c" || fail "linked: the 6543-byte block is not in the trace"
  # the process record says the process ran set-user-ID (GS_PROC_F_SETUID)
  "$GS_CLI" dump "$t" | grep -q '^process .* flags=0x2 ' ||
    fail "linked: PROCESS_START without the set-user-ID flag: $("$GS_CLI" dump "$t" | grep -m1 '^process')"
fi
grep -q '^gcspy: pid ' "$D/lk.err" || fail "linked: no exit summary: GCSPY_QUIET=1 was obeyed in a set-user-ID process"
# control: not set-user-ID, the same variables are obeyed
cp "$GS_PROGS/rel_setuid_linked" "$D/ctl"
(cd "$D" && env GCSPY_OUTPUT="$D/ctl-%p.trace" GCSPY_QUIET=1 ./ctl >ctl.out 2>ctl.err)
ls "$D"/ctl-*.trace >/dev/null 2>&1 || fail "control: GCSPY_OUTPUT not obeyed in a normal process"
"$GS_CLI" dump "$D"/ctl-*.trace 2>/dev/null | grep -q '^process .* flags=0x0 ' ||
  fail "control: the set-user-ID flag in a normal process's trace"
[ -s "$D/ctl.err" ] && fail "control: GCSPY_QUIET=1 not obeyed: $(head -1 "$D/ctl.err")"
gs_done
