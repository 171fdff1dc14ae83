#!/usr/bin/env bash
# Python, with LD_PRELOAD alone: gcspy_mark() and gcspy_scan() through ctypes
# (the public API in include/gcspy.h), and Python frames in allocation stacks
# for both CPython 3.11 builds on this machine (Debian's /usr/bin/python3,
# linked statically with libpython, and pyenv's, with libpython3.11.so).
#   - a scan requested through ctypes is in the trace (trigger api) and
#     reports the block the script leaked before it as lost (definite, or
#     possible when a stale interior pointer is left, as memcheck would say),
#     4321 bytes;
#   - the marker is in the trace with its label;
#   - the leaked block's stack names the script's function and line.
set -eu
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/api.py" <<'PY'
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
def leak_it():
    libc.malloc(4321)
leak_it()
g = ctypes.CDLL(None)
g.gcspy_mark(b"before the scan")
rc = g.gcspy_scan()
print("scan", rc)
PY
pythons=(/usr/bin/python3)
for p in /root/.pyenv/versions/3.11*/bin/python3.11; do [ -x "$p" ] && pythons+=("$p"); done
fails=0
for py in "${pythons[@]}"; do
  rm -f "$tmp"/*.trace*
  out=$(GCSPY_QUIET=1 GCSPY_SCAN_AT_EXIT=0 GCSPY_OUTPUT="$tmp/t.trace" LD_PRELOAD="$PWD/build/libgcspy.so" "$py" "$tmp/api.py")
  [ "$out" = "scan 0" ] || { echo "FAIL $py: gcspy_scan() returned: $out"; fails=$((fails + 1)); continue; }
  build/gcspy dump "$tmp/t.trace" > "$tmp/dump"
  grep -q '^scan_begin .*trigger=api' "$tmp/dump" || { echo "FAIL $py: no api scan"; fails=$((fails + 1)); }
  grep -Eq '^scan_block .* size=4321 .*class=(definite|possible)' "$tmp/dump" || { echo "FAIL $py: the 4321-byte leak is not reported lost by the api scan"; fails=$((fails + 1)); }
  grep -q '^marker .*label="before the scan"' "$tmp/dump" || { echo "FAIL $py: no marker"; fails=$((fails + 1)); }
  build/gcspy report "$tmp/t.trace" > "$tmp/report"
  grep -A16 -E '4321 bytes/1 .* host, leak_it \(' "$tmp/report" | grep -q "leak_it at $tmp/api.py:6" ||
    { echo "FAIL $py: the leak's stack does not name leak_it at api.py:6"; sed -n '/LEAKS/,/SUMMARY/p' "$tmp/report" | head -12; fails=$((fails + 1)); }
  echo "ok   $py"
done
exit $((fails > 0))
