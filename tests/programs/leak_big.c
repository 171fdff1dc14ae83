/*
 * leak_big: big leaks. A 1 MiB block and a 100 MiB block (both mmap'd by
 * glibc, most of the second never touched), pointers dropped: definitely
 * lost with exactly those bytes, 1048576 + 104857600.
 *
 * Where the 100 MiB block goes is chosen first: a word near the top of the
 * main thread's stack (below the loader's and libc's start-up frames) holds
 * a multiple of 4 GiB near the mmap base, so a block that straddles that
 * boundary has an interior pointer and is "possible" (about 1 run in 15
 * before this). A spacer mapping above the boundary keeps the block below
 * it; the spacer is mmap'd directly, so it is no block of gcspy's.
 *
 * valgrind calls the 100 MiB block possibly lost: some word of the process
 * under valgrind falls inside its 100 MiB address range (memcheck does the
 * same for any leaked block of 50 MiB, not for 8 MiB); its numbers are
 * pinned separately.
 *
 * @valgrind expect definite=1048576 indirect=0 possible=104857600: see above
 *
 * @scans exit 1
 * @scan exit definite=2/105906176 indirect=0/0 possible=0/0
 * @block exit 1048576=definite 104857600=definite
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "leak_case.h"

static __attribute__((noinline)) void leak(size_t n)
{
    char *p = malloc(n);
    if (!p)
        exit(2);
    memset(p, 19, 4096);
    __asm__ volatile("" : : "r"(p) : "memory");
}

/* Makes the next mapping of `bytes` land below any 4 GiB boundary it would
 * straddle (mappings go top-down into the highest hole that fits). */
static void avoid_4g_boundary(size_t bytes)
{
    size_t len = (bytes + 4096 + 4095) & ~(size_t)4095;
    char *probe = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED)
        return;
    uintptr_t lo = (uintptr_t)probe, hi = lo + len;
    uintptr_t b = hi & ~(((uintptr_t)1 << 32) - 1); /* the highest boundary below hi */
    munmap(probe, len);
    if (b > lo) /* straddles: occupy [b, hi) */
        mmap((void *)b, hi - b, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
             0);
}

int main(void)
{
    leak(1 << 20);
    avoid_4g_boundary(100 << 20);
    leak(100 << 20);
    clobber_stack();
    return 0;
}
