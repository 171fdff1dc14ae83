/*
 * Memory the CUDA driver, runtime and CUPTI own (cuda_owned.c): what the
 * leak scan treats as the runtime's bookkeeping, not the program's.
 */
#ifndef GCSPY_CUDA_OWNED_H
#define GCSPY_CUDA_OWNED_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"

struct gs_cuda_owned {
    const uint8_t *bits;       /* per stack id: nonzero when a frame is CUDA code */
    uint32_t nbits;
    const struct gs_range *data; /* the modules' writable segments, sorted */
    size_t ndata;
};

/* Before a scan, world running, by the scanning thread (it takes the
 * loader's lock and the stack lock): new modules' ranges, new stacks' bits.
 * Everything empty when GCSPY_CUDA_OWNED is empty or no such module is
 * loaded. */
void gs_cuda_owned_prepare(struct gs_cuda_owned *out);

#endif /* GCSPY_CUDA_OWNED_H */
