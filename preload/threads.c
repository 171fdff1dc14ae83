/*
 * The per-thread registry: a struct gs_thread per program thread, made at
 * the thread's first event (THREAD_START), given back to the list when the
 * thread's TSD destructor runs (THREAD_EXIT) and reused by a later thread.
 *
 * The event counts live in the structs (core.c adds to them under the shard
 * lock, without atomics); a dead thread's counts move into the dead_*
 * totals under the registry lock, so TRACE_END's totals (gs_threads_totals)
 * count every recorded event whatever threads came and went.
 *
 * Registration takes no lock of libc's: it runs at the thread's first
 * event, which may come from inside a libc function holding one.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emit.h"
#include "mem.h"
#include "threads.h"

extern void *__libc_stack_end;

static pthread_key_t thread_key;
static int thread_key_ok;
static atomic_uint next_thread = 1;
static atomic_int threads_lock;
static struct gs_thread *threads;          /* every thread struct, live or dead */
static uint64_t dead_allocs, dead_frees, dead_bytes;

/* The mapping that holds addr, from /proc/self/maps read in 4 KiB pieces
 * with raw system calls (no stdio, no allocation, no lock). *stack: the
 * mapping looks like a stack glibc mapped: anonymous (no file, no "[heap]"),
 * right above an inaccessible guard mapping (so the kernel did not merge it
 * with a neighbour, and its start is the stack's bottom). 0, or -1. */
static int map_around(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, int *stack)
{
    /* thread-self: /proc/self/maps is empty once the main thread ended */
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    size_t have = 0;
    int rc = -1;
    uintptr_t prev_hi = 0;
    int prev_guard = 0;
    for (;;) {
        long n = syscall(SYS_read, fd, buf + have, sizeof buf - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        char *line = buf, *end = buf + have, *nl;
        while (rc && (nl = memchr(line, '\n', (size_t)(end - line)))) {
            uintptr_t l = 0, h = 0;
            char *c = line;
            for (; c < nl && *c != '-'; c++)
                l = l * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : (*c | 32) - 'a' + 10);
            for (c++; c < nl && *c != ' '; c++)
                h = h * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : (*c | 32) - 'a' + 10);
            int guard = c + 4 < nl && c[1] == '-' && c[2] == '-' && c[3] == '-';
            if (l <= addr && addr < h) {
                /* perms, offset, dev, inode; then the name, if any */
                for (int f = 0; f < 4 && c < nl; f++) {
                    while (c < nl && *c == ' ')
                        c++;
                    while (c < nl && *c != ' ')
                        c++;
                }
                while (c < nl && *c == ' ')
                    c++;
                *lo = l;
                *hi = h;
                *stack = c == nl && prev_guard && prev_hi == l;
                rc = 0;
            }
            prev_hi = h;
            prev_guard = guard;
            line = nl + 1;
        }
        if (!rc)
            break;
        have = (size_t)(end - line);
        memmove(buf, line, have);
        if (have == sizeof buf)
            have = 0; /* a line longer than the buffer (a long path): skipped */
    }
    syscall(SYS_close, fd);
    return rc;
}

/* The thread's stack bounds: they bound the frame-pointer walk (stack_hi)
 * and gs_scrub_stack (stack_lo). pthread_getattr_np is not used: glibc
 * holds the thread's own lock while it calls realloc, so a thread whose
 * first allocation happens inside it (OpenJDK's do) would wait on itself
 * here. The kernel's map of the mapping holding the current frame gives the
 * same bounds for a stack glibc mapped (the mapping ends where the thread
 * descriptor does, and starts above the guard). Any other stack (one the
 * program provided inside the heap, one with no guard, which the kernel
 * may have merged with the mapping below) gets the mapping's end as its top
 * (it only bounds the frame walk) and, conservatively, the current frame
 * as its bottom (gs_scrub_stack must never write below the stack). */
static void thread_bounds(struct gs_thread *th)
{
    if (th->tid == gs_pid) {
        /* Frames of the main thread lie below __libc_stack_end. */
        th->stack_hi = ((uintptr_t)__libc_stack_end + 4095) & ~(uintptr_t)4095;
        return;
    }
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0), lo, hi;
    int stack;
    if (map_around(sp, &lo, &hi, &stack))
        return;
    th->stack_lo = stack ? lo : sp;
    th->stack_hi = hi;
}

static void thread_exit(void *arg)
{
    struct gs_thread *th = arg;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    if (gs_tracing())
        gs_emit_thread(GS_REC_THREAD_EXIT, th->index, th->tid);
    gs_spin_lock(&threads_lock);
    dead_allocs += th->allocs;
    dead_frees += th->frees;
    dead_bytes += th->bytes;
    th->allocs = th->frees = th->bytes = 0;
    th->dead = 1;
    gs_spin_unlock(&threads_lock);
    gs_tls.th = NULL;
    gs_tls.exited = 1; /* later events of this thread carry thread 0 */
    gs_restore(saved);
}

void gs_threads_init(void)
{
    if (pthread_key_create(&thread_key, thread_exit) == 0)
        thread_key_ok = 1;
}

struct gs_thread *gs_thread_get(void)
{
    if (gs_tls.th || gs_tls.exited)
        return gs_tls.th;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    struct gs_thread *th = NULL;
    gs_spin_lock(&threads_lock);
    /* A dead struct is claimed (cleared, so no longer dead) under the lock:
     * two threads starting at once must not both take it. */
    for (struct gs_thread *t = threads; t; t = t->next)
        if (t->dead) {
            th = t;
            struct gs_thread *next = th->next;
            memset(th, 0, sizeof *th);
            th->next = next;
            break;
        }
    gs_spin_unlock(&threads_lock);
    if (!th) {
        th = gs_pages_alloc(sizeof *th);
        if (!th) {
            gs_restore(saved);
            return NULL;
        }
        gs_spin_lock(&threads_lock);
        th->next = threads;
        threads = th;
        gs_spin_unlock(&threads_lock);
    }
    th->index = atomic_fetch_add(&next_thread, 1);
    th->tid = gs_raw_gettid();
    thread_bounds(th);
    gs_tls.th = th;
    if (thread_key_ok)
        pthread_setspecific(thread_key, th);
    gs_emit_thread(GS_REC_THREAD_START, th->index, th->tid);
    gs_restore(saved);
    return th;
}

void gs_threads_totals(uint64_t *allocs, uint64_t *frees, uint64_t *bytes)
{
    gs_spin_lock(&threads_lock);
    *allocs = dead_allocs;
    *frees = dead_frees;
    *bytes = dead_bytes;
    for (struct gs_thread *t = threads; t; t = t->next) {
        *allocs += t->allocs;
        *frees += t->frees;
        *bytes += t->bytes;
    }
    gs_spin_unlock(&threads_lock);
}

void gs_threads_lock(void) { gs_spin_lock(&threads_lock); }
void gs_threads_unlock(void) { gs_spin_unlock(&threads_lock); }

/* Every lock the prepare handler took is the child's; the other threads'
 * structs are dead. The forking thread keeps its index (its THREAD_START is
 * written again in the child's trace) with its counts from zero. */
void gs_threads_atfork_child(void)
{
    atomic_store(&threads_lock, 0);
    dead_allocs = dead_frees = dead_bytes = 0;
    for (struct gs_thread *t = threads; t; t = t->next)
        if (t != gs_tls.th)
            t->dead = 1;
    struct gs_thread *th = gs_tls.th;
    if (th) {
        th->allocs = th->frees = th->bytes = 0;
        th->tid = gs_raw_gettid();
    }
}
