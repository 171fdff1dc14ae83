/*
 * The leak scan's phases: conservative mark-sweep over the live-block
 * table, classified like valgrind memcheck.
 *
 *  1. Allocate, with the world running, everything the stopped section
 *     needs where its size is known (mark stack, interior list, results).
 *  2. Stop the world (stop.c). In fork mode, fork right away (a raw clone
 *     with no exit signal, so the program's waitpid never sees it), restart
 *     the world, and do the rest in the child, which writes its results to a
 *     shared mapping and exits.
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
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cupti_load.h"
#include "emit.h"
#include "scan.h"

int gs_exit_scan_done;
uint64_t gs_last_scan_ns;

static atomic_int scanning;
static uint64_t scan_seq;
static void (*stack_bits)(const uint8_t **bits, uint32_t *nbits);

/* Results and counters, as the fork mode's child leaves them for the parent. */
struct shared_out {
    uint64_t done, nres, bytes_scanned, visited, live_blocks, live_bytes, t_marked, unreadable;
    uint64_t cls_blocks[GS_CLASS__N], cls_bytes[GS_CLASS__N];
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
    gs_mark_roots(&s, &roots);
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
}

/* 2-3 while the world is stopped: in place, or (fork mode) in a child that
 * leaves everything in out, so that the pause is just the fork. The child
 * is alone: a gcspy lock another thread held at the fork (the writer's
 * registry lock) is reset there first. Returns 0, or -1. */
static int stopped_section(int fork_mode, const struct gs_stopped *th, int nth,
                           uintptr_t self_sp, struct shared_out *out, struct heap *heap,
                           pid_t *child, uint64_t *t_marked)
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
    *child = (pid_t)syscall(SYS_clone, 0 /* no signal at exit */, 0, 0, 0, 0);
    if (*child == 0) {
        gs_pages_atfork_child();
        if (mark_and_classify(th, nth, root_sp, self_sp != 0, heap) == 0) {
            save_out(out);
            out->t_marked = gs_now_fine();
            __atomic_store_n(&out->done, 1, __ATOMIC_RELEASE);
        }
        syscall(SYS_exit_group, 0);
    }
    return *child < 0 ? -1 : 0;
}

/* Fork mode, world running: the child's results. 0, or -1 when it failed. */
static int collect_child(pid_t child, const struct shared_out *out, uint64_t *t_marked)
{
    int st;
    while (syscall(SYS_wait4, child, &st, __WCLONE, NULL) < 0 && errno == EINTR)
        ;
    if (!__atomic_load_n(&out->done, __ATOMIC_ACQUIRE))
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
        nstopped += atomic_load(&th[i].state) == 1;

    struct heap heap = {NULL, 0, 0};
    uint64_t t_marked = 0;
    pid_t child = -1;
    errno = 0; /* what failed, if anything does: ENOMEM, or EMFILE from /proc */
    int ok = stopped_section(fork_mode, th, nth, self_sp, out, &heap, &child, &t_marked) == 0;
    int why = errno;
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
    if (fork_mode && collect_child(child, out, &t_marked)) {
        gs_log("scan skipped: the scanning child failed");
        gs_mark_free(&s);
        munmap(out, out_bytes);
        return -1;
    }

    struct gs_scan_end end = {id, t_start, t_stopped, t_marked, t_end, (uint64_t)nstopped,
                              s.bytes_scanned, s.visited, s.live_blocks, s.live_bytes,
                              s.cls_blocks, s.cls_bytes, s.unreadable_bytes};
    write_results(&end, trigger, fork_mode);
    gs_mark_free(&s);
    free_out(out, out_bytes, fork_mode);
    gs_last_scan_ns = gs_now_fine();
    return 0;
}

int gs_scan_running(void)
{
    return atomic_load(&scanning);
}

static int scan_with(int trigger, uintptr_t self_sp, struct gs_pool_view *view)
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
    int rc = -1;
    gs_cupti_flush();
    const uint8_t *bits = NULL;
    uint32_t nbits = 0;
    if (stack_bits)
        stack_bits(&bits, &nbits);
    if (gs_stop_init() == 0)
        rc = run_scan(trigger, self_sp, view, bits, nbits);
    else
        gs_log("scan skipped: no free real-time signal to stop threads with");
    atomic_store(&scanning, 0);
    if (rc == 0 && trigger == GS_SCAN_TRIG_EXIT)
        gs_exit_scan_done = 1;
    return rc;
}

int gs_scan(int trigger, uintptr_t self_sp)
{
    return scan_with(trigger, self_sp, NULL);
}

int gs_scan_from(int trigger, uintptr_t sp, const uintptr_t *regs, size_t nregs)
{
    self_regs = regs;
    nself_regs = nregs;
    int rc = scan_with(trigger, sp, NULL);
    self_regs = NULL;
    nself_regs = 0;
    return rc;
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
    int rc = scan_with(trigger, sp, view);
    gs_scrub_stack();
    gs_leave();
    return rc;
}

void gs_scan_atfork_child(void)
{
    atomic_store(&scanning, 0);
    gs_stop_atfork_child();
}
