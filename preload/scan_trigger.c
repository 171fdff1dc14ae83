/*
 * The scan triggers: what starts a leak scan (scan.c) and on which thread.
 *
 *  - gcspy_scan() (API) and the exit scan run in the calling thread, whose
 *    stack is a root from its caller's frame up. The API's entry points are
 *    assembly stubs (x86-64) that note where the caller left its stack and
 *    its callee-saved registers before any of gcspy's frames exists: the
 *    frames of gcspy_scan_leaks and gcspy_scan hold locals that are written
 *    only after the scan, and until then they hold what deeper frames left
 *    there earlier. The program's own malloc, through ctypes, left the
 *    block's address from gcspy's malloc hook in such a slot, and the
 *    block a test had just dropped stayed reachable (sid's python3.14,
 *    every run: py_pymalloc.sh's list-capacity case).
 *  - The scan signal (GCSPY_SCAN_SIGNAL), the byte count (GCSPY_SCAN_BYTES,
 *    counted by core.c on the allocation path) and the interval
 *    (GCSPY_SCAN_INTERVAL_MS) only raise a request (gs_scan_requested,
 *    core.h) and wake the writer: its tick (daemon.c) runs the scan here.
 *
 * A scan policy registered from above (torch.c's, once torch uses CUDA)
 * may take a tick's scan off the writer thread, which must never wait for
 * the GIL, or run gcspy_scan()'s scan with a snapshot first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "core.h"
#include "entry_stub.h"
#include "gcspy.h"
#include "mem.h"
#include "roots.h"
#include "scan.h"
#include "scan_trigger.h"
#include "writer.h"

static int ready; /* gs_scan_init ran: the exit scan may run */
static int (*policy_route)(int trigger);
static int (*policy_api)(void);

void gs_scan_set_policy(int (*route)(int trigger), int (*api)(void))
{
    policy_route = route;
    policy_api = api;
}

/* Where this thread called gcspy_scan or gcspy_scan_leaks, written by
 * their entry stubs (below, entry_stub.h), read and cleared by api_scan in
 * the same thread. sp 0: not noted (another architecture): the scan then
 * starts below gcspy's frames. */
__thread struct gs_entry_regs gs_api_from __attribute__((used));

/* The policy's scan (torch.c's snapshot and its Python objects live in its
 * frames) keeps those frames as roots; the plain scan starts at the
 * caller. */
static int api_scan(void)
{
    struct gs_entry_regs from = gs_api_from;
    /* all of it: this thread's TLS is a root, and a register's value left
     * here would keep its block for ever (leak_api_register's exit scan) */
    memset(&gs_api_from, 0, sizeof gs_api_from);
    if (gs_tls.in_hook || !gs_tracing())
        return -1;
    int trc = policy_api ? policy_api() : -2;
    if (trc != -2)
        return trc;
    if (from.sp)
        return gs_scan_program_from(GS_SCAN_TRIG_API, from.sp, from.regs,
                                    sizeof from.regs / sizeof from.regs[0]);
    return gs_scan_program(GS_SCAN_TRIG_API, NULL);
}

GS_HIDDEN __attribute__((used)) int gs_api_scan_c(void)
{
    return api_scan();
}

GS_HIDDEN __attribute__((used)) int gs_api_scan_leaks_c(struct gcspy_leaks *out)
{
    /* after is written now: PyTorch-aware mode's scan still reads this frame
     * (its roots start below its own frames), and an unwritten local keeps
     * what deeper frames left in that memory */
    struct gs_scan_counts before, after = {0};
    __asm__ volatile("" : : "r"(&after) : "memory"); /* written before the scan */
    gs_scan_api_last(&before);
    if (api_scan())
        return -1;
    gs_scan_api_last(&after);
    if (after.id == before.id)
        return -1; /* the scan ran but was skipped (said on stderr) */
    if (out) {
        struct gcspy_leak_count *c[] = {&out->definite, &out->indirect, &out->possible};
        struct gcspy_leak_count *n[] = {&out->new_definite, &out->new_indirect, &out->new_possible};
        for (int k = 0; k < 3; k++) {
            *c[k] = (struct gcspy_leak_count){after.blocks[k], after.bytes[k]};
            *n[k] = (struct gcspy_leak_count){after.new_blocks[k], after.new_bytes[k]};
        }
    }
    return 0;
}

