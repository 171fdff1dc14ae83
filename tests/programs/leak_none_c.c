/*
 * leak_none_c: a control with no leak. A linked list of blocks from every
 * allocator (malloc, calloc, realloc, posix_memalign, aligned_alloc, strdup)
 * hangs off a global and is scanned with gcspy_scan() while alive: all
 * reachable. Then everything is freed, printf is used (its stdio buffer is
 * libc's, reachable). Neither scan may report a definite, indirect or
 * possible block.
 *
 * @scans api 1
 * @scan api definite=0/0 indirect=0/0 possible=0/0
 * @block api 1001=reachable 2010=reachable 3003=reachable 4096=reachable 505=reachable
 * @scans exit 1
 * @scan exit definite=0/0 indirect=0/0 possible=0/0
 * @block exit 1001=absent 2010=absent 3003=absent
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_case.h"

struct item {
    struct item *next;
};

struct item *volatile head;

static void push(void *p)
{
    struct item *it = p;
    it->next = head;
    head = it;
}

static __attribute__((noinline)) int build(void)
{
    void *a;
    char text[64];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = 0;
    push(malloc(1001));
    push(calloc(2, 1005));
    void *r = malloc(100);
    push(realloc(r, 3003));
    if (posix_memalign(&a, 64, 4096))
        return -1;
    push(a);
    push(aligned_alloc(32, 505));
    push(strdup(text));
    return 0;
}

static __attribute__((noinline)) void release(void)
{
    while (head) {
        struct item *n = head->next;
        free(head);
        head = n;
    }
}

int main(void)
{
    int (*scan)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gcspy_scan");
    if (build())
        return 2;
    clobber_stack();
    int rc = scan ? scan() : 0;
    release();
    printf("freed everything\n");
    clobber_stack();
    return rc ? 1 : 0;
}
