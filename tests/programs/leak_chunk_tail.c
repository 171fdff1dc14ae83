/*
 * leak_chunk_tail: leaks whose last bytes overlap glibc's next chunk header.
 * A request of n bytes with n % 16 in 1..8 (24, 1000, ...) gets a chunk
 * whose successor starts inside the requested range (the successor's
 * prev_size field is the block's usable tail). When that successor is the
 * top chunk or a free chunk in a bin, glibc's malloc state (main_arena, in
 * libc's data: a root) holds a pointer to it, that is, a pointer into the
 * leaked block, though nothing of the program's refers to the block.
 * memcheck (which replaces the allocator) says definitely lost; so must
 * gcspy. Two leaks: 24 bytes followed by a freed 5000-byte chunk (in a
 * bin), and then 6008 bytes (too big for that free chunk, so carved from
 * the top) followed by the top chunk.
 *
 * @scans exit 1
 * @scan exit definite=2/6032 indirect=0/0 possible=0/0
 * @block exit 24=definite 6008=definite 100=reachable
 */
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

void *volatile kept;

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 21, n);
    return p;
}

static __attribute__((noinline)) void leak_before_free_chunk(void)
{
    void *a = make(24);
    void *b = make(5000); /* too big for the tcache: goes to a bin when freed */
    kept = make(100);     /* keeps b from merging into the top chunk */
    free(b);
    __asm__ volatile("" : : "r"(a) : "memory");
}

static __attribute__((noinline)) void leak_before_top(void)
{
    void *a = make(6008);
    __asm__ volatile("" : : "r"(a) : "memory");
}

int main(void)
{
    leak_before_free_chunk();
    leak_before_top();
    clobber_stack();
    return 0;
}
