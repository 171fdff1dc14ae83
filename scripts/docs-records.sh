#!/usr/bin/env bash
# The sections of docs/trace-format.md generated from include/gcspy/records.def
# and enums.def: between `<!-- records:begin ...-->` and `<!-- records:end -->`
# what `records_md records` prints, between the dump markers what
# `records_md dump` prints. Without arguments, rewrites them (`make
# docs-records`); with --check, exits 1 (showing the difference) when the
# document is not what the tables say.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
GEN=$BUILD/tests/records_md DOC=docs/trace-format.md
[ -x "$GEN" ] || { echo "docs-records: build $GEN first (make $GEN)" >&2; exit 2; }
check=0
[ "${1:-}" = --check ] && check=1
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cp "$DOC" "$tmp/doc"
for part in records dump; do
  "$GEN" "$part" >"$tmp/$part.md" || exit 2
  n=$(grep -c "^<!-- $part:begin" "$tmp/doc")
  [ "$n" -eq 1 ] && grep -q "^<!-- $part:end -->" "$tmp/doc" ||
    { echo "docs-records: $DOC lacks one pair of $part markers" >&2; exit 2; }
  awk -v part="$part" -v f="$tmp/$part.md" '
    index($0, "<!-- " part ":begin") == 1 { print; while ((getline l < f) > 0) print l; skip = 1; next }
    $0 == "<!-- " part ":end -->" { skip = 0 }
    !skip' "$tmp/doc" >"$tmp/doc.new" && mv "$tmp/doc.new" "$tmp/doc"
done
if [ $check = 1 ]; then
  if ! cmp -s "$DOC" "$tmp/doc"; then
    echo "$DOC is not what records.def and enums.def say; run: make docs-records"
    diff "$DOC" "$tmp/doc" | head -20
    exit 1
  fi
  echo "$DOC: record reference, enumerations and dump table match records.def and enums.def"
  exit 0
fi
cp "$tmp/doc" "$DOC"
