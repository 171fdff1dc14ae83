/*
 * Threads created before and after the program's first allocation, threads
 * that exit, and a thread still running at exit. Each thread prints
 * "NAME tid T" (collected and printed by main at the end). Sizes name the
 * thread that allocates them:
 *   early   created first in main, before main allocates; waits until main
 *           has allocated, then 5 x malloc(1001)/free; exits.
 *   idle    never allocates or frees; exits.
 *   late    created after main's allocations; 5 x malloc(1003)/free; exits.
 *   freer   only frees: main's 5 blocks of 1004 bytes; exits.
 *   keyed   allocates a 1005-byte per-thread buffer kept in a pthread key
 *           whose destructor (run at thread exit, after the shim's own,
 *           created earlier) frees it and does a malloc(1006)/free.
 *   short0..short19  created and joined one after another: 1 x malloc(1010)
 *           each, kept (freed by main at the end).
 *   stayer  1 x malloc(1020), then blocks until the process exits.
 *
 * Expected (tests/integration/shim_threads_before_after.sh): a thread_start
 * (with its tid) for every thread that allocated or freed, none for idle;
 * a thread_exit for each of those except stayer; all indices distinct (the
 * short threads reuse dead threads' structs, never their indices); each
 * thread's allocations carry its index, the keyed destructor's 1006 carries
 * 0 (the thread's record has ended); the trace consistent, TRACE_END
 * counting the destructor's events too. Exit status 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NSHORT 20

static char names[32][16];
static int tids[32];
static int nthreads;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t main_allocated;
static pthread_key_t key;
static void *main_blocks[5];
static void *short_blocks[NSHORT];

static void note(const char *name)
{
    pthread_mutex_lock(&mu);
    snprintf(names[nthreads], sizeof names[0], "%s", name);
    tids[nthreads++] = gettid();
    pthread_mutex_unlock(&mu);
}

static void churn(size_t size, int n)
{
    for (int i = 0; i < n; i++) {
        char *volatile p = malloc(size);
        p[0] = 1;
        free(p);
    }
}

static void *early(void *a)
{
    (void)a;
    note("early");
    pthread_barrier_wait(&main_allocated);
    churn(1001, 5);
    return NULL;
}

static void *idle(void *a)
{
    (void)a;
    note("idle");
    return NULL;
}

static void *late(void *a)
{
    (void)a;
    note("late");
    churn(1003, 5);
    return NULL;
}

static void *freer(void *a)
{
    (void)a;
    note("freer");
    for (int i = 0; i < 5; i++)
        free(main_blocks[i]);
    return NULL;
}

static void key_destructor(void *p)
{
    free(p);
    churn(1006, 1);
}

static void *keyed(void *a)
{
    (void)a;
    note("keyed");
    pthread_setspecific(key, malloc(1005));
    return NULL;
}

static void *short_one(void *a)
{
    char name[16];
    snprintf(name, sizeof name, "short%ld", (long)a);
    note(name);
    short_blocks[(long)a] = malloc(1010);
    return NULL;
}

static void *stayer(void *a)
{
    (void)a;
    note("stayer");
    void *volatile p = malloc(1020);
    (void)p;
    for (;;)
        pause();
    return NULL;
}

static void run(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) || pthread_join(t, NULL))
        exit(2);
}

int main(void)
{
    pthread_barrier_init(&main_allocated, NULL, 2);
    pthread_t e;
    if (pthread_create(&e, NULL, early, NULL))
        return 2;
    run(idle, NULL);
    for (int i = 0; i < 5; i++)
        main_blocks[i] = malloc(1004);
    pthread_barrier_wait(&main_allocated);
    pthread_join(e, NULL);
    run(late, NULL);
    run(freer, NULL);
    if (pthread_key_create(&key, key_destructor))
        return 2;
    run(keyed, NULL);
    for (long i = 0; i < NSHORT; i++)
        run(short_one, (void *)i);
    pthread_t s;
    if (pthread_create(&s, NULL, stayer, NULL))
        return 2;
    while (1) { /* until stayer has allocated */
        pthread_mutex_lock(&mu);
        int seen = nthreads == 6 + NSHORT;
        pthread_mutex_unlock(&mu);
        if (seen)
            break;
        usleep(1000);
    }
    usleep(10000);
    for (int i = 0; i < NSHORT; i++)
        free(short_blocks[i]);
    char out[4096];
    size_t n = 0;
    for (int i = 0; i < nthreads; i++)
        n += (size_t)snprintf(out + n, sizeof out - n, "%s tid %d\n", names[i], tids[i]);
    if (write(1, out, n) != (ssize_t)n)
        return 3;
    return 0;
}
