#!/usr/bin/env bash
# The analyzer's layers (docs/design.md, "Analyzer and reports"): calls go
# down, from the CLI to the reporters and the analyzer, from the reporters to
# the analysis result, never back up:
#   - nothing in analyzer/ outside analyzer/cli/ includes a file of reports/
#     (by a path through reports/, or by the name of a header only reports/
#     has), read from the #include lines;
#   - no object of reports/ calls the trace reader or the replay model: no
#     undefined gs_reader_* or gs_model_* symbol in `nm -u` of
#     build/obj/reports/*.o (a reporter serializes the result; it never opens
#     a trace or replays one).
# Skipped (77) when nm is missing; the objects must be built (make test-build).
set -u
cd "$(dirname "$0")/../.." || exit 2
command -v nm >/dev/null || { echo "nm is not installed"; exit 77; }
objs=$(ls build/obj/reports/*.o 2>/dev/null)
[ -n "$objs" ] || { echo "not built: build/obj/reports/*.o"; exit 1; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# headers only reports/ has: a bare #include of one of them reaches up too
only_reports=$(for h in reports/*.h; do b=$(basename "$h"); [ -e "analyzer/$b" ] || [ -e "include/$b" ] || echo "$b"; done)
while IFS= read -r f; do
  while IFS= read -r line; do
    inc=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\)[>"].*/\1/p' <<<"${line#*:}")
    [ -n "$inc" ] || continue
    case "$inc" in
      *reports/*) fail "$f includes $inc (analyzer/ must not include reports/)"; continue ;;
    esac
    for b in $only_reports; do
      [ "$(basename "$inc")" = "$b" ] && fail "$f includes $inc, a header of reports/"
    done
  done < <(grep -n '#[[:space:]]*include' "$f")
done < <(find analyzer -path analyzer/cli -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.def' \) -print | sort)

for o in $objs; do
  up=$(nm -u "$o" | awk '{print $NF}' | grep -E '^gs_(reader|model)_' | tr '\n' ' ')
  [ -z "$up" ] || fail "$o calls the reader or the model: $up"
done

[ $fails = 0 ] && echo "layers_analyzer: all passed"
[ $fails = 0 ]
