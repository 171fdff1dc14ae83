/*
 * The process's life: start, exit, exec and fork, the top of the shim below
 * the hooks. This is the one file that knows every layer's start-up and
 * fork handling, and the order they go in; it calls down only.
 *
 * Start: tracking begins at the first hook call that finds the environment
 * (gs_core_early_init: options, table, PROCESS_START, the module map), so
 * blocks allocated by other libraries' constructors are seen; the file, the
 * writer thread and everything that hangs off it wait for our constructor
 * (gs_core_start), which also registers the writer's callbacks (daemon.c's
 * tick, emit.c's STOPPED record), the atfork and on_exit handlers, and the
 * scan triggers and integrations (which register their own callbacks).
 *
 * Exit: the exit scan, then tracing stops, every shard lock is passed once
 * (an event in flight was either recorded and counted, or records nothing),
 * and PROCESS_EXIT with TRACE_END goes last, in a chunk of its own.
 *
 * fork: the child writes its own trace (pattern expanded with its pid). It
 * starts with the parent's module map, stack tree and every block live at the
 * fork (ALLOC_EX, fn GS_FN_INHERITED), so the child's trace stands alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "emit.h"
#include "life.h"
#include "mem.h"
#include "modules.h"
#include "options.h"
#include "python.h"
#include "scan_trigger.h"
#include "stack.h"
#include "threads.h"
#include "torch.h"
#include "unwind.h"

static uint64_t wall0_ns;
static int started;
static char **saved_envp;

/* ---- process start ---- */

static uint64_t env_num1(char **envp, const char *name)
{
    const char *v = gs_env_get(envp, name);
    if (!v || !*v)
        return 0;
    uint64_t x = 0;
    for (; *v >= '0' && *v <= '9'; v++)
        x = x * 10 + (uint64_t)(*v - '0');
    return *v ? 0 : x + 1;
}

static void emit_process_start(uint64_t flags)
{
    static char cmdline[16384];
    static char exe[4096];
    ssize_t n = gs_read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
    if (n < 0)
        n = 0;
    while (n > 0 && cmdline[n - 1] == 0)
        n--; /* keep the separators between arguments, not the last NUL */
    ssize_t e = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[e > 0 ? e : 0] = 0;
    struct utsname u;
    if (uname(&u))
        u.nodename[0] = 0;
    struct gs_process_start ps = {
        .pid = (uint64_t)getpid(),
        .ppid = (uint64_t)getppid(),
        .wall0_ns = wall0_ns,
        .exe = exe,
        .cmdline = cmdline,
        .cmdline_len = (size_t)n,
        .node = u.nodename,
        .rank = env_num1(saved_envp, "RANK"),
        .local_rank = env_num1(saved_envp, "LOCAL_RANK"),
        .world_size = env_num1(saved_envp, "WORLD_SIZE"),
        .flags = flags,
        .unwind = (uint64_t)gs_opt.unwind,
        .depth = gs_opt.depth,
        .page_size = (uint64_t)sysconf(_SC_PAGESIZE),
    };
    gs_emit_process_start(&ps);
}

static void set_clock(void)
{
    gs_t0_ns = gs_mono_ns(CLOCK_MONOTONIC);
    wall0_ns = gs_mono_ns(CLOCK_REALTIME);
}

int gs_core_early_init(char **envp)
{
    static atomic_int once;
    if (atomic_exchange(&once, 1))
        return gs_tracing() ? 0 : -1;
    saved_envp = envp;
    gs_options_load(envp);
    if (gs_opt.disable)
        return -1;
    set_clock();
    gs_pid = getpid();
    if (gs_table_init()) {
        gs_fail("allocating the block table", ENOMEM);
        return -1;
    }
    gs_threads_init();
    /* PROCESS_START is the trace's first record: written before tracing
     * starts, so no other thread's definition (THREAD_START) or event can
     * come first (the meta stream is written ahead of the shards). */
    emit_process_start(getauxval(AT_SECURE) ? GS_PROC_F_SETUID : 0);
    int off = GS_OFF; /* not ON when the record's buffer failed (gs_fail stopped us) */
    if (!atomic_compare_exchange_strong(&gs_state, &off, GS_ON))
        return -1;
    gs_modules_sync();
    return 0;
}

static void on_exit_cb(int status, void *arg)
{
    (void)arg;
    gs_core_exit(status, 1);
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

int gs_core_start(void)
{
    if (started || !gs_tracing())
        return -1;
    started = 1;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    gs_writer_set_stop_record(gs_emit_stopped);
    gs_unwind_load(0); /* here: the loader may be re-entered from a constructor */
    gs_daemon_init();
    int rc = gs_writer_open();
    if (rc == 0)
        rc = gs_writer_start();
    static int registered; /* a forked child inherits the registrations */
    if (rc == 0 && !registered) {
        registered = 1;
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        on_exit(on_exit_cb, NULL);
        if (gs_scan_init())
            gs_log("leak scans are off: no free real-time signal to stop threads with");
        gs_py_init();
        gs_torch_init();
    }
    gs_restore(saved);
    return rc;
}

/* ---- exit ---- */

static void human(char *buf, size_t len, uint64_t b)
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    uint64_t whole = b, frac = 0;
    while (whole >= 1024 && i < 4) {
        frac = (whole % 1024) * 10 / 1024;
        whole /= 1024;
        i++;
    }
    if (i)
        gs_fmt(buf, len, "%llu.%llu %s", (unsigned long long)whole, (unsigned long long)frac, u[i]);
    else
        gs_fmt(buf, len, "%llu B", (unsigned long long)whole);
}

