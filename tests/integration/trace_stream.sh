#!/usr/bin/env bash
# Format 2.0's stream framing (GS_FILE_F_ZSTD_STREAM: one zstd stream per
# trace, flushed at every chunk) keeps the crash guarantee, on real shim
# traces of bench/churn:
#   killed     churn SIGKILLed mid-run (10 ms flushes): the trace is a
#              stream trace whose chunks continue frames; `gcspy dump`
#              reads every complete chunk (its "end chunks=" is the count of
#              whole chunks in the file) and `gcspy check` calls it cut, not
#              malformed; cut at the end of any complete chunk, the file
#              dumps cleanly (exit 0) to exactly that many chunks, its
#              records a prefix of the whole dump's;
#   damaged    a complete trace with chunk k in the middle damaged, two
#              ways: a payload byte flipped (CRC mismatch), and the block
#              header of its zstd data made invalid with the CRC resealed
#              (bad zstd data): the dump holds exactly the records of the
#              chunks before k, exits 2, and its one error line names chunk
#              k's byte offset; `gcspy report` marks it malformed (exit 2);
#   old        tests/golden/v1.2-churn.trc, written by the 1.2 writer (a
#              zstd frame per chunk), still dumps exactly as it did
#              (tests/golden/v1.2-churn.dump).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init trace_stream
T=$GS_T
CHURN=$GS_ROOT/build/bench/churn
[ -x "$CHURN" ] || { echo "$CHURN missing (make test-build)"; exit 1; }

# chunks FILE: "flags n_whole ends... | starts_frame..." from the chunk headers:
# the file flags, the offset after each whole chunk, and per whole chunk
# whether its payload starts a zstd frame (1) or continues one (0).
chunks() {
  gs_py - "$1" <<'X'
import struct, sys
d = open(sys.argv[1], "rb").read()
flags = struct.unpack("<Q", d[16:24])[0]
off, ends, starts = 32, [], []
while off + 24 <= len(d):
    n = struct.unpack("<I", d[off + 8:off + 12])[0]
    if off + 24 + n > len(d):
        break
    starts.append(1 if d[off + 24:off + 28] == b"\x28\xb5\x2f\xfd" else 0)
    off += 24 + n
    ends.append(off)
print(flags, len(ends), *ends, "|", *starts)
X
}

records() { grep -v -e '^trace ' -e '^end ' "$1"; }

# ---- killed mid-run -----------------------------------------------------------
D=$T/killed; mkdir -p "$D"
GCSPY_OUTPUT=$D/churn.trace GCSPY_QUIET=1 GCSPY_FLUSH_MS=10 LD_PRELOAD=$GS_LIB \
  "$CHURN" --pairs 1000000000 --threads 2 --live 2000 --depth 8 >/dev/null 2>&1 &
pid=$!
# until about 256 KiB are written (several flush rounds), 30 s at most
for _ in $(seq 300); do
  [ "$(stat -c %s "$D/churn.trace" 2>/dev/null || echo 0)" -gt 262144 ] && break
  sleep 0.1
