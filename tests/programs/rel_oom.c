/*
 * rel_oom: allocation failure as the program sees it, with and without the
 * shim (tests/integration/rel_oom.sh compares the two runs).
 *
 *   rel_oom nulls
 *     Calls every malloc-family function in ways that must fail (sizes no
 *     heap can hold, overflowing products, bad alignments) and prints, one a
 *     line, what each returned and the errno it left ("malloc(huge) = NULL
 *     errno=ENOMEM"). A block of 100 bytes, allocated first and filled with
 *     a pattern, survives a failed realloc and reallocarray unchanged and is
 *     freed at the end; errno set by the program survives successful calls.
 *     Exits 0.
 *     Expected under the shim: the same output byte for byte; in the trace,
 *     exactly one allocation of 100 bytes, freed once, and no allocation of
 *     the failed sizes.
 *
 *   rel_oom exhaust
 *     Run under `ulimit -v`: allocates 1 MiB blocks (touching each) until
 *     malloc returns NULL, then 64-byte blocks until NULL (at most 20
 *     million), prints "exhausted: 1 MiB blocks NULL errno=ENOMEM" and the
 *     same for 64-byte blocks (not the counts: the shim's own memory takes
 *     some of the limit), frees everything, makes 10,000 malloc/free pairs
 *     that must all succeed and prints "recovered". Exits 0.
 *     Expected under the shim: the same output and status; at most one line
 *     from gcspy on stderr, saying it ran out of memory and stopped tracing.
 *
 *   rel_oom vmsize
 *     Prints "vmsize_kb=N", the address space in use when main starts (the
 *     test sets its limits from it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ename(int e)
{
    switch (e) {
    case 0: return "0";
    case ENOMEM: return "ENOMEM";
    case EINVAL: return "EINVAL";
    case 1234: return "1234(kept)";
    default: return "other";
    }
}

/* Keeps the compiler from reasoning about the sizes (and warning). */
static volatile size_t huge_v = SIZE_MAX - 4096, half_v = SIZE_MAX / 2 + 1;

#define SHOW(expr, what)                                                      \
    do {                                                                      \
        errno = 0;                                                            \
        void *r_ = (expr);                                                    \
        printf("%s = %s errno=%s\n", what, r_ ? "non-NULL" : "NULL", ename(errno)); \
        free(r_);                                                             \
    } while (0)

static int nulls(void)
{
    size_t huge = huge_v, half = half_v;
    char *keep = malloc(100);
    if (!keep)
        return 1;
    for (int i = 0; i < 100; i++)
        keep[i] = (char)(i * 7);

    SHOW(malloc(huge), "malloc(huge)");
    SHOW(calloc(half, 4), "calloc(overflowing product)");
    SHOW(calloc(1, huge), "calloc(1, huge)");
    SHOW(memalign(64, huge), "memalign(64, huge)");
    SHOW(aligned_alloc(64, huge), "aligned_alloc(64, huge)");
    SHOW(valloc(huge), "valloc(huge)");
    SHOW(pvalloc(huge), "pvalloc(huge)");

    errno = 0;
    char *r = realloc(keep, huge);
    printf("realloc(block, huge) = %s errno=%s\n", r ? "non-NULL" : "NULL", ename(errno));
    if (r)
        keep = r;
    errno = 0;
    r = reallocarray(keep, half, 4);
    printf("reallocarray(block, overflowing) = %s errno=%s\n", r ? "non-NULL" : "NULL",
           ename(errno));
    if (r)
        keep = r;
    int same = 1;
    for (int i = 0; i < 100; i++)
        same &= keep[i] == (char)(i * 7);
    printf("block after failed reallocs: %s\n", same ? "unchanged" : "CHANGED");

    void *q = (void *)0x1;
    int rc = posix_memalign(&q, 64, huge);
    printf("posix_memalign(64, huge) = %s, out %s\n", rc == ENOMEM ? "ENOMEM" : ename(rc),
           q == (void *)0x1 ? "untouched" : "changed");
    q = (void *)0x1;
    rc = posix_memalign(&q, 3, 16);
    printf("posix_memalign(3, 16) = %s, out %s\n", rc == EINVAL ? "EINVAL" : ename(rc),
           q == (void *)0x1 ? "untouched" : "changed");

    /* errno the program set survives successful calls through the shim */
    errno = 1234;
    void *ok = malloc(200);
    void *ok2 = calloc(3, 50);
    ok = realloc(ok, 400);
    free(ok);
    free(ok2);
    printf("errno after successful calls: %s\n", ename(errno));

    free(keep);
    printf("done\n");
    return 0;
}

static int exhaust(void)
{
    static void *big[1 << 17];
    size_t nbig = 0;
    int e1 = 0, e2 = 0;
    while (nbig < sizeof big / sizeof big[0]) {
        errno = 0;
        char *p = malloc(1 << 20);
        if (!p) {
            e1 = errno;
            break;
        }
        p[0] = 1;
        p[(1 << 20) - 1] = 1;
        big[nbig++] = p;
    }
    printf("exhausted: 1 MiB blocks NULL errno=%s\n", nbig < sizeof big / sizeof big[0] ? ename(e1) : "never");
    /* small blocks form a list through their first word */
    void *head = NULL;
    size_t nsmall = 0;
    for (; nsmall < 20000000; nsmall++) {
        errno = 0;
        void **p = malloc(64);
        if (!p) {
            e2 = errno;
            break;
        }
        *p = head;
        head = p;
    }
    printf("exhausted: 64-byte blocks NULL errno=%s\n", nsmall < 20000000 ? ename(e2) : "never");
    while (head) {
        void *n = *(void **)head;
        free(head);
        head = n;
    }
    for (size_t i = 0; i < nbig; i++)
        free(big[i]);
    for (int i = 0; i < 10000; i++) {
        void *p = malloc(32 + (size_t)i % 512);
        if (!p) {
            printf("malloc failed after freeing everything\n");
            return 1;
        }
        free(p);
    }
    printf("recovered\n");
    return 0;
}

static int vmsize(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7))
            printf("vmsize_kb=%ld\n", atol(line + 7));
    if (f)
        fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* no stdio buffer to allocate when memory is gone */
    if (argc == 2 && !strcmp(argv[1], "nulls"))
        return nulls();
    if (argc == 2 && !strcmp(argv[1], "exhaust"))
        return exhaust();
    if (argc == 2 && !strcmp(argv[1], "vmsize"))
        return vmsize();
    fprintf(stderr, "usage: rel_oom nulls|exhaust|vmsize\n");
    return 2;
}