#if defined(__x86_64__)
GS_ENTRY_STUB(gcspy_scan, gs_api_from, gs_api_scan_c);
GS_ENTRY_STUB(gcspy_scan_leaks, gs_api_from, gs_api_scan_leaks_c);
#else
__attribute__((visibility("default"))) int gcspy_scan(void) { return gs_api_scan_c(); }
__attribute__((visibility("default"))) int gcspy_scan_leaks(struct gcspy_leaks *out)
{
    return gs_api_scan_leaks_c(out);
}
#endif

__attribute__((noinline)) void gs_scan_at_exit(uintptr_t sp, const uintptr_t *regs, size_t nregs)
{
    if (!ready || gs_exit_scan_done)
        return;
    if (sp) {
        gs_scan_from(GS_SCAN_TRIG_EXIT, sp, regs, nregs);
        return;
    }
    GS_ENTRY_SP(here);
    gs_scan(GS_SCAN_TRIG_EXIT, here);
}

/* The exit scan run by gcspy's writer when no program thread is left
 * (life.c's on_orphaned): no stack of the scanning thread is a root. */
void gs_scan_at_exit_gcspy(void)
{
    if (ready && !gs_exit_scan_done)
        gs_scan(GS_SCAN_TRIG_EXIT, 0);
}

/* ---- triggers that run on the writer thread ---- */

/* gs_scan_requested holds the trigger + 1 of a pending request (0: none). */
static void scan_signal_handler(int sig)
{
    (void)sig;
    int saved = errno;
    atomic_store(&gs_scan_requested, GS_SCAN_TRIG_SIGNAL + 1);
    gs_writer_wake();
    errno = saved;
}

uint64_t gs_scan_next_due_ns(void)
{
    if (!gs_opt.scan_interval_ms)
        return UINT64_MAX;
    uint64_t due = gs_last_scan_ns + gs_opt.scan_interval_ms * 1000000ull, now = gs_now_fine();
    return due > now ? due - now : 0;
}

void gs_scan_tick(void)
{
    if (gs_exit_scan_done)
        return; /* Python's atexit ran the exit scan: it stays the last */
    int req = atomic_exchange(&gs_scan_requested, 0);
    int trigger = req ? req - 1 : -1;
    if (gs_opt.scan_interval_ms && gs_scan_next_due_ns() == 0 && trigger < 0)
        trigger = GS_SCAN_TRIG_PERIODIC;
    if (trigger < 0)
        return;
    /* The next periodic scan counts from this attempt, whatever its outcome:
     * a scan that keeps failing must not keep the writer busy. */
    gs_last_scan_ns = gs_now_fine();
    atomic_store(&gs_bytes_since_scan, 0);
    if (trigger != GS_SCAN_TRIG_EXIT && policy_route && policy_route(trigger))
        return; /* the main thread scans, after a snapshot */
    gs_scan(trigger, 0);
}

void gs_triggers_atfork_child(void)
{
    atomic_store(&gs_scan_requested, 0);
    gs_scan_atfork_child();
}

int gs_scan_init(void)
{
    ready = 1;
    gs_roots_init();
    gs_last_scan_ns = gs_now_fine();
    if (gs_opt.scan_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = scan_signal_handler;
        sa.sa_flags = SA_RESTART;
        if (sigaction((int)gs_opt.scan_signal, &sa, NULL))
            gs_log("cannot handle signal %d for scans", (int)gs_opt.scan_signal);
    }
    return gs_stop_init();
}
