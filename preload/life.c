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
 * unshare and setns of the namespaces that want a single thread: the writer
 * steps aside for the call (gs_alone_begin).
 *
 * fork: the child writes its own trace (pattern expanded with its pid). It
 * starts with the parent's module map, stack tree and every block live at the
 * fork (ALLOC_EX, fn GS_FN_INHERITED), so the child's trace stands alone.
 *
 * The exit summary (GCSPY_SUMMARY): by default only the first traced
 * process of a tree prints it, so a child whose stderr a test wants empty
 * stays silent. A forked child is never the first; a new image (the
 * program started, or exec'd) is the first unless its parent has the shim
 * mapped (/proc/PPID/maps names a libgcspy.so), read once at start. Nothing
 * is put in the environment for children to find: the program would see
 * it. And the summary goes to descriptor 2 only while it is the file it
 * was when the image started: a program that closed its stderr and opened
 * a data file there must not find the summary appended to its data.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "elfsym.h"
#include "emit.h"
#include "life.h"
#include "mem.h"
#include "modules.h"
#include "options.h"
#include "pyframes.h"
#include "python.h"
#include "rank.h"
#include "scan_trigger.h"
#include "stack.h"
#include "threads.h"
#include "torch.h"
#include "libunwind_dl.h"

static uint64_t wall0_ns;
static int started;
static char **saved_envp;
static void *libc_exit; /* libc's exit(), found at start */

__thread struct gs_entry_regs gs_exit_from;

/* ---- process start ---- */

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
    gs_rank_detect(saved_envp, exe, cmdline, (size_t)n);
    if (gs_rank.launcher)
        flags |= GS_PROC_F_LAUNCHER;
    struct gs_process_start ps = {
        .pid = (uint64_t)getpid(),
        .ppid = (uint64_t)getppid(),
        .wall0_ns = wall0_ns,
        .exe = exe,
        .cmdline = cmdline,
        .cmdline_len = (size_t)n,
        .node = u.nodename,
        .rank = gs_rank.rank1,
        .local_rank = gs_rank.local_rank1,
        .world_size = gs_rank.world_size1,
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
    atomic_store_explicit(&gs_time_floor, 0, memory_order_relaxed);
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
static void on_orphaned(int status);

/* An allocator preloaded before libgcspy.so (jemalloc, tcmalloc, LSan or
 * ASan first in LD_PRELOAD) defines malloc ahead of ours: the program's
 * calls never reach gcspy, and the trace would say 0 allocations as if that
 * were the truth. Say so in one line. The program's calls bind to the first
 * module in load order that defines malloc (dlsym(RTLD_DEFAULT) is no
 * answer: in an executable that takes malloc's address it returns the
 * executable's own PLT entry); gs_elf_find names the first one other than
 * libgcspy, which wins when it comes before libgcspy. */
struct load_order {
    uintptr_t addr[2];
    int index[2], n;
};

static int order_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct load_order *o = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        for (int k = 0; k < 2; k++)
            if (o->index[k] < 0 && o->addr[k] >= lo && o->addr[k] < hi)
                o->index[k] = o->n;
    }
    o->n++;
    return 0;
}

static void check_malloc_is_ours(void)
{
    void *other = gs_elf_find("malloc");
    if (!other)
        return;
    struct load_order o = {{(uintptr_t)other, (uintptr_t)check_malloc_is_ours}, {-1, -1}, 0};
    dl_iterate_phdr(order_cb, &o);
    if (o.index[0] < 0 || o.index[1] < 0 || o.index[0] > o.index[1])
        return;
    Dl_info theirs;
    if (!dladdr(other, &theirs))
        theirs.dli_fname = NULL;
    gs_log("malloc is %s's, not gcspy's (it was loaded before libgcspy.so): no allocation "
           "reaches gcspy; put libgcspy.so first in LD_PRELOAD",
           theirs.dli_fname && theirs.dli_fname[0] ? theirs.dli_fname : "the program");
}

/* ---- who prints the exit summary, and where ---- */

static int summary_on;          /* this process prints its summary */

/* Whether the parent runs the shim too: its maps name a libgcspy.so. An
 * unreadable file (a parent of another user, gone already) says no. */
