/*
 * The writer thread's housekeeping, one tick after every wait (writer.c
 * runs it; this file is above the writer and the scanner, so the writer
 * calls none of them by name). In order, each tick:
 *
 *  1. waits while a program thread scans (the writer would map and unmap
 *     memory under the scanner's feet);
 *  2. writes a SAMPLE record every GCSPY_SAMPLE_MS (resident bytes, glibc's
 *     mallinfo2, which holds each malloc arena's lock in turn: a fork that
 *     skips malloc's own fork locking waits for it first, see
 *     gs_daemon_fork_begin);
 *  3. syncs the module map (catches dlclose) and attaches CUPTI once the
 *     CUDA driver shows up in it;
 *  4. runs the steps integrations registered (python.c's);
 *  5. flushes, when the flush interval has passed or full buffers wait;
 *  6. runs a requested or periodic scan (scan_trigger.c);
 *  7. sees whether any program thread is left: a process whose main thread
 *     ended with pthread_exit() or a raw SYS_exit, and whose workers ended
 *     too, ends when its last thread does, and gcspy's writer must not be
 *     that thread (without this check it kept such a process alive for
 *     ever, and unkillable by SIGTERM: the writer blocks every signal).
 * The writer sleeps until the flush interval, or the next periodic scan if
 * sooner (the tick's due time).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupti_load.h"
#include "daemon.h"
#include "emit.h"
#include "mem.h"
#include "modules.h"
#include "scan.h"
#include "scan_trigger.h"

#define GS_MAX_STEPS 4
static void (*steps[GS_MAX_STEPS])(void);
static atomic_int nsteps;
static uint64_t last_sample_ns;
static void (*orphaned)(int status);

void gs_daemon_set_orphaned(void (*fn)(int status))
{
    orphaned = fn;
}

/* Field n (1-based, as proc(5) numbers them) of /proc/self/stat, from the
 * text after the command's closing parenthesis (field 3 onwards). */
static const char *stat_field(const char *after, int n)
{
    const char *p = after;
    for (int f = 3; f < n && *p; f++) {
        p = strchr(p, ' ');
        if (!p)
            return "";
        p++;
    }
    return p;
}

/* -1 while a program thread may be alive; otherwise the status the kernel
 * holds for the process (the leader's exit code, field 52). The leader
 * (the main thread, or the thread that forked) is a zombie once it has
 * ended but stays in num_threads (field 20) until the process ends; every
 * other live thread besides gcspy's own is the program's. */
static int program_gone(void)
{
    char st[1024];
    ssize_t n = gs_read_file("/proc/self/stat", st, sizeof st - 1);
    if (n <= 0)
        return -1;
    st[n] = 0;
    const char *after = strrchr(st, ')');
    if (!after || after[1] != ' ')
        return -1;
    after += 2;
    if (*after != 'Z' && *after != 'X')
        return -1; /* the leader runs */
    long threads = strtol(stat_field(after, 20), NULL, 10);
    if (threads - 1 > gs_own_ntids)
        return -1;
    const char *code = stat_field(after, 52);
    if (*code < '0' || *code > '9')
        return -1; /* kernels before 3.5 say nothing: keep waiting */
    long status = strtol(code, NULL, 10);
    return (int)((status >> 8) & 0xff);
}

int gs_daemon_add_step(void (*step)(void))
{
    int n = atomic_load(&nsteps);
    if (n >= GS_MAX_STEPS)
        return -1;
    steps[n] = step;
    atomic_store_explicit(&nsteps, n + 1, memory_order_release);
    return 0;
}

/* The writer inside mallinfo2 (it holds malloc arena locks in turn), and
 * the forks under way that must not copy such a lock into their child: a
 * fork from a signal handler that interrupted gcspy goes through _Fork
 * (hooks.c), which takes none of malloc's locks, so a child forked while the
 * writer walked an arena found that arena locked for ever (its first
 * malloc, or mallinfo2, waited; rel_sigfork.sh "malloc"). The two sides
 * form Dekker's handshake (sequentially consistent stores, then loads):
 * either the writer sees the fork and skips this sample, or the fork sees
 * the writer and waits for it to leave mallinfo2. */
static atomic_int sampling, forks_waiting;

/* The longest a fork waits for the writer's mallinfo2, in 100 us steps:
 * the walk takes milliseconds even over a heap of 100,000 free chunks, but
 * the writer may itself wait inside it on an arena lock the interrupted
 * frame of the forking thread holds (the real malloc's), which no wait
 * ends; such a child's malloc waits as it did before. */
#define GS_FORK_WAIT_STEPS 2000

void gs_daemon_fork_begin(void)
{
    atomic_fetch_add(&forks_waiting, 1);
    for (int i = 0; atomic_load(&sampling) && i < GS_FORK_WAIT_STEPS; i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL); /* async-signal-safe: we may be in a handler */
    }
}

void gs_daemon_fork_end(void)
{
    atomic_fetch_sub(&forks_waiting, 1);
}

void gs_daemon_atfork_child(void)
{
    atomic_store(&sampling, 0);
    atomic_store(&forks_waiting, 0);
}

static void sample(void)
{
    char statm[128];
    uint64_t rss = 0;
    if (gs_read_file("/proc/thread-self/statm", statm, sizeof statm - 1) > 0) {
        statm[127] = 0;
        const char *p = strchr(statm, ' ');
        for (p = p ? p + 1 : ""; *p >= '0' && *p <= '9'; p++)
            rss = rss * 10 + (uint64_t)(*p - '0');
        rss *= (uint64_t)sysconf(_SC_PAGESIZE);
    }
    atomic_store(&sampling, 1);
    if (atomic_load(&forks_waiting)) {
        atomic_store(&sampling, 0);
        return; /* the next tick samples */
    }
    struct mallinfo2 mi = mallinfo2();
    atomic_store(&sampling, 0);
    struct gs_sample s = {rss, mi.arena, mi.ordblks, mi.hblks, mi.hblkhd, mi.uordblks,
                          mi.fordblks, mi.keepcost};
    gs_emit_sample(&s);
}

static void tick(void)
{
    while (gs_scan_running() && !gs_writer_stopping()) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    uint64_t now = gs_now_fine();
    if (gs_opt.sample_ms && now - last_sample_ns >= gs_opt.sample_ms * 1000000ull) {
        last_sample_ns = now;
        sample();
    }
    gs_modules_sync();
    gs_cupti_maybe_load();
    for (int i = 0, n = atomic_load_explicit(&nsteps, memory_order_acquire); i < n; i++)
        steps[i]();
    gs_writer_flush_due(now);
    gs_scan_tick();
    int status;
    if (orphaned && gs_tracing() && (status = program_gone()) >= 0)
        orphaned(status);
}

void gs_daemon_init(void)
{
    gs_writer_set_tick(tick, gs_scan_next_due_ns);
}
