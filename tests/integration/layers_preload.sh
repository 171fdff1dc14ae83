#!/usr/bin/env bash
# preload/ is in one-way layers (preload/LAYERS, drawn in docs/design.md):
#  1. every .c, .h and .def of preload/ has a layer;
#  2. calls go down: every symbol an object of build/obj/preload uses
#     (nm: undefined) that another of them defines is defined in the same
#     layer or a lower one;
#  3. no file-level circle: those uses, file to file, contain no loop, not
#     even within a layer;
#  4. no file includes a preload header of a higher layer;
#  5. records are encoded in one layer: record.h's encoders (gs_rec_*,
#     gs_put_*) appear in emit.c and emit.h only, and the writer's framing
#     (gs_rec_timebase) in writer.c.
# Exit 0 pass, 1 fail (each violation on a line), 77 skip (no nm, no build).
# PRELOAD_DIR, OBJ_DIR and LAYERS point it at another tree (to show that a
# tree without layers fails).
set -u
cd "$(dirname "$0")/../.." || exit 2
src=${PRELOAD_DIR:-preload}
obj=${OBJ_DIR:-build/obj/preload}
table=${LAYERS:-$src/LAYERS}

command -v nm >/dev/null || { echo "skip: no nm on PATH"; exit 77; }
[ -f "$table" ] || { echo "FAIL: no layer table $table"; exit 1; }
ls "$obj"/*.o >/dev/null 2>&1 || { echo "skip: no objects in $obj (make first)"; exit 77; }

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# file -> "layer name", from the table
awk '!/^#/ && NF >= 3 { for (i = 3; i <= NF; i++) print $i, $1, $2 }' "$table" >"$tmp/layer"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# 1. every file has a layer
for f in "$src"/*.c "$src"/*.h "$src"/*.def; do
  [ -f "$f" ] || continue
  b=$(basename "$f")
  grep -q "^$b " "$tmp/layer" || bad "$src/$b has no layer in $table"
done

# 2, 3. symbols: "file D sym" for definitions, "file U sym" for uses
nm -P -A "$obj"/*.o 2>/dev/null | awk '
  { f = $1; sub(/:$/, "", f); sub(/.*\//, "", f); sub(/\.o$/, ".c", f)
    if ($3 == "U" || $3 == "w" || $3 == "v") print f, "U", $2
    else if ($3 ~ /^[A-Z]$/) print f, "D", $2 }' >"$tmp/syms"
[ -s "$tmp/syms" ] || { echo "skip: nm read no symbols from $obj"; exit 77; }
awk -v L="$tmp/layer" -v E="$tmp/edges" '
  BEGIN { while ((getline l < L) > 0) { split(l, a, " "); lay[a[1]] = a[2]; nm[a[1]] = a[3] } }
  $2 == "D" { def[$3] = $1; next }
  { use[NR] = $1 " " $3 }
  END {
    for (i in use) {
      split(use[i], u, " "); f = u[1]; s = u[2]; g = def[s]
      if (g == "" || g == f) continue
      print f, g > E
      if (!(f in lay) || !(g in lay)) continue
      if (lay[g] + 0 > lay[f] + 0)
        printf "FAIL: %s (layer %s %s) calls up into %s (layer %s %s): %s\n",
               f, lay[f], nm[f], g, lay[g], nm[g], s
    }
  }' "$tmp/syms" | sort -u >"$tmp/up"
if [ -s "$tmp/up" ]; then cat "$tmp/up"; fail=1; fi
touch "$tmp/edges"
sort -u "$tmp/edges" -o "$tmp/edges"
if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loop"; then
  loops=$(grep -c 'input contains a loop' "$tmp/loop")
  first=$(awk '/input contains a loop/ { n++; next } n == 1 { sub(/^tsort: /, ""); printf "%s ", $0 }' "$tmp/loop")
  bad "files calling each other in a circle ($loops found), the first: $first"
fi

# 4. includes go down
for f in "$src"/*.c "$src"/*.h; do
  [ -f "$f" ] || continue
  b=$(basename "$f")
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"/]*\)".*/\1/p' "$f" | while read -r h; do
    awk -v f="$b" -v h="$h" '
      $1 == f { lf = $2; nf = $3 } $1 == h { lh = $2; nh = $3 }
      END { if (lf != "" && lh != "" && lh + 0 > lf + 0)
              printf "FAIL: %s (layer %s %s) includes %s (layer %s %s)\n", f, lf, nf, h, lh, nh }' "$tmp/layer"
  done
done >"$tmp/inc"
if [ -s "$tmp/inc" ]; then cat "$tmp/inc"; fail=1; fi

# 5. one emitter layer
for f in "$src"/*.c "$src"/*.h; do
  [ -f "$f" ] || continue
  b=$(basename "$f")
  case $b in emit.c|emit.h) continue ;; esac
  grep -o 'gs_\(rec\|put\)_[a-z0-9_]*' "$f" | sort -u | while read -r s; do
    [ "$b" = writer.c ] && [ "$s" = gs_rec_timebase ] && continue
    echo "FAIL: $b encodes a record itself ($s): records are encoded in emit.c/emit.h"
  done
done >"$tmp/enc"
if [ -s "$tmp/enc" ]; then cat "$tmp/enc"; fail=1; fi

n=$(wc -l <"$tmp/edges")
[ $fail -eq 0 ] && echo "ok: $(ls "$obj"/*.o | wc -l) objects, $n file-to-file uses, all down, no circle"
exit $fail
