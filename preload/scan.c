/*
 * The leak scan's phases: conservative mark-sweep over the live-block
 * table, classified like valgrind memcheck.
 *
 *  1. Allocate, with the world running, everything the stopped section
 *     needs where its size is known (mark stack, interior list, results).
 *  2. Stop the world (stop.c). In fork mode, fork right away (through a
 *     helper, so that the scanning process is not the program's child and
 *     none of its waits sees it: start_snapshot), restart the world, and do
 *     the rest in that process, which writes its results to a shared
 *     mapping and exits.
 *  3. The marker's pass over the table, the roots (roots.c), marking
 *     (mark.c) and classification (classify.c).
 *  4. Restart the world, and only then write SCAN_BEGIN, one SCAN_BLOCK per
 *     unreachable block (and per reachable one in exit scans, as memcheck's
 *     still-reachable), SCAN_END with the pause's timings.
 *
 * Everything between stop and restart uses only gcspy's own memory and raw
 * syscalls. One scan at a time: a periodic one that finds another running
 * is skipped, the exit scan waits for it.
 *
 * PyTorch-aware mode hands a scan two things from above without this file
 * knowing torch: the stack-bits provider registered with
 * gs_scan_set_stack_bits (weak and data stacks), asked before each scan,
 * and the caching allocator's view a scan from a program thread may be
 * given (gs_scan_program).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_owned.h"
#include "cupti_load.h"
#include "emit.h"
#include "scan.h"

int gs_exit_scan_done;
uint64_t gs_last_scan_ns;

static atomic_int scanning;
static uint64_t scan_seq;
static void (*stack_bits)(const uint8_t **bits, uint32_t *nbits);
static struct gs_cuda_owned cuda_owned; /* for the scan in progress (scanning) */
static atomic_int api_lock;
static struct gs_scan_counts api_last; /* the last API scan's (api_lock) */

/* Results and counters, as the fork mode's child leaves them for the parent. */
struct shared_out {
    unsigned state; /* fork mode: 0 running, 1 done, 2 failed (a futex word) */
    unsigned pad;
    uint64_t nres, bytes_scanned, visited, live_blocks, live_bytes, t_marked, unreadable;
    uint64_t cls_blocks[GS_CLASS__N], cls_bytes[GS_CLASS__N];
    uint64_t new_blocks[GS_CLASS__N], new_bytes[GS_CLASS__N];
    struct gs_scan_result res[];
};

/* Scan state lives in gcspy's bss, not on the stack: the scanning thread's
 * own frames must hold no copy of a block address (s.lo is one). */
static struct gs_scan s;
static struct gs_roots roots;
/* The scanning thread's registers where the program left its stack (an
 * exit scan's; set for one scan by gs_scan_from). */
static const uintptr_t *self_regs;
static size_t nself_regs;

/* The heap ranges that are not roots (the marker's prepass builds them). */
struct heap {
    struct gs_range *v;
    size_t n, cap;
};

void gs_scan_set_stack_bits(void (*provider)(const uint8_t **bits, uint32_t *nbits))
{
    stack_bits = provider;
}

static void free_out(struct shared_out *out, size_t bytes, int fork_mode)
{
    if (fork_mode)
        munmap(out, bytes);
    else
        gs_pages_free(out, bytes);
}

/* 1. Everything the stopped section needs is allocated before the stop
 * where its size is known; growth inside uses mmap only. Returns the
 * results' mapping (shared with the child in fork mode), or NULL. */