static int parent_traced(void)
{
    static const char lib[] = "/libgcspy.so\n";
    const size_t nl = sizeof lib - 1;
    char path[64], buf[4096 + sizeof lib];
    gs_fmt(path, sizeof path, "/proc/%d/maps", (int)getppid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t keep = 0;
    int found = 0;
    for (;;) {
        ssize_t n = read(fd, buf + keep, 4096);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t len = keep + (size_t)n;
        if (memmem(buf, len, lib, nl)) {
            found = 1;
            break;
        }
        keep = len < nl - 1 ? len : nl - 1; /* a name across two reads */
        memmove(buf, buf + len - keep, keep);
    }
    close(fd);
    return found;
}

/* At the start of an image (forked 0) or in a forked child (1). */
static void summary_init(int forked)
{
    if (forked) {
        summary_on = gs_opt.summary == GS_SUMMARY_ALL;
        return;
    }
    summary_on = gs_opt.summary == GS_SUMMARY_ALL ||
                 (gs_opt.summary == GS_SUMMARY_FIRST && !gs_opt.quiet && !parent_traced());
}
/* glibc's own pthread_join, past any interposer. LeakSanitizer preloaded
 * after gcspy interposes pthread_join and looks the thread up by its
 * pthread_t in a registry that a fork does not clean: in a forked child the
 * parent's writer is still registered as running, and the child's writer,
 * whose descriptor reuses the same memory (glibc reclaims the parent's
 * stacks in the child), has the same pthread_t, so the join waited for the
 * parent's thread for ever (every forked child of a bash under
 * LD_PRELOAD=libgcspy.so:liblsan.so.0 hung in its exit). Joining is
 * glibc's business only; the interposer still sees the thread start and
 * end. NULL when libc cannot be found by handle (the writer keeps the
 * global pthread_join). */
static int (*libc_pthread_join(void))(pthread_t, void **)
{
    void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void *fn = h ? dlsym(h, "pthread_join") : NULL;
    if (h)
        dlclose(h);
    return (int (*)(pthread_t, void **))fn;
}


int gs_core_start(void)
{
    if (started || !gs_tracing())
        return -1;
    started = 1;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    gs_writer_set_stop_record(gs_emit_stopped);
    gs_writer_set_join(libc_pthread_join());
    gs_unwind_load(0); /* here: the loader may be re-entered from a constructor */
    gs_daemon_init();
    gs_daemon_set_orphaned(on_orphaned);
    int rc = gs_writer_open();
    if (rc == 0)
        rc = gs_writer_start();
    static int registered; /* a forked child inherits the registrations */
    if (rc == 0 && !registered) {
        registered = 1;
        summary_init(0);
        check_malloc_is_ours();
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        on_exit(on_exit_cb, NULL);
        libc_exit = gs_elf_find("exit");
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

/* When main returns, libc's frame that called it calls exit() with a direct
 * call (E8 rel32, glibc's __libc_start_call_main), and no stub saw it: the
 * program's stack ends just above that call's return address, the first
 * slot above this frame that holds an address right after a call aimed at
 * libc's exit. Looked for in the 64 KiB above (exit's and the handlers'
 * frames are a few hundred bytes), read with process_vm_readv (the stack
 * may end sooner; code bytes are checked the same way). 0: not found (a
 * libc that gets there otherwise); the scan then starts from gcspy's frame. */
static uintptr_t exit_caller_sp(uintptr_t from)
{
    uintptr_t buf[512];
    pid_t pid = getpid();
    if (!libc_exit)
        return 0;
    from &= ~(uintptr_t)7;
    for (uintptr_t a = from; a < from + (64u << 10); a += sizeof buf) {
        struct iovec l = {buf, sizeof buf}, r = {(void *)a, sizeof buf};
        ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got <= 0)
            return 0;
        for (size_t i = 0; i < (size_t)got / sizeof buf[0]; i++) {
            int64_t d = (int64_t)((uintptr_t)libc_exit - buf[i]);
            if (d < INT32_MIN || d > INT32_MAX)
                continue;
            uint8_t code[5];
            struct iovec l2 = {code, sizeof code}, r2 = {(void *)(buf[i] - 5), sizeof code};
            int32_t rel;
            if (process_vm_readv(pid, &l2, 1, &r2, 1, 0) != (ssize_t)sizeof code)
                continue;
            memcpy(&rel, code + 1, sizeof rel);
            if (code[0] == 0xe8 && rel == (int32_t)d)
                return a + i * sizeof buf[0] + sizeof buf[0];
        }
    }
    return 0;
}

void gs_core_exit(int status, int scan)
{
    if (getpid() != gs_pid) {
        /* A vfork child shares our memory, this thread's TLS included: the
         * exit stub it went through noted its stack in the parent's
         * gs_exit_from, which must not outlive it. */
        memset(&gs_exit_from, 0, sizeof gs_exit_from);
        return;
    }
    if (!gs_tracing()) {
        gs_writer_end_if_stopped(); /* a failed trace still ends with STOPPED */
        return;
    }
    gs_tls.in_hook = 1;
    if (scan && gs_opt.scan_at_exit) {
        /* unless Python's atexit ran it already */
        const struct gs_entry_regs *f = &gs_exit_from;
        if (f->sp)
            gs_scan_at_exit(f->sp, f->regs, sizeof f->regs / sizeof f->regs[0]);
        else
            gs_scan_at_exit(exit_caller_sp((uintptr_t)__builtin_frame_address(0)), NULL, 0);
    }
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
    /* gs_log writes nothing when descriptor 2 is no longer the stderr the
     * image started with (mem.c): the summary is never a data file's */
    if (!ok || !summary_on)
        return; /* a write failure has had its one line on stderr */
    gs_log("pid %d: %llu allocations (%s), %llu blocks (%s) not freed at exit", (int)gs_pid,
           (unsigned long long)allocs, h1, (unsigned long long)live_blocks, h2);
    if (gs_writer_path()[0])
        gs_log("trace: %s  (report: gcspy report %s)", gs_writer_path(), gs_writer_path());
}

/* No program thread is left (daemon.c's tick saw it): main ended with
 * pthread_exit() or a raw exit system call, and any workers have ended.
 * Without gcspy the process would have ended with its last thread; it ends
 * now with the writer, which runs this. The trace is ended as exit would,
 * exit scan included: the ended main thread, a zombie in the thread list,
 * is no thread to stop (stop.c), and no program stack is left to be a root
 * (the writer's own is none). Then the writer ends: its return lets glibc,
 * counting it as the last thread, call exit(0) after main's pthread_exit
 * (the program's exit handlers run, as they would have); after a raw exit
 * the process's status is that of its last thread to end, so the main
 * thread's nonzero status is passed on by ending this thread with it. */
static void on_orphaned(int status)
{
    gs_tls.in_hook = 1;
    if (gs_opt.scan_at_exit)
        gs_scan_at_exit_gcspy();
    gs_core_exit(status, 0);
    if (status)
        syscall(SYS_exit, status);
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

/* ---- calls that need a single-threaded process ---- */

/* unshare(CLONE_NEWUSER), setns into a user, mount or time namespace: the
 * kernel refuses them (EINVAL) in a process with more than one thread, or
 * whose threads share a file-system context, and gcspy's writer thread
 * makes every traced process one. For the call's length the writer steps
 * aside: it is stopped and joined (the file stays open; events wait in
 * their buffers), and started again after the call, whatever its outcome.
 * Returns whether it was parked. */
int gs_alone_begin(void)
{
    if (!started || !gs_tracing() || getpid() != gs_pid)
        return 0;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    int parked = gs_writer_park() == 0;
    gs_restore(saved);
    return parked;
}

void gs_alone_end(int parked)
{
    if (!parked)
        return;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    if (gs_tracing())
        gs_writer_start();
    gs_restore(saved);
}

/* ---- fork ---- */

/* A fork from a signal handler that interrupted gcspy in this very thread
 * (its recursion flag set: a free holding a shard lock, say) cannot take the
 * locks below, one of which that interrupted frame may hold: the handlers
 * then take nothing, and the child does not trace (it says so, once). What
 * each handler did is per thread (a fork is per thread): fork_saved is the
 * recursion flag the fork found, fork_locked whether the locks were taken. */
static __thread int fork_saved __attribute__((tls_model("initial-exec")));
static __thread int fork_locked __attribute__((tls_model("initial-exec")));

/* The lock order of the whole shim, taken in full so that the child finds
 * no lock held by a thread it does not have: writer mutex, stack, meta,
 * shards, threads, buffer pool. */
static void fork_prepare(void)
{
    fork_saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    fork_locked = !fork_saved && gs_tracing();
    if (!fork_locked)
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
    if (fork_locked) {
        gs_writer_atfork_unlock(1);
        gs_threads_unlock();
        for (int i = 0; i < GS_SHARDS; i++)
            gs_spin_unlock(&gs_shards[i].s.lock);
        gs_spin_unlock(&gs_meta.lock);
        gs_stack_unlock();
        gs_writer_atfork_unlock(0);
    }
    gs_tls.in_hook = fork_saved; /* the interrupted hook, if any, goes on */
}

/* The child of a fork that interrupted gcspy: it never traces. Every gcspy
 * lock is let go (the interrupted frame, when the handler returns, finds
 * tracing off under whatever lock it takes and records nothing; no other
 * thread exists to contend), and the parent's file is closed. */
void gs_fork_child_untraced(void)
{
    atomic_store(&gs_state, GS_STOPPED);
    for (int i = 0; i < GS_SHARDS; i++)
        atomic_store(&gs_shards[i].s.lock, 0);
    gs_stack_unlock();
    gs_threads_atfork_child();
    gs_writer_atfork_child();
    gs_triggers_atfork_child();
    gs_log("pid %d: forked by a signal handler that interrupted gcspy; this child is not traced",
           (int)getpid());
}

static void fork_child(void)
{
    if (!fork_locked) {
        if (fork_saved && gs_tracing())
            gs_fork_child_untraced();
        gs_tls.in_hook = fork_saved;
        return;
    }
    /* Only this thread exists now: every lock the prepare handler took is
     * ours; the other threads' structs are dead. */
    for (int i = 0; i < GS_SHARDS; i++)
        atomic_store(&gs_shards[i].s.lock, 0);
    gs_stack_unlock();
    gs_threads_atfork_child();
    gs_writer_atfork_child();
    gs_daemon_atfork_child();
    gs_pid = getpid();
    set_clock();
    gs_events_atfork_child();
    struct gs_thread *th = gs_tls.th;
    started = 0;
    gs_triggers_atfork_child();
    /* First in the child's trace, before its writer thread runs (it writes
     * SAMPLE records of its own). */
    emit_process_start(GS_PROC_F_FORKED | (getauxval(AT_SECURE) ? GS_PROC_F_SETUID : 0));
    summary_init(1);
    if (gs_core_start() == 0) {
        gs_modules_reemit();
        gs_py_codes_reemit();
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
