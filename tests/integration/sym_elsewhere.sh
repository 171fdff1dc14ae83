#!/usr/bin/env bash
# Symbols for a trace made elsewhere (analyzer/symfind.c): a program built
# with -g in a directory, traced there, then the directory moved away, so
# the trace's module path names nothing on this host (as a container's,
# a chroot's or another node's trace does). Reported:
#   as is                 the leak's frames are module+offset (sym_elsewhere+0x...)
#   --sysroot DIR         DIR/<the recorded path> holds the binary: names
#   --sysroot DIR         DIR/usr/lib/debug/.build-id/xx/rest.debug holds only
#                         the debug file (objcopy --only-keep-debug): names
#   --sysroot DIR         DIR holds another binary at that path (other build
#                         id): not used, frames stay module+offset, the
#                         report says the build id differs
#   DEBUGINFOD_URLS       a local debuginfod (Debian's, on 127.0.0.1) serving
#                         a directory with the binary: names
#   --sysroot missing     one line, exit status 2
# "names" means exactly gcspy_sysroot_leaker at sym_elsewhere.c:10 and main
# at sym_elsewhere.c:19 as frames #0 and #1 of the leak.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init sym_elsewhere
command -v debuginfod >/dev/null || { echo "debuginfod missing (scripts/install-deps.sh)"; exit 1; }

A=$GS_T/app
mkdir -p "$A"
cc -O1 -g -fno-omit-frame-pointer -o "$A/sym_elsewhere" tests/programs/sym_elsewhere.c || exit 2
env LD_PRELOAD="$GS_LIB" GCSPY_QUIET=1 GCSPY_OUTPUT="$GS_T/t.trace" "$A/sym_elsewhere" ||
  fail "the program failed"
mv "$A" "$GS_T/moved"
B=$GS_T/moved/sym_elsewhere
bid=$(readelf -n "$B" | awk '/Build ID/ {print $3}')
[ ${#bid} = 40 ] || fail "no build id in the binary: '$bid'"

frames() { # the leak's first two frames, from a report with ARGS
  "$GS_CLI" report -q "$@" "$GS_T/t.trace" >"$GS_T/r.txt" 2>"$GS_T/r.err" || fail "report $*: $(cat "$GS_T/r.err")"
  awk '/^   LEAKS/ { f = 1 } f && /^ +#[01] / { sub(/^ */, ""); print; if (++n == 2) exit }' "$GS_T/r.txt"
}
NAMED="#0  gcspy_sysroot_leaker at tests/programs/sym_elsewhere.c:10 (sym_elsewhere)
#1  main at tests/programs/sym_elsewhere.c:19 (sym_elsewhere)"

got=$(frames)
grep -q '^#0  sym_elsewhere+0x[0-9a-f]*$' <<<"$got" || fail "as is: expected module+offset, got: $got"

S=$GS_T/sysroot
mkdir -p "$S$A"
cp "$B" "$S$A/"
got=$(frames --sysroot "$S")
[ "$got" = "$NAMED" ] || fail "--sysroot with the binary: got: $got"

S=$GS_T/debugroot
mkdir -p "$S/usr/lib/debug/.build-id/${bid:0:2}"
objcopy --only-keep-debug "$B" "$S/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug"
got=$(frames --sysroot "$S")
[ "$got" = "$NAMED" ] || fail "--sysroot with a build-id debug file: got: $got"

S=$GS_T/otherroot
mkdir -p "$S$A"
cc -O1 -g -o "$S$A/sym_elsewhere" tests/programs/sym_elsewhere.c -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 || exit 2
got=$(frames --sysroot "$S")
grep -q '^#0  sym_elsewhere+0x[0-9a-f]*$' <<<"$got" || fail "another binary under --sysroot was used: $got"
grep -q "$S$A/sym_elsewhere: build id differs" "$GS_T/r.txt" "$GS_T/r.err" ||
  fail "no word of the other build id: $(grep -i 'build id' "$GS_T/r.txt" "$GS_T/r.err")"

"$GS_CLI" report --sysroot "$GS_T/none" "$GS_T/t.trace" >/dev/null 2>"$GS_T/e"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$GS_T/e")" = 1 ] && grep -q "sysroot.*is not a directory" "$GS_T/e" ||
  fail "missing --sysroot: exit $rc, $(cat "$GS_T/e")"

# debuginfod on the loopback address, a free port, serving a copy of the binary
mkdir -p "$GS_T/srv"
cp "$B" "$GS_T/srv/"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F "$GS_T/srv" -p "$port" -d "$GS_T/dbgd.sqlite" -t0 -g0 >"$GS_T/dbgd.log" 2>&1 &
dpid=$!
trap 'kill $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$GS_T"' EXIT
url=http://127.0.0.1:$port
ok=
for _ in $(seq 1 100); do # indexed within a second or two
  /usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "$url/buildid/$bid/executable" 2>/dev/null && { ok=1; break; }
  sleep 0.2
done
if [ -z "$ok" ]; then
  fail "debuginfod did not serve $bid: $(tail -3 "$GS_T/dbgd.log")"
else
  got=$(DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$GS_T/cache frames)
  [ "$got" = "$NAMED" ] || fail "debuginfod: got: $got"
  # and without the server's address: not found
  got=$(DEBUGINFOD_URLS= DEBUGINFOD_CACHE_PATH=$GS_T/cache2 frames)
  grep -q '^#0  sym_elsewhere+0x[0-9a-f]*$' <<<"$got" || fail "without DEBUGINFOD_URLS: $got"
fi
gs_done