static struct shared_out *prepare(int fork_mode, size_t *out_bytes)
{
    uint64_t total = 0;
    for (int i = 0; i < GS_SHARDS; i++)
        total += gs_shards[i].count;
    s.stack_cap = total + 1024;
    s.stack = gs_pages_alloc(s.stack_cap * sizeof *s.stack);
    s.interior_cap = 1 << 20;
    s.interior = gs_pages_alloc(s.interior_cap * sizeof *s.interior);
    uint64_t npool = s.pool ? s.pool->nblk : 0;
    *out_bytes = sizeof(struct shared_out) + (total + npool + 4096) * sizeof(struct gs_scan_result);
    struct shared_out *out = NULL;
    if (fork_mode) {
        void *m = mmap(NULL, *out_bytes, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        out = m == MAP_FAILED ? NULL : m;
    } else {
        out = gs_pages_alloc(*out_bytes);
    }
    if (!s.stack || !s.interior || !out || gs_mark_pages_init(total)) {
        gs_log("scan skipped: out of memory");
        gs_mark_free(&s);
        return NULL;
    }
    s.res = out->res;
    s.res_cap = total + npool + 4096;
    return out;
}

/* 2. Stops the world; 0, or -1 (said once per process: a program that
 * blocks the stop signal would repeat it every scan interval, and a forked
 * child says it again). */
static int stop(struct gs_stopped **th, int *nth)
{
    char why[160] = "";
    if (gs_stop_world(th, nth, why, sizeof why) == 0)
        return 0;
    static pid_t told;
    if (told != getpid()) {
        told = getpid();
        gs_log("scan skipped: %s (later scans that cannot stop the threads are skipped "
               "without a word)", why);
    }
    return -1;
}

/* 3. The table pass, the roots, marking and classification, world stopped. */
static int mark_and_classify(const struct gs_stopped *th, int nth, uintptr_t root_sp,
                             int self_is_program, struct heap *heap)
{
    if (gs_mark_prepass(&s, &heap->v, &heap->n, &heap->cap) ||
        gs_roots_collect(&roots, th, nth, root_sp, self_is_program, self_regs, nself_regs,
                         heap->v, heap->n))
        return -1;
    s.noread = roots.noread;
    s.nnoread = roots.nnoread;
    s.slack = roots.slack;
    s.nslack = roots.nslack;
    gs_mark_roots(&s, &roots);
    gs_mark_held(&s);
    gs_classify(&s);
    return 0;
}

static void save_out(struct shared_out *out)
{
    out->nres = s.nres;
    out->bytes_scanned = s.bytes_scanned;
    out->unreadable = s.unreadable_bytes;
    out->visited = s.visited;
    out->live_blocks = s.live_blocks;
    out->live_bytes = s.live_bytes;
    memcpy(out->cls_blocks, s.cls_blocks, sizeof s.cls_blocks);
    memcpy(out->cls_bytes, s.cls_bytes, sizeof s.cls_bytes);
    memcpy(out->new_blocks, s.new_blocks, sizeof s.new_blocks);
    memcpy(out->new_bytes, s.new_bytes, sizeof s.new_bytes);
}

static void load_out(const struct shared_out *out)
{
    s.nres = out->nres;
    s.bytes_scanned = out->bytes_scanned;
    s.unreadable_bytes = out->unreadable;
    s.visited = out->visited;
    s.live_blocks = out->live_blocks;
    s.live_bytes = out->live_bytes;
    memcpy(s.cls_blocks, out->cls_blocks, sizeof s.cls_blocks);
    memcpy(s.cls_bytes, out->cls_bytes, sizeof s.cls_bytes);
    memcpy(s.new_blocks, out->new_blocks, sizeof s.new_blocks);
    memcpy(s.new_bytes, out->new_bytes, sizeof s.new_bytes);
}

/* Fork mode's snapshot is taken by a process that is never the program's
 * child, so that no wait of the program (waitpid(-1, __WALL)) sees it alive
 * or reaps it: a helper sharing our memory and files (clone with CLONE_VM,
 * CLONE_VFORK: no page tables copied, and we wait for its end) forks the
 * scanning process and exits; we reap the helper before the world restarts,
 * while every program thread is stopped; the scanning process, orphaned, is
 * the init process's (it exits with SIGCHLD to its new parent, which reaps
 * it). We learn of its end through a pidfd (CLONE_PIDFD, Linux 5.2; made in
 * our file table, closed once read) and the futex word it sets when done.
 * A process that is a child subreaper would get the orphan back, as its
 * child: there the scanning process is our direct child, as before (a
 * clone with no exit signal, reaped by us; visible to __WALL waits). */
struct snap {
    const struct gs_stopped *th;
    int nth;
    int self_is_program;
    uintptr_t root_sp;
    struct shared_out *out;
    struct heap *heap;
    pid_t pid;
    int pidfd;
    int direct; /* our own child (subreaper), reaped with wait4 */
};
static struct snap snap;
static _Alignas(64) char helper_stack[256 << 10]; /* bss: untouched pages cost nothing */

/* In the scanning process: mark, leave the results, exit. It is alone: a
 * gcspy lock another thread held at the fork (the writer's registry lock)
 * is reset first. */
static _Noreturn void snapshot_main(void)
{
    gs_pages_atfork_child();
    struct shared_out *out = snap.out;
    unsigned st = 2;
    if (mark_and_classify(snap.th, snap.nth, snap.root_sp, snap.self_is_program, snap.heap) == 0) {
        save_out(out);
        out->t_marked = gs_now_fine();
        st = 1;
    }
    __atomic_store_n(&out->state, st, __ATOMIC_RELEASE);
    syscall(SYS_futex, &out->state, FUTEX_WAKE, 1, NULL, NULL, 0);
    syscall(SYS_exit_group, 0);
    __builtin_unreachable();
}

/* The helper: runs on helper_stack in our memory, with our files, while
 * the scanning thread waits in clone (CLONE_VFORK). Raw system calls only. */
static int helper_main(void *arg)
{
    (void)arg;
    int pidfd = -1;
    long pid = syscall(SYS_clone, CLONE_PIDFD /* no exit signal */, 0, &pidfd, 0, 0);
    if (pid < 0) { /* a kernel without CLONE_PIDFD */
        pidfd = -1;
        pid = syscall(SYS_clone, 0, 0, 0, 0, 0);
    }
    if (pid == 0)
        snapshot_main();
    snap.pid = (pid_t)pid;
    snap.pidfd = pidfd;
    return 0;
}

static int start_snapshot(void)
{
    int subreaper = 0;
    if (syscall(SYS_prctl, PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0) || subreaper) {
        snap.direct = 1;
        long pid = syscall(SYS_clone, 0 /* no signal at exit */, 0, 0, 0, 0);
        if (pid == 0)
            snapshot_main();
        snap.pid = (pid_t)pid;
        return pid < 0 ? -1 : 0;
    }
    pid_t h = clone(helper_main, helper_stack + sizeof helper_stack,
                    CLONE_VM | CLONE_VFORK | CLONE_FILES /* no exit signal */, NULL);
    if (h < 0)
        return -1;
    while (syscall(SYS_wait4, h, NULL, __WCLONE, NULL) < 0 && errno == EINTR)
        ;
    /* glibc declares clone a leaf (it never calls back into this file), so
     * the compiler would keep its idea of snap across it: the helper wrote
     * it. */
    __asm__ volatile("" : : : "memory");
    return snap.pid < 0 ? -1 : 0;
}

/* 2-3 while the world is stopped: in place, or (fork mode) in the scanning
 * process, which leaves everything in out, so that the pause is just the
 * fork. Returns 0, or -1. */
static int stopped_section(int fork_mode, const struct gs_stopped *th, int nth,
                           uintptr_t self_sp, struct shared_out *out, struct heap *heap,
                           uint64_t *t_marked)
{
    memset(&roots, 0, sizeof roots);
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t root_sp = self_sp ? self_sp : here;
    if (!fork_mode) {
        if (mark_and_classify(th, nth, root_sp, self_sp != 0, heap))
            return -1;
        *t_marked = gs_now_fine();
        return 0;
    }
    snap = (struct snap){th, nth, self_sp != 0, root_sp, out, heap, -1, -1, 0};
    return start_snapshot();
}

/* Fork mode, world running: the scanning process's results. 0, or -1 when
 * it failed (it ended without leaving them). */
static int collect_child(const struct shared_out *out, uint64_t *t_marked)
{
    int ended = 0;
    while (!__atomic_load_n(&out->state, __ATOMIC_ACQUIRE) && !ended) {
        if (snap.direct) {
            int st;
            ended = syscall(SYS_wait4, snap.pid, &st, __WCLONE | WNOHANG, NULL) == snap.pid;
        } else if (snap.pidfd >= 0) {
            struct pollfd p = {snap.pidfd, POLLIN, 0};
            ended = poll(&p, 1, 0) == 1;
        } else {
            ended = kill(snap.pid, 0) != 0 && errno == ESRCH;
        }
        struct timespec ts = {0, 10000000};
        if (!ended)
            syscall(SYS_futex, &out->state, FUTEX_WAIT, 0, &ts, NULL, 0);
    }
    if (snap.direct && !ended) {
        int st;
        while (syscall(SYS_wait4, snap.pid, &st, __WCLONE, NULL) < 0 && errno == EINTR)
            ;
    }
    if (snap.pidfd >= 0)
        close(snap.pidfd);
    snap.pidfd = -1;
    if (__atomic_load_n(&out->state, __ATOMIC_ACQUIRE) != 1)
        return -1;
    load_out(out);
    *t_marked = out->t_marked;
    return 0;
}

/* 4. The world runs again: write the results. */
static void write_results(const struct gs_scan_end *end, int trigger, int fork_mode)
{
    gs_emit_scan_begin(end->id, end->t_start, (unsigned)trigger, (unsigned)fork_mode);
    for (size_t i = 0; i < s.nres; i++) {
        const struct gs_scan_result *r = &s.res[i];
        gs_emit_scan_block(end->id, r->addr, r->size, r->stack, r->kind, r->cls, r->fn);
    }
    gs_emit_scan_end(end);
}

/* An API scan's verdict, world running: its lost blocks are flagged seen
 * (in the table itself: fork mode's scanning process could flag only its
 * copy), and its counts kept for gcspy_scan_leaks. A block that was freed
 * since the stop, and its address reused, is told apart by size and stack;
 * one not flagged is counted as new again by the next API scan. */
static void keep_api_verdict(uint64_t id)
{
    for (size_t i = 0; i < s.nres; i++) {
        const struct gs_scan_result *r = &s.res[i];
        if (!r->fresh || r->kind == GS_MEM_DEVICE)
            continue;
        struct gs_shard *sh = gs_shard_of(r->addr);
        gs_spin_lock(&sh->s.lock);
        struct gs_block *b = gs_table_find(sh, r->addr);
        if (b && b->size == r->size && b->stack == r->stack)
            b->flags |= GS_BLOCK_LOST_SEEN;
        gs_spin_unlock(&sh->s.lock);
    }
    gs_spin_lock(&api_lock);
    api_last.id = id;
    memcpy(api_last.blocks, s.cls_blocks, sizeof api_last.blocks);
    memcpy(api_last.bytes, s.cls_bytes, sizeof api_last.bytes);
    memcpy(api_last.new_blocks, s.new_blocks, sizeof api_last.new_blocks);
    memcpy(api_last.new_bytes, s.new_bytes, sizeof api_last.new_bytes);
    gs_spin_unlock(&api_lock);
}

void gs_scan_api_last(struct gs_scan_counts *out)
{
    gs_spin_lock(&api_lock);
    *out = api_last;
    gs_spin_unlock(&api_lock);
}

static int run_scan(int trigger, uintptr_t self_sp, struct gs_pool_view *view,
                    const uint8_t *bits, uint32_t nbits)
{
    uint64_t t_start = gs_now_fine();
    int fork_mode = gs_opt.scan_mode && !strcmp(gs_opt.scan_mode, "fork");
    memset(&s, 0, sizeof s);
    s.with_reachable = trigger == GS_SCAN_TRIG_EXIT && gs_opt.scan_report_reachable;
    s.pool = view;
    s.bits = bits;
    s.nbits = nbits;
    s.cbits = cuda_owned.bits;
    s.ncbits = cuda_owned.nbits;
    s.cdata = cuda_owned.data;
    s.ncdata = cuda_owned.ndata;
    s.scan_managed = gs_opt.scan_managed;
    uint64_t id = ++scan_seq;

    size_t out_bytes;
    struct shared_out *out = prepare(fork_mode, &out_bytes);
    if (!out)
        return -1;
    struct gs_stopped *th;
    int nth;
    if (stop(&th, &nth)) {
        gs_mark_free(&s);
        free_out(out, out_bytes, fork_mode);
        return -1;
    }
    uint64_t t_stopped = gs_now_fine();
    int nstopped = 0;
    for (int i = 0; i < nth; i++)
        nstopped += atomic_load(&th[i].state) == GS_STOP_STOPPED;

    /* A parked thread (it blocks the stop signal: stop.c) is not stopped:
     * should it wake, it must not change a table under the marker, so every
     * shard lock is held for the stopped section (stopped threads hold
     * none: they stop only outside gcspy). */
    int parked = 0;
    for (int i = 0; i < nth; i++)
        parked |= atomic_load(&th[i].state) == GS_STOP_PARKED;
    if (parked)
        for (int i = 0; i < GS_SHARDS; i++)
            gs_spin_lock(&gs_shards[i].s.lock);
    struct heap heap = {NULL, 0, 0};
    uint64_t t_marked = 0;
    errno = 0; /* what failed, if anything does: ENOMEM, or EMFILE from /proc */
    int ok = stopped_section(fork_mode, th, nth, self_sp, out, &heap, &t_marked) == 0;
    int why = errno;
    if (parked)
        for (int i = 0; i < GS_SHARDS; i++)
            gs_spin_unlock(&gs_shards[i].s.lock);
    gs_start_world();
    uint64_t t_end = gs_now_fine();
    gs_roots_free(&roots);
    gs_pages_free(heap.v, heap.cap * sizeof *heap.v);
    if (!ok) {
        if (why == EMFILE || why == ENFILE || why == EACCES || why == ENOENT)
            gs_log("scan skipped: /proc/self/maps cannot be read (%s)", strerror(why));
        else
            gs_log("scan skipped: out of memory while the world was stopped");
        gs_mark_free(&s);
        free_out(out, out_bytes, fork_mode);
        return -1;
    }
    if (fork_mode && collect_child(out, &t_marked)) {
        gs_log("scan skipped: the scanning child failed");
        gs_mark_free(&s);
        munmap(out, out_bytes);
        return -1;
    }

    struct gs_scan_end end = {id, t_start, t_stopped, t_marked, t_end, (uint64_t)nstopped,
                              s.bytes_scanned, s.visited, s.live_blocks, s.live_bytes,
                              s.cls_blocks, s.cls_bytes, s.unreadable_bytes};
    write_results(&end, trigger, fork_mode);
    if (trigger == GS_SCAN_TRIG_API)
        keep_api_verdict(id);
    gs_mark_free(&s);
    free_out(out, out_bytes, fork_mode);
    gs_last_scan_ns = gs_now_fine();
    return 0;
}

int gs_scan_running(void)
{
    return atomic_load(&scanning);
}

/* regs (nregs words): the calling thread's registers where self_sp was
 * taken, roots too; set once this scan owns the scanner, so a call that is
 * turned away never changes a running scan's roots. */
static int scan_with(int trigger, uintptr_t self_sp, const uintptr_t *regs, size_t nregs,
                     struct gs_pool_view *view)
{
    if (!gs_tracing())
        return -1;
    if (trigger == GS_SCAN_TRIG_EXIT) {
        /* The exit scan waits for a periodic one to finish. */
        while (atomic_exchange(&scanning, 1))
            sched_yield();
    } else if (atomic_exchange(&scanning, 1)) {
        return -1;
    }
    self_regs = regs;
    nself_regs = nregs;
    int rc = -1;
    gs_cupti_flush();
    const uint8_t *bits = NULL;
    uint32_t nbits = 0;
    if (stack_bits)
        stack_bits(&bits, &nbits);
    gs_cuda_owned_prepare(&cuda_owned);
    if (gs_stop_init() == 0)
        rc = run_scan(trigger, self_sp, view, bits, nbits);
    else
        gs_log("scan skipped: no free real-time signal to stop threads with");
    self_regs = NULL;
    nself_regs = 0;
    atomic_store(&scanning, 0);
    if (rc == 0 && trigger == GS_SCAN_TRIG_EXIT)
        gs_exit_scan_done = 1;
    return rc;
}

int gs_scan(int trigger, uintptr_t self_sp)
{
    return scan_with(trigger, self_sp, NULL, 0, NULL);
}

int gs_scan_from(int trigger, uintptr_t sp, const uintptr_t *regs, size_t nregs)
{
    return scan_with(trigger, sp, regs, nregs, NULL);
}

/* Zeroes up to 64 KiB of stack below the caller's frame, never closer than
 * 16 KiB to the stack's end. A program thread's stack is a root from its
 * stack pointer up: block addresses that gcspy's own deeper frames (a
 * snapshot's walk, the marking) leave there would be read by a later scan
 * whose frames reuse that memory without writing all of it. */
__attribute__((noinline)) void gs_scrub_stack(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    size_t n = 64 << 10;
    const struct gs_thread *th = gs_tls.th;
    if (th && th->stack_lo) {
        size_t room = sp > th->stack_lo + (16 << 10) ? sp - th->stack_lo - (16 << 10) : 0;
        if (room < n)
            n = room;
    }
    if (n < 64)
        return;
    char buf[n];
    memset(buf, 0, n);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

__attribute__((noinline)) int gs_scan_program(int trigger, struct gs_pool_view *view)
{
    if (gs_tls.in_hook || !gs_tracing())
        return -1;
    GS_ENTRY_SP(sp);
    gs_tls.in_hook = 1;
    int rc = scan_with(trigger, sp, NULL, 0, view);
    gs_scrub_stack();
    gs_leave();
    return rc;
}

int gs_scan_program_from(int trigger, uintptr_t sp, const uintptr_t *regs, size_t nregs)
{
    if (gs_tls.in_hook || !gs_tracing())
        return -1;
    gs_tls.in_hook = 1;
    int rc = scan_with(trigger, sp, regs, nregs, NULL);
    gs_scrub_stack();
    gs_leave();
    return rc;
}

void gs_scan_atfork_child(void)
{
    atomic_store(&scanning, 0);
    gs_stop_atfork_child();
}
