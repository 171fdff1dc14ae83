/*
 * rel_longjmp: control leaving frames that allocated without returning
 * through them (tests/integration/rel_odd.sh).
 *
 * 100 times: jump_down recurses to depth 40, allocating a 8888-byte block
 * at each level (recorded in a global table), and at the bottom longjmp()s
 * back to main. Then 100 times the same with the way out a siglongjmp()
 * from a SIGUSR1 handler (the program raises the signal at the bottom,
 * outside any allocation), and 100 times with a SIGALRM handler that also
 * allocates and frees a 9999-byte block before jumping. After each descent
 * main frees the blocks from the table. Prints "longjmp allocs=A frees=F
 * handler=H" (A = F = 300 * 40; H = 100 handler allocations).
 *
 * Expected under the shim: exit 0; exactly A allocations and F frees of
 * 8888 bytes and H of 9999 bytes, all freed; the trace consistent; and
 * tracing still on after the jumps (the blocks of the last round are in the
 * trace like those of the first).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define DEPTH 40
#define ROUNDS 100

static jmp_buf jb;
static sigjmp_buf sjb;
static void *table[DEPTH];
static unsigned long allocs, frees, handler_allocs;
static volatile int mode;

static void on_signal(int sig)
{
    if (sig == SIGALRM) {
        char *volatile p = malloc(9999);
        if (!p)
            abort();
        p[0] = 1;
        free(p);
        handler_allocs++;
    }
    siglongjmp(sjb, 1);
}

__attribute__((noinline)) static void jump_down(int depth)
{
    char *p = malloc(8888);
    if (!p)
        abort();
    p[0] = (char)depth;
    table[depth - 1] = p;
    allocs++;
    if (depth < DEPTH) {
        jump_down(depth + 1);
        return;
    }
    if (mode == 0)
        longjmp(jb, 1);
    raise(mode == 1 ? SIGUSR1 : SIGALRM);
    /* not reached: the handler jumps */
}

static void free_table(void)
{
    for (int i = 0; i < DEPTH; i++) {
        free(table[i]);
        table[i] = NULL;
        frees++;
    }
}

int main(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGALRM, &sa, NULL);
    static int r, m; /* static: live across the jumps */
    for (r = 0; r < ROUNDS; r++) {
        mode = 0;
        if (!setjmp(jb))
            jump_down(1);
        free_table();
    }
    for (m = 1; m <= 2; m++)
        for (r = 0; r < ROUNDS; r++) {
            mode = m;
            if (!sigsetjmp(sjb, 1))
                jump_down(1);
            free_table();
        }
    printf("longjmp allocs=%lu frees=%lu handler=%lu\n", allocs, frees, handler_allocs);
    return 0;
}
