/*
 * planted: a program with known problems, run under libgcspy.so to make the
 * trace the HTML report's browser test opens (tests/integration/html_browser.sh).
 *
 *   definite  12345 bytes, 1 block, allocated in lose_big()
 *   definite  3000 bytes, 3 blocks of 1000, allocated in lose_three()
 *   definite  + indirect: a 2-node list lost from its head, allocated in
 *             lose_pair(): 1 definite and 1 indirect block, 64 bytes each
 *   growth    keep_growing() appends 32 KiB to a list kept in a global,
 *             every round (ROUNDS rounds, ~5 ms apart)
 *   holes     churn() frees every other block of a batch it keeps, so the
 *             heap has live blocks and holes side by side
 *   markers   gcspy_mark() with each command-line argument, then "round N"
 *             every round (looked up at run time, as include/gcspy.h says)
 *
 * The test passes markup as arguments: the report must show it as text.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 30

struct node {
    struct node *next;
    char pad[56];
};

struct chunk {
    struct chunk *next;
    char data[32768 - sizeof(struct chunk *)];
};

static struct chunk *volatile grown;
static void *volatile kept[4096];
static unsigned nkept;

__attribute__((noinline)) static void lose_big(void)
{
    char *volatile p = malloc(12345);
    memset(p, 1, 12345);
    p = NULL;
}

__attribute__((noinline)) static void lose_three(void)
{
    for (int i = 0; i < 3; i++) {
        char *volatile p = malloc(1000);
        memset(p, 2, 1000);
        p = NULL;
    }
}

__attribute__((noinline)) static struct node *pair_child(void)
{
    struct node *x = malloc(sizeof *x);
    memset(x, 0, sizeof *x);
    return x;
}

__attribute__((noinline)) static void lose_pair(void)
{
    struct node *volatile head = malloc(sizeof *head);
    memset(head, 0, sizeof *head);
    head->next = pair_child();
    head = NULL;
}

__attribute__((noinline)) static void keep_growing(void)
{
    struct chunk *c = malloc(sizeof *c);
    memset(c, 3, sizeof *c);
    c->next = grown;
    grown = c;
}

__attribute__((noinline)) static void churn(unsigned round)
{
    void *batch[64];
    for (unsigned i = 0; i < 64; i++)
        batch[i] = malloc(48 + (i * 37 + round * 11) % 900);
    for (unsigned i = 0; i < 64; i++) {
        if (i % 2 && nkept < sizeof kept / sizeof kept[0])
            kept[nkept++] = batch[i];
        else
            free(batch[i]);
    }
}

/* Overwrites the stack below main's frame so no stale copy of a lost
 * pointer keeps its block reachable. */
__attribute__((noinline)) static void scrub(void)
{
    volatile char buf[8192];
    memset((char *)buf, 0, sizeof buf);
}

int main(int argc, char **argv)
{
    void (*mark)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "gcspy_mark");
    for (int i = 1; i < argc && mark; i++)
        mark(argv[i]);
    lose_big();
    lose_three();
    lose_pair();
    for (unsigned r = 0; r < ROUNDS; r++) {
        char label[32];
        snprintf(label, sizeof label, "round %u", r + 1);
        if (mark && r % 10 == 0)
            mark(label);
        keep_growing();
        churn(r);
        struct timespec ts = { 0, 5 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    scrub();
    printf("planted: %u rounds, %u blocks kept\n", ROUNDS, nkept);
    return 0;
}
