/*
 * Every malloc-family entry point the shim hooks, called directly from main
 * (so each event's innermost frame is in main). The program writes, on
 * stdout, the exact records the shim must produce for each call, one a line,
 * in the order of the calls:
 *     alloc ADDR SIZE          (malloc; realloc(NULL, n))
 *     alloc_ex ADDR SIZE FN    (calloc, memalign family, realloc that moved)
 *     realloc ADDR SIZE        (realloc that kept its address)
 *     free ADDR                (free; realloc that moved or freed)
 * and "live ADDR SIZE" for each block it leaves allocated at exit.
 * stdout has a static buffer, so stdio allocates nothing.
 *
 * Cases: calloc; realloc growing in place (a block at the top of the heap),
 * moving (a neighbour in the way), shrinking (stays), realloc(NULL, n),
 * realloc(p, 0) (frees, returns NULL); reallocarray, and its overflow (NULL,
 * ENOMEM, nothing recorded); calloc overflow and posix_memalign with a bad
 * alignment (nothing recorded); posix_memalign, aligned_alloc, memalign,
 * valloc, pvalloc (recorded size rounded up to whole pages); malloc(0);
 * free(NULL); malloc_usable_size >= the requested size on every tracked block.
 *
 * Exit status 0; 3 when a precondition of a case did not hold (say, the heap
 * top was not where the in-place growth needs it), with the reason on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char obuf[1 << 16];

#define NEED(cond, what)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "precondition failed: %s\n", what);               \
            exit(3);                                                          \
        }                                                                     \
    } while (0)

static void usable(void *p, size_t n)
{
    size_t u = malloc_usable_size(p);
    if (u < n) {
        fprintf(stderr, "malloc_usable_size(%p) = %zu < %zu\n", p, u, n);
        exit(4);
    }
}

/* Records what a realloc-like call that returned q for old address p with
 * size n did (p as a number: the block may be gone). */
static void realloced(uintptr_t p, void *q, size_t n)
{
    if ((uintptr_t)q == p) {
        printf("realloc %p %zu\n", q, n);
    } else {
        printf("free %#lx\n", (unsigned long)p);
        printf("alloc_ex %p %zu realloc\n", q, n);
    }
    usable(q, n);
}

static void freed(void *p)
{
    uintptr_t a = (uintptr_t)p;
    free(p);
    printf("free %#lx\n", (unsigned long)a);
}

/* Keeps the compiler from folding the overflow cases at compile time. */
static volatile size_t huge = SIZE_MAX / 2;

int main(void)
{
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    char *c = calloc(10, 100);
    NEED(c && c[999] == 0, "calloc");
    printf("alloc_ex %p 1000 calloc\n", c);
    usable(c, 1000);

    /* grows in place: a fresh block at the top of the heap can extend */
    char *g = malloc(50000);
    NEED(g, "malloc 50000");
    printf("alloc %p 50000\n", g);
    uintptr_t ga = (uintptr_t)g;
    char *g2 = realloc(g, 60000);
    NEED((uintptr_t)g2 == ga, "realloc at the heap top grew in place");
    realloced(ga, g2, 60000);
    /* shrinks: stays */
    char *s = realloc(g2, 100);
    NEED((uintptr_t)s == ga, "shrinking realloc kept its address");
    realloced(ga, s, 100);

    /* moves: a neighbour is in the way */
    char *a = malloc(200);
    char *b = malloc(200);
    NEED(a && b, "malloc 200");
    printf("alloc %p 200\nalloc %p 200\n", a, b);
    uintptr_t aa0 = (uintptr_t)a;
    char *m = realloc(a, 100000);
    NEED(m && (uintptr_t)m != aa0, "realloc past a neighbour moved");
    realloced(aa0, m, 100000);

    char *n = realloc(NULL, 300);
    NEED(n, "realloc(NULL, 300)");
    printf("alloc %p 300\n", n);
    usable(n, 300);

    uintptr_t ba = (uintptr_t)b;
    char *z = realloc(b, 0);
    NEED(z == NULL, "realloc(p, 0) returned NULL");
    printf("free %#lx\n", (unsigned long)ba);

    uintptr_t na = (uintptr_t)n;
    char *ra = reallocarray(n, 10, 50);
    NEED(ra, "reallocarray 10 x 50");
    realloced(na, ra, 500);
    errno = 0;
    char *ro = reallocarray(ra, huge, 3);
    NEED(ro == NULL && errno == ENOMEM, "reallocarray overflow: NULL, ENOMEM");
    errno = 0;
    void *co = calloc(huge, 3);
    NEED(co == NULL && errno == ENOMEM, "calloc overflow: NULL, ENOMEM");

    void *pm = NULL;
    NEED(posix_memalign(&pm, 64, 1000) == 0 && ((uintptr_t)pm & 63) == 0, "posix_memalign 64");
    printf("alloc_ex %p 1000 memalign\n", pm);
    usable(pm, 1000);
    void *bad = (void *)1;
    NEED(posix_memalign(&bad, 3, 100) == EINVAL && bad == (void *)1,
         "posix_memalign with alignment 3: EINVAL, *out untouched");
    void *aa = aligned_alloc(128, 1024);
    NEED(aa && ((uintptr_t)aa & 127) == 0, "aligned_alloc 128");
    printf("alloc_ex %p 1024 memalign\n", aa);
    usable(aa, 1024);
    void *ma = memalign(256, 777);
    NEED(ma && ((uintptr_t)ma & 255) == 0, "memalign 256");
    printf("alloc_ex %p 777 memalign\n", ma);
    usable(ma, 777);
    void *va = valloc(5000);
    NEED(va && ((uintptr_t)va & (page - 1)) == 0, "valloc");
    printf("alloc_ex %p 5000 valloc\n", va);
    usable(va, 5000);
    void *pv = pvalloc(5000);
    NEED(pv && ((uintptr_t)pv & (page - 1)) == 0, "pvalloc");
    printf("alloc_ex %p %zu valloc\n", pv, (5000 + page - 1) / page * page);
    usable(pv, (5000 + page - 1) / page * page);
    void *zero = malloc(0);
    NEED(zero, "malloc(0)");
    printf("alloc %p 0\n", zero);
    free(NULL);

    /* frees of some, the rest stay live */
    freed(c);
    freed(pm);
    freed(va);
    freed(zero);
    printf("live %p 100\nlive %p 100000\nlive %p 500\nlive %p 1024\nlive %p 777\n"
           "live %p %zu\n", s, m, ra, aa, ma, pv, (5000 + page - 1) / page * page);
    return 0;
}
