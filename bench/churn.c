/*
 * churn: the allocation-churn benchmark of the spec. T threads (default 2)
 * together do P malloc/free pairs (default 10 million) over a live set of L
 * objects (default 100,000, split evenly between the threads), every malloc
 * about 20 calls deep, sizes 16 B to 4 KiB from a fixed mixed distribution.
 *
 * Each thread owns a ring of L/T objects. Slot i holds an object whose `next`
 * points at the object of slot i+1, so the live set is a linked cycle a leak
 * scanner has to chase (and the slot array keeps every object reachable from
 * the thread's heap root). One iteration picks a pseudo-random slot, frees its
 * object, allocates a replacement and relinks its predecessor.
 *
 * Everything is deterministic: each thread's random sequence depends only on
 * its index, and the checksum mixes only values the program wrote itself
 * (sizes, stamps), never addresses, so the printed checksum is the same bare
 * and under any tool; the tests compare it. Built with -O2
 * -fno-omit-frame-pointer so frame-pointer unwinders see the whole stack.
 *
 * Usage: churn [--pairs N] [--threads T] [--live L] [--depth D]
 * Prints "checksum <hex>" and "events <n>" (mallocs + frees it performed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct obj {
    struct obj *next;
    uint32_t size;
    uint32_t stamp;
    unsigned char payload[];
};

struct worker {
    pthread_t tid;
    unsigned index;
    uint64_t pairs;
    size_t live;
    unsigned depth;
    uint64_t checksum;
    uint64_t events;
    int failed;
};

/* Written after every recursive call so the compiler can neither turn the
 * recursion into a loop (no tail call) nor fold the frames away. Thread-local
 * so the two threads do not fight over one cache line. */
static __thread volatile unsigned sink;

static uint64_t next_rand(uint64_t *s)
{
    /* xorshift64*: cheap, good enough, and identical on every run. */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Mixed sizes: 60 % small (16..128), 30 % medium (129..1024), 10 % large
 * (1025..4096), the rough shape of interpreter and tensor-metadata churn. */
static size_t pick_size(uint64_t *s)
{
    uint64_t r = next_rand(s);
    unsigned bucket = (unsigned)(r % 10);
    uint64_t v = r >> 8;
    if (bucket < 6)
        return 16 + (size_t)(v % 113);
    if (bucket < 9)
        return 129 + (size_t)(v % 896);
    return 1025 + (size_t)(v % 3072);
}

__attribute__((noinline)) static struct obj *deep_alloc(unsigned depth, size_t size)
{
    struct obj *o;
    if (depth > 1)
        o = deep_alloc(depth - 1, size);
    else
        o = malloc(size);
    sink += depth;
    return o;
}

static struct obj *make_obj(struct worker *w, uint64_t *rng, uint32_t stamp)
{
    size_t size = pick_size(rng);
    /* A few distinct call paths (depth D-2 .. D+1) so stacks are not all one. */
    unsigned depth = w->depth - 2 + (unsigned)(size % 4);
    struct obj *o = deep_alloc(depth, size);
    if (!o)
        return NULL;
    o->next = NULL;
    o->size = (uint32_t)size;
    o->stamp = stamp;
    /* Touch the payload ends so the block's pages are really used (a 16-byte
     * block is all header). */
    if (size > sizeof *o) {
        o->payload[0] = (unsigned char)stamp;
        o->payload[size - sizeof *o - 1] = (unsigned char)(stamp >> 8);
    }
    w->events++;
    return o;
}

static void retire(struct worker *w, struct obj *o)
{
    uint64_t v = o->size + ((uint64_t)o->stamp << 16);
    if (o->size > sizeof *o)
        v += o->payload[0] + o->payload[o->size - sizeof *o - 1];
    w->checksum = (w->checksum ^ v) * 0x100000001B3ull;
    free(o);
    w->events++;
}

static void *run_worker(void *arg)
{
    struct worker *w = arg;
    uint64_t rng = 0x9E3779B97F4A7C15ull * (w->index + 1);
    struct obj **ring = calloc(w->live, sizeof *ring);
    if (!ring) {
        w->failed = 1;
        return NULL;
    }
    uint32_t stamp = 0;
    for (size_t i = 0; i < w->live; i++) {
        ring[i] = make_obj(w, &rng, stamp++);
        if (!ring[i]) {
            w->failed = 1;
            goto out;
        }
        if (i > 0)
            ring[i - 1]->next = ring[i];
    }
    ring[w->live - 1]->next = ring[0];

    for (uint64_t n = 0; n < w->pairs; n++) {
        size_t i = (size_t)(next_rand(&rng) % w->live);
        size_t prev = i == 0 ? w->live - 1 : i - 1;
        struct obj *old = ring[i];
        struct obj *o = make_obj(w, &rng, stamp++);
        if (!o) {
            w->failed = 1;
            goto out;
        }
        /* With a single slot the object links to itself. */
        o->next = w->live == 1 ? o : old->next;
        if (w->live > 1)
            ring[prev]->next = o;
        ring[i] = o;
        retire(w, old);
    }
out:
    for (size_t i = 0; i < w->live; i++)
        if (ring[i])
            retire(w, ring[i]);
    free(ring);
    return NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: churn [--pairs N] [--threads T] [--live L] [--depth D]\n"
               "  --pairs N    malloc/free pairs in total (default 10000000)\n"
               "  --threads T  worker threads (default 2)\n"
               "  --live L     live objects in total (default 100000)\n"
               "  --depth D    call depth of each malloc, 3..200 (default 20)\n");
}