done
kill -KILL $pid; wait $pid 2>/dev/null
K=$D/churn.trace
read -r flags n rest < <(chunks "$K")
ends=(${rest%%|*}) starts=(${rest#*|})
[ $((flags & 2)) -eq 2 ] || fail "killed: file flags $flags: not a stream trace (GS_FILE_F_ZSTD_STREAM 0x2)"
[ "${n:-0}" -ge 3 ] || fail "killed: only ${n:-0} whole chunks in $(stat -c %s "$K") bytes"
cont=0; for s in "${starts[@]}"; do [ "$s" = 0 ] && cont=$((cont + 1)); done
[ "${starts[0]:-}" = 1 ] || fail "killed: chunk 0 does not start a zstd frame"
[ "$cont" -ge 2 ] || fail "killed: $cont chunks continue a frame (the stream should carry across flushes)"
"$GS_CLI" dump "$K" >"$D/all.txt" 2>"$D/all.err"; rc=$?
tail -1 "$D/all.txt" | grep -q "^end chunks=$n records=[0-9]* complete=no$" ||
  fail "killed: dump read $(tail -1 "$D/all.txt") of $n whole chunks ($(cat "$D/all.err"))"
if [ "$(stat -c %s "$K")" -gt "${ends[$((n - 1))]:-0}" ]; then
  [ $rc -eq 2 ] && grep -q "chunk $n: truncated chunk" "$D/all.err" ||
    fail "killed: dump of a file cut inside chunk $n: exit $rc, $(cat "$D/all.err")"
else
  [ $rc -eq 0 ] || fail "killed: dump of a file ending between chunks: exit $rc"
fi
# check: 0 or 1 (what was live at the kill may count as leaked), never 2
"$GS_CLI" check "$K" >/dev/null 2>"$D/check.err"; rc=$?
[ $rc -le 1 ] && grep -q "is incomplete: offset [0-9]*: " "$D/check.err" && ! grep -q malformed "$D/check.err" ||
  fail "killed: gcspy check exit $rc on a cut trace: $(cat "$D/check.err")"
records "$D/all.txt" >"$D/all.rec"
# every complete chunk: the first, the last, and up to 6 between
picks=$(gs_py -c "n=$n; print(*sorted({0, n - 1, *range(0, n, max(1, n // 6))}))")
for i in $picks; do
  head -c "${ends[$i]}" "$K" >"$D/cut.trace"
  "$GS_CLI" dump "$D/cut.trace" >"$D/cut.txt" 2>"$D/cut.err" ||
    { fail "killed: cut after chunk $i: dump exit $?: $(cat "$D/cut.err")"; continue; }
  tail -1 "$D/cut.txt" | grep -q "^end chunks=$((i + 1)) " ||
    fail "killed: cut after chunk $i: $(tail -1 "$D/cut.txt")"
  records "$D/cut.txt" >"$D/cut.rec"
  cmp -s "$D/cut.rec" <(head -n "$(wc -l <"$D/cut.rec")" "$D/all.rec") ||
    fail "killed: cut after chunk $i: records differ from the whole dump's"
done

# ---- damaged in the middle ------------------------------------------------------
gs_run complete env GCSPY_FLUSH_MS=10 "$CHURN" --pairs 400000 --threads 2 --live 2000 --depth 8
C=$(gs_traces | head -1)
[ "$GS_RC" -eq 0 ] && [ -n "$C" ] || fail "complete: churn exit $GS_RC"
read -r flags n rest < <(chunks "$C")
ends=(${rest%%|*})
[ $((flags & 2)) -eq 2 ] || fail "damaged: file flags $flags: not a stream trace"
[ "${n:-0}" -ge 4 ] || fail "damaged: only ${n:-0} chunks"
k=$((n / 2)); at=${ends[$((k - 1))]}
"$GS_CLI" dump "$C" >"$T/whole.txt" || fail "damaged: the undamaged trace does not dump"
head -c "$at" "$C" >"$T/before.trace"
"$GS_CLI" dump "$T/before.trace" >"$T/before.txt" || fail "damaged: chunks before $k do not dump"
records "$T/before.txt" >"$T/before.rec"
# damage HOW: copies the trace to $T/HOW.trace with chunk k damaged
damage() {
  gs_py - "$C" "$T/$1.trace" "$at" "$1" <<'X'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
at, how = int(sys.argv[3]), sys.argv[4]
n = struct.unpack("<I", d[at + 8:at + 12])[0]
p = at + 24
if how == "flip":
    d[p + n // 2] ^= 0x40
else:
    # a continuation payload starts with a block header: block type 3 is
    # reserved (zstd: corrupted block); reseal the payload CRC
    assert d[p:p + 4] != b"\x28\xb5\x2f\xfd", "chunk starts a frame"
    d[p] |= 0x06
    def crc32c(b):
        crc = 0xFFFFFFFF
        for x in b:
            crc ^= x
            for _ in range(8):
                crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        return crc ^ 0xFFFFFFFF
    struct.pack_into("<I", d, at + 16, crc32c(d[p:p + n]))
    struct.pack_into("<I", d, at + 20, crc32c(d[at:at + 20]))
open(sys.argv[2], "wb").write(d)
X
}
for how in flip block; do
  case $how in
    flip) why="chunk $k: payload CRC mismatch" ;;
    block) why="chunk $k: bad zstd data" ;;
  esac
  damage $how || { fail "damaged $how: could not damage chunk $k"; continue; }
  "$GS_CLI" dump "$T/$how.trace" >"$T/$how.txt" 2>"$T/$how.err"; rc=$?
  [ $rc -eq 2 ] || fail "damaged $how: dump exit $rc, not 2"
  [ "$(wc -l <"$T/$how.err")" -eq 1 ] && grep -q "^gcspy dump: $T/$how.trace: offset $at: $why" "$T/$how.err" ||
    fail "damaged $how: error line: $(cat "$T/$how.err") (wanted offset $at: $why)"
  tail -1 "$T/$how.txt" | grep -q "^end chunks=$k " || fail "damaged $how: $(tail -1 "$T/$how.txt")"
  records "$T/$how.txt" | cmp -s - "$T/before.rec" ||
    fail "damaged $how: the records are not exactly those of chunks 0..$((k - 1))"
  "$GS_CLI" report --no-symbols -o "$T/$how.rep" "$T/$how.trace" 2>"$T/$how.rerr"; rc=$?
  [ $rc -eq 2 ] && grep -q "malformed trace: offset $at: $why" "$T/$how.rerr" ||
    fail "damaged $how: report exit $rc: $(cat "$T/$how.rerr")"
done

# ---- a 1.2 trace -----------------------------------------------------------------
O=tests/golden/v1.2-churn.trc
"$GS_CLI" dump "$O" >"$T/old.txt" 2>"$T/old.err" || fail "old: dump exit $?: $(cat "$T/old.err")"
head -1 "$T/old.txt" | grep -q '^trace version=1\.2 ' || fail "old: $(head -1 "$T/old.txt")"
diff <(records "$T/old.txt") <(records tests/golden/v1.2-churn.dump) >"$T/old.diff" ||
  fail "old: dump differs from tests/golden/v1.2-churn.dump: $(head -5 "$T/old.diff")"
tail -1 "$T/old.txt" | grep -q "complete=yes$" || fail "old: $(tail -1 "$T/old.txt")"

gs_done
