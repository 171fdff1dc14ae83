#!/usr/bin/env bash
# Ranks from every launcher (preload/rank.c): a program run under the shim
# with each launcher's variables set by hand records its rank, local rank
# and world size in PROCESS_START, and %r in GCSPY_OUTPUT names it:
#   torchrun  RANK/LOCAL_RANK/WORLD_SIZE                  -> t-3.trace, 3/1/8
#   SLURM     SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS     -> t-17.trace, 17/5/64
#   Open MPI  OMPI_COMM_WORLD_RANK/_LOCAL_RANK/_SIZE      -> t-2.trace, 2/0/4
#   PMI       PMI_RANK/PMI_SIZE                           -> t-9.trace, 9/-/10
#   torchrun's workers under srun: RANK wins over SLURM_PROCID
#   no launcher at all: %r is "none", no rank (never rank 0)
# and the launchers themselves (an executable named srun or mpirun, a
# Python script named torchrun) are marked launcher, with no rank, even
# where an outer launcher's SLURM_PROCID=0 is set: t-launcher.trace, the
# report's "launcher": true and rank null, the text report's "launcher".
# An sbatch batch script (SLURM_JOB_ID and SLURM_PROCID=0 set, no
# SLURM_STEP_ID, or the batch step's id) is a launcher too; a task of an
# srun step in the same job (SLURM_STEP_ID=0) keeps its rank, and so does
# torchrun's worker started from the batch script (RANK set).
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/lib.sh
gs_init job_ranks

D=$GS_T/out
mkdir -p "$D/bin"
cp /bin/true "$D/bin/srun"
cp /bin/true "$D/bin/mpirun"
echo 'pass' >"$D/bin/torchrun"
one() { # NAME ENV... -- CMD...
  local name=$1; shift
  mkdir -p "$D/$name"
  env -i PATH=/usr/bin:/bin LD_PRELOAD="$GS_LIB" GCSPY_QUIET=1 \
    GCSPY_OUTPUT="$D/$name/t-%r.trace" "$@" || fail "$name: exit status $?"
  local f=("$D/$name"/t-*.trace)
  [ ${#f[@]} = 1 ] && [ -f "${f[0]}" ] || { fail "$name: not one trace: ${f[*]}"; return; }
  "$GS_CLI" report --no-symbols -q --format json -o "$D/$name.json" "${f[0]}" ||
    fail "$name: report failed"
  echo "$name $(basename "${f[0]}")" >>"$D/list"
}
one torch RANK=3 LOCAL_RANK=1 WORLD_SIZE=8 /bin/true
one slurm SLURM_PROCID=17 SLURM_LOCALID=5 SLURM_NTASKS=64 /bin/true
one ompi OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_SIZE=4 /bin/true
one pmi PMI_RANK=9 PMI_SIZE=10 /bin/true
one nested SLURM_PROCID=1 SLURM_NTASKS=2 RANK=6 LOCAL_RANK=2 WORLD_SIZE=8 /bin/true
one none /bin/true
one srun SLURM_PROCID=0 SLURM_NTASKS=2 "$D/bin/srun"
one mpirun "$D/bin/mpirun"
one torchrun SLURM_PROCID=0 SLURM_NTASKS=2 /usr/bin/python3 "$D/bin/torchrun" --standalone x.py
one sbatch SLURM_JOB_ID=42 SLURM_JOBID=42 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NTASKS=4 \
  ENVIRONMENT=BATCH /bin/true
one sbatch_id SLURM_JOB_ID=42 SLURM_PROCID=0 SLURM_STEP_ID=4294967291 SLURM_STEPID=4294967291 /bin/true
one sbatch_name SLURM_JOB_ID=42 SLURM_PROCID=0 SLURM_STEP_ID=batch /bin/true
one srun_step SLURM_JOB_ID=42 SLURM_PROCID=3 SLURM_LOCALID=1 SLURM_NTASKS=4 SLURM_STEP_ID=0 \
  SLURM_STEPID=0 ENVIRONMENT=BATCH /bin/true
one sbatch_torch SLURM_JOB_ID=42 SLURM_PROCID=0 RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 /bin/true

/usr/bin/python3 - "$D" <<'PY' || fail "see above"
import json, sys
d = sys.argv[1]
want = {  # name: file, rank, local_rank, world_size, launcher
    "torch": ("t-3.trace", 3, 1, 8, False),
    "slurm": ("t-17.trace", 17, 5, 64, False),
    "ompi": ("t-2.trace", 2, 0, 4, False),
    "pmi": ("t-9.trace", 9, None, 10, False),
    "nested": ("t-6.trace", 6, 2, 8, False),
    "none": ("t-none.trace", None, None, None, False),
    "srun": ("t-launcher.trace", None, None, None, True),
    "mpirun": ("t-launcher.trace", None, None, None, True),
    "torchrun": ("t-launcher.trace", None, None, None, True),
    "sbatch": ("t-launcher.trace", None, None, None, True),
    "sbatch_id": ("t-launcher.trace", None, None, None, True),
    "sbatch_name": ("t-launcher.trace", None, None, None, True),
    "srun_step": ("t-3.trace", 3, 1, 4, False),
    "sbatch_torch": ("t-1.trace", 1, 1, 2, False),
}
files = dict(l.split() for l in open(d + "/list"))
bad = 0
for name, (f, rank, local, size, launcher) in want.items():
    p = json.load(open("%s/%s.json" % (d, name)))["processes"][0]
    got = (files.get(name), p["rank"], p["local_rank"], p["world_size"], p.get("launcher", False))
    if got != (f, rank, local, size, launcher):
        print("%s: got %s, expected %s" % (name, got, (f, rank, local, size, launcher)))
        bad = 1
sys.exit(bad)
PY
"$GS_CLI" report --no-symbols -q "$D/srun/t-launcher.trace" | grep -q ', launcher (no rank)' ||
  fail "the text report does not mark the launcher"
"$GS_CLI" report --no-symbols -q "$D/torch/t-3.trace" | grep -q ', rank 3/8' ||
  fail "the text report does not give rank 3/8"
gs_done
