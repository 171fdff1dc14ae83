/*
 * The state every layer of the shim reads (shim.h): the tracing flag, the
 * options as parsed, the clock's base, the per-thread state, the stop
 * request a scan raises and gcspy's own threads.
 *
 * Only definitions and the two small functions that need nothing else: this
 * file calls no other file of preload/, so anything may read it.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

atomic_int gs_state;
uint64_t gs_t0_ns;
_Atomic uint64_t gs_time_floor;
pid_t gs_pid;
struct gs_options gs_opt;
__thread struct gs_tls gs_tls __attribute__((tls_model("initial-exec")));

int gs_stop_sig;
atomic_int gs_stop_active;

int gs_own_tids[GS_MAX_OWN];
int gs_own_ntids;
uintptr_t gs_own_stack_hint[GS_MAX_OWN];

int gs_raw_gettid(void)
{
    return (int)syscall(SYS_gettid);
}

/* The thread left gcspy with a stop request pending (stop.c's handler saw
 * the recursion flag set): now it may stop, so the signal comes again. */
void gs_stop_check_slow(void)
{
    gs_tls.stop_pending = 0;
    if (atomic_load(&gs_stop_active))
        syscall(SYS_tgkill, getpid(), gs_raw_gettid(), gs_stop_sig);
}

void gs_own_thread_add(int tid)
{
    if (gs_own_ntids < GS_MAX_OWN)
        gs_own_tids[gs_own_ntids++] = tid;
}

void gs_own_thread_remove(int tid)
{
    for (int i = 0; i < gs_own_ntids; i++)
        if (gs_own_tids[i] == tid) {
            gs_own_tids[i] = gs_own_tids[--gs_own_ntids];
            return;
        }
}
