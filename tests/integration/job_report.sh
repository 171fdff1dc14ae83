#!/usr/bin/env bash
# The job report (analyzer/cli/job_cmd.c, reports/job.c, analyzer/summary.c):
# three ranks of tests/programs/job_rank (RANK=0..2, WORLD_SIZE=3; rank 1
# alone leaks 64 x 4096 bytes from job_rank_leak) and a launcher (a copy of
# /bin/true named srun, SLURM_PROCID=0 set), each traced under the shim.
#   gcspy report --job TRACES   one row per process: ranks 0, 1, 2 in order
#                               with 0 bytes, 256 KiB, 0 bytes leaked, then
#                               the launcher; OUTLIERS names rank 1 alone,
#                               with its site job_rank_leak (job_rank.c:10);
#                               totals 256 KiB in 64 blocks
#   --summary-out DIR (-j 2)    one summary per trace, JSON, format
#                               gcspy-summary version 1
#   gcspy report SUMMARIES      the same text as from the traces (round trip)
#   -j 3 --job                  the same text as -j 1
#   --format json               outliers: exactly rank 1's leaked bytes
#   a damaged summary, another version: one line naming it, exit status 2
#   gcspy run --summary DIR     rank 1 run under gcspy run: its exit status,
#                               one summary in DIR, the same figures
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init job_report
gs_need job_rank

D=$GS_T/job
mkdir -p "$D/bin" "$D/s"
cp /bin/true "$D/bin/srun"
for r in 0 1 2; do
  env RANK=$r LOCAL_RANK=$r WORLD_SIZE=3 LD_PRELOAD="$GS_LIB" GCSPY_QUIET=1 \
    GCSPY_OUTPUT="$D/t-%r.trace" "$GS_PROGS/job_rank" || fail "rank $r: exit status $?"
done
env SLURM_PROCID=0 LD_PRELOAD="$GS_LIB" GCSPY_QUIET=1 GCSPY_OUTPUT="$D/t-%r.trace" "$D/bin/srun"
T=("$D/t-0.trace" "$D/t-1.trace" "$D/t-2.trace" "$D/t-launcher.trace")
for f in "${T[@]}"; do [ -f "$f" ] || fail "no trace $f"; done

"$GS_CLI" report --job "${T[@]}" >"$D/traces.txt" 2>"$D/err" || fail "report --job: $(cat "$D/err")"
rows=$(awk '/^OUTLIERS/ {exit} /^  rank [0-9]+\// {print $1, $2, $6, $7}
            /^  launcher pid/ {print $1, $2, $7, $8}' "$D/traces.txt")
want="rank 0/3 0 bytes
rank 1/3 256 KiB
rank 2/3 0 bytes
launcher pid 0 bytes"
[ "$rows" = "$want" ] || fail "rows: $rows"
outl=$(sed -n '/^OUTLIERS/,/^$/p' "$D/traces.txt" | grep '^  ')
[ "$outl" = "  rank 1: leaked bytes 256 KiB (others' median 0 bytes); largest: 256 KiB definite at job_rank_leak (tests/programs/job_rank.c:10)" ] ||
  fail "outliers: $outl"
grep -q '^  leaked 256 KiB in 64 blocks (definite 256 KiB, ' "$D/traces.txt" || fail "totals: $(tail -3 "$D/traces.txt")"

"$GS_CLI" report -j 2 --summary-out "$D/s" "${T[@]}" >"$D/out" 2>"$D/err" || fail "--summary-out: $(cat "$D/err")"
[ -s "$D/out" ] && fail "--summary-out printed a report: $(head -3 "$D/out")"
/usr/bin/python3 - "$D/s" <<'PY' || fail "summaries: see above"
import json, os, sys
d = sys.argv[1]
names = sorted(os.listdir(d))
assert names == ["t-0.trace.summary.json", "t-1.trace.summary.json", "t-2.trace.summary.json",
                 "t-launcher.trace.summary.json"], names
s = json.load(open(os.path.join(d, "t-1.trace.summary.json")))
assert (s["format"], s["version"], s["rank"], s["world_size"]) == ("gcspy-summary", 1, 1, 3), s
assert s["leaked"]["definite"] == {"bytes": 262144, "blocks": 64}, s["leaked"]
assert s["sites"][0]["where"] == "job_rank_leak (tests/programs/job_rank.c:10)", s["sites"]
l = json.load(open(os.path.join(d, "t-launcher.trace.summary.json")))
assert l["launcher"] is True and l["rank"] is None, l
PY
"$GS_CLI" report "$D"/s/*.json >"$D/summaries.txt" 2>"$D/err" || fail "report of summaries: $(cat "$D/err")"
diff "$D/traces.txt" "$D/summaries.txt" >"$D/d" || fail "summaries and traces differ: $(head -8 "$D/d")"
"$GS_CLI" report -j 3 --job "${T[@]}" >"$D/j3.txt" 2>/dev/null
cmp -s "$D/traces.txt" "$D/j3.txt" || fail "-j 3 differs: $(diff "$D/traces.txt" "$D/j3.txt" | head -5)"

"$GS_CLI" report --format json "$D"/s/*.json >"$D/job.json" || fail "json job report"
/usr/bin/python3 - "$D/job.json" <<'PY' || fail "json job report: see above"
import json, sys
j = json.load(open(sys.argv[1]))
assert (j["format"], j["version"], len(j["processes"])) == ("gcspy-job", 1, 4), j.keys()
o = [(x["rank"], x["metric"], x["value"], x["others_median"]) for x in j["outliers"]]
assert o == [(1, "leaked bytes", 262144, 0)], o
PY

head -c 100 "$D/s/t-1.trace.summary.json" >"$D/cut.json"
"$GS_CLI" report "$D/cut.json" "$D/s/t-0.trace.summary.json" >/dev/null 2>"$D/e"; rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$D/e")" = 1 ] && grep -q "cut.json: not a gcspy summary" "$D/e" ||
  fail "a cut summary: exit $rc, $(cat "$D/e")"
sed 's/"version": 1,/"version": 2,/' "$D/s/t-0.trace.summary.json" >"$D/v2.json"
"$GS_CLI" report "$D/v2.json" >/dev/null 2>"$D/e"; rc=$?
[ $rc = 2 ] && grep -q "v2.json: summary version 2, this gcspy reads version 1" "$D/e" ||
  fail "a newer summary: exit $rc, $(cat "$D/e")"

mkdir -p "$D/run/s"
(cd "$D/run" && RANK=1 WORLD_SIZE=3 "$GS_CLI" run -q --summary "$D/run/s" -- "$GS_PROGS/job_rank"); rc=$?
[ $rc = 0 ] || fail "gcspy run --summary: exit status $rc"
/usr/bin/python3 - "$D/run/s" <<'PY' || fail "gcspy run --summary: see above"
import glob, json, sys
f = glob.glob(sys.argv[1] + "/*.summary.json")
assert len(f) == 1, f
s = json.load(open(f[0]))
assert (s["rank"], s["leaked"]["definite"]["bytes"]) == (1, 262144), s
PY
gs_done
