/*
 * leak_big: big leaks. A 1 MiB block and a 100 MiB block (both mmap'd by
 * glibc, most of the second never touched), pointers dropped: definitely
 * lost with exactly those bytes, 1048576 + 104857600.
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
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) void leak(size_t n)
{
    char *p = malloc(n);
    if (!p)
        exit(2);
    memset(p, 19, 4096);
    __asm__ volatile("" : : "r"(p) : "memory");
}

static __attribute__((noinline)) void clobber_stack(void)
{
    char buf[16384];
    memset(buf, 0, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

int main(void)
{
    leak(1 << 20);
    leak(100 << 20);
    clobber_stack();
    return 0;
}
