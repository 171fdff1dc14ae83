#!/usr/bin/env bash
# Job-scale figures (docs/jobs.md), measured in one run:
#   merge    `gcspy report` over N synthetic summaries (JOB_BENCH_N, 1000):
#            each a copy of a real rank's summary with its rank, pid and
#            leaked bytes varied; against reading the same files (cat), the
#            baseline; the median of 3 runs each
#   -j       `gcspy report --job` over 8 traces of tests' job_rank program
#            (JOB_BENCH_TRACES) with -j 1 and -j 2: the ratio
#   symbols  the CPU seconds (user + system) symbolization adds to
#            `--job -j 2` over 4 of those traces: with symbols minus
#            --no-symbols, medians of 3 (one symbolizer serves all the
#            threads: a frame the ranks share is resolved once)
#   sizes    a summary's bytes; a job_rank trace's bytes
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
N=${JOB_BENCH_N:-1000}
NT=${JOB_BENCH_TRACES:-8}
T=$(mktemp -d /tmp/gcspy-jobbench.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$B/tests/programs/job_rank" ] || { echo "job-bench: $B/tests/programs/job_rank missing (make test-build)"; exit 2; }
for r in $(seq 0 $((NT - 1))); do
  env RANK=$r WORLD_SIZE=$NT LD_PRELOAD="$B/libgcspy.so" GCSPY_QUIET=1 \
    GCSPY_OUTPUT="$T/t-%r.trace" "$B/tests/programs/job_rank"
done
mkdir -p "$T/s" "$T/syn"
"$B/gcspy" report --summary-out "$T/s" "$T"/t-*.trace
python3 - "$T/s/t-1.trace.summary.json" "$T/syn" "$N" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
for r in range(int(sys.argv[3])):
    s = dict(base, rank=r, local_rank=r % 8, world_size=int(sys.argv[3]), pid=100000 + r,
             trace="/scratch/job/rank%05d.trace" % r)
    s["leaked"] = dict(base["leaked"], definite={"bytes": 4096 * (r % 7) + (1 << 24 if r == 77 else 0),
                                                 "blocks": r % 7 + (1 if r == 77 else 0)})
    json.dump(s, open("%s/r%05d.summary.json" % (sys.argv[2], r), "w"), indent=1)
PY
median3() { # CMD...: the median wall time of 3 runs, seconds
  python3 -c 'import subprocess, sys, time
t = []
for _ in range(3):
    t0 = time.monotonic(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
    t.append(time.monotonic() - t0)
print(sorted(t)[1])' "$@"
}
cpu3() { # CMD...: the median user + system CPU seconds of 3 runs (children included)
  python3 -c 'import os, subprocess, sys
t = []
for _ in range(3):
    a = os.times(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); b = os.times()
    t.append(b.children_user - a.children_user + b.children_system - a.children_system)
print(sorted(t)[1])' "$@"
}
div() { python3 -c 'import sys; print(float(sys.argv[1]) / float(sys.argv[2]))' "$1" "$2"; }
merge=$(median3 "$B/gcspy" report "$T"/syn/*.json)
cat_t=$(median3 cat "$T"/syn/*.json)
j1=$(median3 "$B/gcspy" report --job -j 1 "$T"/t-*.trace)
j2=$(median3 "$B/gcspy" report --job -j 2 "$T"/t-*.trace)
four=("$T"/t-0.trace "$T"/t-1.trace "$T"/t-2.trace "$T"/t-3.trace)
if [ "$NT" -ge 4 ]; then
  sym_cpu=$(cpu3 "$B/gcspy" report --job -j 2 "${four[@]}")
  nosym_cpu=$(cpu3 "$B/gcspy" report --job -j 2 --no-symbols "${four[@]}")
fi
sum_bytes=$(stat -c %s "$T/s/t-1.trace.summary.json")
trace_bytes=$(stat -c %s "$T/t-1.trace")
"$B/gcspy" report "$T"/syn/*.json | grep -q '^  rank 77: leaked bytes' ||
  { echo "job-bench: the merge did not single out rank 77"; exit 1; }
printf 'job-bench: merge of %d summaries %.3f s (reading them: %.3f s, ratio %.1f); %.2f ms per summary\n' \
  "$N" "$merge" "$cat_t" "$(div "$merge" "$cat_t")" "$(div "$merge" "$N" | python3 -c 'print(float(input()) * 1000)')"
printf 'job-bench: --job over %d traces: -j 1 %.3f s, -j 2 %.3f s (ratio %.2f)\n' \
  "$NT" "$j1" "$j2" "$(div "$j2" "$j1")"
[ "$NT" -ge 4 ] && printf 'job-bench: symbolizing 4 traces with --job -j 2: %.3f CPU s (%.3f with symbols, %.3f without)\n' \
  "$(python3 -c 'import sys; print(float(sys.argv[1]) - float(sys.argv[2]))' "$sym_cpu" "$nosym_cpu")" \
  "$sym_cpu" "$nosym_cpu"
echo "job-bench: summary $sum_bytes bytes; job_rank trace $trace_bytes bytes"
