/*
 * analyzer_leaky: known leaks for tests/integration/analyzer_real.sh, run
 * under libgcspy.so with its exit scan.
 *
 * Expected report (classes of the blocks allocated here):
 *   definite  111 bytes, 1 block, allocated in lose_one()
 *   definite  + indirect: a 3-node list lost from its head, allocated in
 *             make_list(): 1 definite block + 2 indirect blocks, 48 bytes each
 *   possible  333 bytes, 1 block in keep_interior(): only a pointer into its
 *             middle is kept
 *   reachable 222 bytes, 1 block in keep_global(): a global points at it
 * and nothing else from these functions (the rest is freed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
    struct node *next;
    char pad[40];
};

static void *volatile global_keep;
static char *volatile global_interior;

__attribute__((noinline)) static void lose_one(void)
{
    char *volatile p = malloc(111);
    memset(p, 1, 111);
    p = NULL;
}

__attribute__((noinline)) static struct node *make_list(int n)
{
    struct node *head = NULL;
    for (int i = 0; i < n; i++) {
        struct node *x = malloc(sizeof *x);
        memset(x, 0, sizeof *x);
        x->next = head;
        head = x;
    }
    return head;
}

__attribute__((noinline)) static void keep_global(void)
{
    global_keep = malloc(222);
}

__attribute__((noinline)) static void keep_interior(void)
{
    char *p = malloc(333);
    memset(p, 2, 333);
    global_interior = p + 100;
}

__attribute__((noinline)) static void churn(void)
{
    for (int i = 0; i < 1000; i++) {
        void *p = malloc((size_t)(i % 200) + 1);
        free(p);
    }
}

/* Overwrites the stack below main's frame so no stale copy of a lost
 * pointer keeps its block reachable. */
__attribute__((noinline)) static void scrub(void)
{
    volatile char buf[8192];
    memset((char *)buf, 0, sizeof buf);
}

int main(void)
{
    lose_one();
    struct node *volatile list = make_list(3);
    list = NULL;
    keep_global();
    keep_interior();
    churn();
    scrub();
    printf("leaky done %p\n", (void *)list);
    return 0;
}
