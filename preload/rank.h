/*
 * Which rank of a job this process is (rank.c): read once at start from the
 * variables the launchers set (torchrun, Open MPI, PMI, SLURM), or found to
 * be a launcher itself, which has no rank of its own.
 */
#ifndef GCSPY_RANK_H
#define GCSPY_RANK_H

#include <stddef.h>
#include <stdint.h>

struct gs_rank {
    uint64_t rank1, local_rank1, world_size1; /* value + 1; 0: unset */
    int launcher;                             /* torchrun, srun, mpirun, ... */
};

/* Set by gs_rank_detect; zero (no rank, not a launcher) before. */
extern struct gs_rank gs_rank;

/* Reads envp (as the kernel gave it), the executable's path and the
 * NUL-separated arguments (len bytes) into gs_rank. Never allocates. */
void gs_rank_detect(char **envp, const char *exe, const char *argv, size_t len);

/* What %r expands to: the rank in decimal, "launcher" in a launcher, "none"
 * without a rank. buf holds at least 24 bytes. */
const char *gs_rank_text(char *buf, size_t len);

#endif /* GCSPY_RANK_H */