void gs_core_exit(int status, int scan)
{
    if (!gs_tracing() || getpid() != gs_pid)
        return;
    gs_tls.in_hook = 1;
    if (scan && gs_opt.scan_at_exit)
        gs_scan_at_exit(); /* unless Python's atexit ran it already */
    /* Stop recording, then pass every shard lock once: an event in flight
     * either was recorded and counted before, or sees the stop under its
     * lock and records nothing. TRACE_END then describes exactly the
     * records in the trace, whatever other threads still do. */
    atomic_store(&gs_state, GS_STOPPED);
    gs_writer_release_waiters();
    for (int i = 0; i < GS_SHARDS; i++) {
        gs_spin_lock(&gs_shards[i].s.lock);
        gs_spin_unlock(&gs_shards[i].s.lock);
    }
    uint64_t allocs, frees, bytes, live_blocks, live_bytes;
    gs_totals(&allocs, &frees, &bytes, &live_blocks, &live_bytes);
    uint8_t tail[256];
    uint8_t *e = gs_emit_exit_tail(tail, gs_now_fine(), status, allocs, frees, bytes, live_blocks,
                                   live_bytes);
    int ok = gs_writer_close(tail, (size_t)(e - tail)) == 0;
    char h1[32], h2[32];
    human(h1, sizeof h1, bytes);
    human(h2, sizeof h2, live_bytes);
    if (!ok)
        return; /* the write failure has had its one line on stderr */
    gs_log("pid %d: %llu allocations (%s), %llu blocks (%s) not freed at exit", (int)gs_pid,
           (unsigned long long)allocs, h1, (unsigned long long)live_blocks, h2);
    if (gs_writer_path()[0])
        gs_log("trace: %s  (report: gcspy report %s)", gs_writer_path(), gs_writer_path());
}

/* ---- exec ---- */

void gs_on_exec(const char *path)
{
    if (!gs_tracing() || getpid() != gs_pid || !started)
        return; /* a vfork child shares our memory: leave it alone */
    size_t n = path ? strnlen(path, 4096) : 0;
    gs_emit_exec(path, n);
    gs_writer_flush();
}

/* ---- fork ---- */

/* The lock order of the whole shim, taken in full so that the child finds
 * no lock held by a thread it does not have: writer mutex, stack, meta,
 * shards, threads, buffer pool. */
static void fork_prepare(void)
{
    gs_tls.in_hook = 1;
    if (!gs_tracing())
        return;
    gs_writer_atfork_lock(0);
    gs_stack_lock();
    gs_spin_lock(&gs_meta.lock);
    for (int i = 0; i < GS_SHARDS; i++)
        gs_spin_lock(&gs_shards[i].s.lock);
    gs_threads_lock();
    gs_writer_atfork_lock(1);
}

static void fork_parent(void)
{
    if (gs_tracing()) {
        gs_writer_atfork_unlock(1);
        gs_threads_unlock();
        for (int i = 0; i < GS_SHARDS; i++)
            gs_spin_unlock(&gs_shards[i].s.lock);
        gs_spin_unlock(&gs_meta.lock);
        gs_stack_unlock();
        gs_writer_atfork_unlock(0);
    }
    gs_tls.in_hook = 0;
}

static void fork_child(void)
{
    if (!gs_tracing()) {
        gs_tls.in_hook = 0;
        return;
    }
    /* Only this thread exists now: every lock the prepare handler took is
     * ours; the other threads' structs are dead. */
    for (int i = 0; i < GS_SHARDS; i++)
        atomic_store(&gs_shards[i].s.lock, 0);
    gs_stack_unlock();
    gs_threads_atfork_child();
    gs_writer_atfork_child();
    gs_pid = getpid();
    set_clock();
    gs_events_atfork_child();
    struct gs_thread *th = gs_tls.th;
    started = 0;
    gs_triggers_atfork_child();
    /* First in the child's trace, before its writer thread runs (it writes
     * SAMPLE records of its own). */
    emit_process_start(GS_PROC_F_FORKED | (getauxval(AT_SECURE) ? GS_PROC_F_SETUID : 0));
    if (gs_core_start() == 0) {
        gs_modules_reemit();
        gs_stack_lock();
        gs_spin_lock(&gs_meta.lock);
        gs_stack_reemit();
        gs_spin_unlock(&gs_meta.lock);
        gs_stack_unlock();
        if (th)
            gs_emit_thread(GS_REC_THREAD_START, th->index, th->tid);
        gs_events_reemit();
    }
    gs_tls.in_hook = 0;
}
