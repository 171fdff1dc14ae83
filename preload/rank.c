/*
 * The process's place in a job, from its launcher's environment.
 *
 * Each launcher names the rank, local rank and world size its own way; the
 * table below is tried in order and the first set whose rank variable is
 * set wins. The order puts the innermost launcher first: torchrun started
 * by srun sees SLURM_PROCID (the node's task) as well as its children's
 * RANK, and the rank that matters to the training script is RANK.
 *
 * A launcher (torchrun, srun, mpirun, ...) is a process of the job with no
 * rank of its own: its children get the variables, it does not (torchrun
 * sets TORCHELASTIC_* and RANK in its workers only), but it may inherit an
 * outer launcher's (torchrun under srun has SLURM_PROCID). It is found by
 * its executable's name, or for torchrun, a Python script, by the module or
 * script Python runs; it is recorded as a launcher with no rank, never as
 * rank 0, so its trace does not read as the first worker's.
 *
 * An sbatch batch script is a launcher too, though slurmstepd gives it
 * SLURM_PROCID=0 (it is task 0 of the batch step): it has SLURM_JOB_ID but
 * no SLURM_STEP_ID, which slurmstepd sets only for a step with a number of
 * its own (srun's steps 0, 1, ...; src/common/env.c's setup_env leaves it
 * out for the batch step, whose id, SLURM_BATCH_SCRIPT, is negative as an
 * int); a SLURM_STEP_ID that is not a plain step number ("batch", or the
 * batch step's 4294967291 / 4294967294 where a site sets it) counts the
 * same. Only SLURM_PROCID is judged so: a RANK set inside the batch
 * script (torchrun's workers) still names a rank.
 *
 * Runs at start before libc may be ready: no getenv, no allocation.
 */
#define _GNU_SOURCE
#include <string.h>

#include "options.h"
#include "rank.h"
#include "mem.h"

struct gs_rank gs_rank;

static const struct {
    const char *rank, *local, *size;
} vars[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE"},                  /* torchrun, torch.distributed */
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},           /* MPICH's Hydra, Intel MPI */
    {"PMIX_RANK", "", ""},                                 /* PMIx launchers */
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},     /* srun */
};

static const char *const launcher_exes[] = {
    "torchrun", "srun", "salloc", "slurmstepd", "mpirun", "mpiexec", "mpiexec.hydra",
    "orterun", "orted", "prterun", "prted", "prte", "hydra_pmi_proxy", "mpiexec.openmpi",
    "mpirun.openmpi", "mpiexec.mpich", "mpirun.mpich",
};

/* Python modules whose main is a launcher (python -m NAME). */
static const char *const launcher_modules[] = {
    "torch.distributed.run", "torch.distributed.launch",
};

/* A decimal value + 1; 0 when unset, empty or not a plain number. */
static uint64_t num1(char **envp, const char *name)
{
    const char *v = *name ? gs_env_get(envp, name) : NULL;
    if (!v || !*v)
        return 0;
    uint64_t x = 0;
    for (; *v >= '0' && *v <= '9'; v++)
        x = x * 10 + (uint64_t)(*v - '0');
    return *v ? 0 : x + 1;
}

/* SLURM_PROCID comes from an sbatch batch step, not an srun step (above). */
static int slurm_batch_step(char **envp)
{
    const char *job = gs_env_get(envp, "SLURM_JOB_ID");
    if (!job || !*job)
        return 0;
    uint64_t step1 = num1(envp, "SLURM_STEP_ID");
    if (!step1 && !gs_env_get(envp, "SLURM_STEP_ID"))
        step1 = num1(envp, "SLURM_STEPID");
    /* unset or not a number: 0; the special steps (batch, extern,
     * interactive) sit at the top of the 32-bit range */
    return !step1 || step1 - 1 >= 0xfffffff0u;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i]))
            return 1;
    return 0;
}

/* The launcher test: the executable's name, or a Python interpreter running
 * torchrun's script or module. argv: NUL-separated, len bytes (the last
 * argument may lack its NUL). */
static int is_launcher(const char *exe, const char *argv, size_t len)
{
    if (exe && in_list(base_name(exe), launcher_exes, sizeof launcher_exes / sizeof *launcher_exes))
        return 1;
    if (!exe || strncmp(base_name(exe), "python", 6))
        return 0;
    const char *end = argv + len, *prev = "";
    for (const char *a = argv; a < end; a += strnlen(a, (size_t)(end - a)) + 1) {
        size_t n = strnlen(a, (size_t)(end - a));
        char arg[256];
        if (n >= sizeof arg)
            continue;
        memcpy(arg, a, n);
        arg[n] = 0;
        if (a != argv && !strcmp(prev, "-m"))
            return in_list(arg, launcher_modules, sizeof launcher_modules / sizeof *launcher_modules);
        if (a != argv && arg[0] != '-') /* the script: the first plain argument */
            return !strcmp(base_name(arg), "torchrun");
        prev = a;
    }
    return 0;
}

void gs_rank_detect(char **envp, const char *exe, const char *argv, size_t len)
{
    struct gs_rank r = {0};
    if (is_launcher(exe, argv, len)) {
        r.launcher = 1;
    } else {
        for (size_t i = 0; i < sizeof vars / sizeof *vars && !r.rank1; i++) {
            r.rank1 = num1(envp, vars[i].rank);
            if (r.rank1 && !strcmp(vars[i].rank, "SLURM_PROCID") && slurm_batch_step(envp)) {
                r.rank1 = 0;
                r.launcher = 1;
                break;
            }
            if (r.rank1) {
                r.local_rank1 = num1(envp, vars[i].local);
                r.world_size1 = num1(envp, vars[i].size);
            }
        }
    }
    gs_rank = r;
}

const char *gs_rank_text(char *buf, size_t len)
{
    if (gs_rank.launcher)
        return "launcher";
    if (!gs_rank.rank1)
        return "none";
    gs_fmt(buf, len, "%llu", (unsigned long long)(gs_rank.rank1 - 1));
    return buf;
}