int main(int argc, char **argv)
{
    uint64_t pairs = 10000000, threads = 2, live = 100000, depth = 20;
    for (int i = 1; i < argc; i++) {
        uint64_t *dst = NULL;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--pairs")) {
            dst = &pairs;
        } else if (!strcmp(argv[i], "--threads")) {
            dst = &threads;
        } else if (!strcmp(argv[i], "--live")) {
            dst = &live;
        } else if (!strcmp(argv[i], "--depth")) {
            dst = &depth;
        } else {
            fprintf(stderr, "churn: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (i + 1 >= argc || parse_u64(argv[i + 1], dst) != 0) {
            fprintf(stderr, "churn: %s needs a non-negative integer\n", argv[i]);
            return 2;
        }
        i++;
    }
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "churn: --threads must be 1..256\n");
        return 2;
    }
    if (live < threads) {
        fprintf(stderr, "churn: --live must be at least --threads\n");
        return 2;
    }
    if (depth < 3 || depth > 200) {
        fprintf(stderr, "churn: --depth must be 3..200\n");
        return 2;
    }

    struct worker *ws = calloc(threads, sizeof *ws);
    if (!ws) {
        fprintf(stderr, "churn: out of memory\n");
        return 1;
    }
    for (unsigned t = 0; t < threads; t++) {
        ws[t].index = t;
        /* The remainder goes to the first threads, so totals are exact. */
        ws[t].pairs = pairs / threads + (t < pairs % threads);
        ws[t].live = live / threads + (t < live % threads);
        ws[t].depth = (unsigned)depth;
    }
    unsigned started = 0;
    int rc = 0;
    for (; started < threads; started++) {
        int e = pthread_create(&ws[started].tid, NULL, run_worker, &ws[started]);
        if (e) {
            fprintf(stderr, "churn: pthread_create: %s\n", strerror(e));
            rc = 1;
            break;
        }
    }
    uint64_t checksum = 0xCBF29CE484222325ull, events = 0;
    for (unsigned t = 0; t < started; t++) {
        int e = pthread_join(ws[t].tid, NULL);
        if (e) {
            fprintf(stderr, "churn: pthread_join: %s\n", strerror(e));
            rc = 1;
            continue;
        }
        if (ws[t].failed) {
            fprintf(stderr, "churn: thread %u: out of memory\n", t);
            rc = 1;
        }
        checksum = (checksum ^ ws[t].checksum) * 0x100000001B3ull;
        events += ws[t].events;
    }
    free(ws);
    if (rc == 0) {
        printf("checksum %016" PRIx64 "\n", checksum);
        printf("events %" PRIu64 "\n", events);
    }
    return rc;
}
