#!/usr/bin/env bash
# README.md's options table is generated from include/gcspy/options.def: it must be
# exactly what `gcspy options --markdown` prints (regenerate with
# `make readme-options`).
set -eu
cd "$(dirname "$0")/../.."
want=$(build/gcspy options --markdown)
have=$(sed -n '/<!-- options:begin -->/,/<!-- options:end -->/p' README.md | sed '1d;$d')
if [ "$want" != "$have" ]; then
  echo "README.md options table is out of date; run: make readme-options"
  diff <(echo "$have") <(echo "$want") | head -20
  exit 1
fi
n=$(grep -c '^GS_OPT(' include/gcspy/options.def)
rows=$(echo "$have" | grep -c '^| `GCSPY_')
[ "$n" -eq "$rows" ] || { echo "options.def has $n options, README lists $rows"; exit 1; }
echo "README options table matches options.def ($n options)"
