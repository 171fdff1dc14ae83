/* A rank of a job: leaks 64 blocks of 4096 bytes (256 KiB) from
 * job_rank_leak when the launcher's rank variable (RANK, SLURM_PROCID or
 * OMPI_COMM_WORLD_RANK) is 1, nothing otherwise; every rank allocates and
 * frees the same 64 blocks. tests/integration/job_report.sh. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void *job_rank_leak(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 7, n);
    return p;
}

static int rank(void)
{
    const char *v = getenv("RANK");
    if (!v)
        v = getenv("SLURM_PROCID");
    if (!v)
        v = getenv("OMPI_COMM_WORLD_RANK");
    return v ? atoi(v) : -1;
}

int main(void)
{
    int leaks = rank() == 1;
    for (int i = 0; i < 64; i++) {
        void *volatile p = job_rank_leak(4096);
        if (!leaks)
            free(p);
        p = NULL;
    }
    return 0;
}
