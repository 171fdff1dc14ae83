/*
 * leak_stale_heap: stale copies of a pointer left in free heap memory. A
 * 1 MiB block from the brk heap (the mmap threshold is raised so that it is
 * not mmap'd), filled with copies of the only pointer to a 1001-byte block,
 * is freed: it becomes a free chunk in the middle of the heap (a kept block
 * after it stops it merging into the top chunk). Then the 1001-byte block's
 * pointer is dropped. A thread does the same in its own glibc arena with a
 * 2010-byte block, after keeping 80 blocks of 1 MiB there: the arena's
 * first 64 MiB heap is full, so the stale buffer lies in its second heap
 * (whose heap_info points back at the first). Free heap memory is
 * the allocator's, not the program's: both blocks are definitely lost, as
 * memcheck says. (A freed tensor's buffer in a training job is such a free
 * chunk, and the numbers left in it look like pointers.) The exited
 * thread's DTV, in glibc's stack cache, is possibly lost (see
 * leak_threads_exited).
 *
 * @scans exit 1
 * @scan exit definite=2/3011 indirect=0/0 possible=*
 * @only exit possible size%16=0
 * @block exit 1001=definite 2010=definite 3003x2=reachable 1048575x80=reachable
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

void *volatile kept[2];
void *volatile filler[80];

static __attribute__((noinline)) void *make(size_t n)
{
    char *p = malloc(n);
    memset(p, 21, n);
    return p;
}

/* The 1 MiB block is carved before the small one, so that the small one's
 * 64 KiB region is outside the freed chunk's middle. */
static __attribute__((noinline)) void stale(size_t small, int slot)
{
    size_t n = 1u << 20;
    void **big = malloc(n);
    kept[slot] = make(3003); /* keeps the freed chunk from the top chunk */
    void *p = make(small);
    for (size_t i = 0; i < n / sizeof *big; i++)
        big[i] = p;
    __asm__ volatile("" : : "r"(big) : "memory");
    free(big);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 80; i++)
        filler[i] = malloc((1u << 20) - 1);
    stale(2010, 1);
    return NULL;
}

int main(void)
{
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    stale(1001, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
        return 1;
    clobber_stack();
    return 0;
}
