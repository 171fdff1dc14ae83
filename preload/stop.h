/*
 * Stopping and restarting the world for a scan (stop.c).
 */
#ifndef GCSPY_STOP_H
#define GCSPY_STOP_H

#include "shim.h"

#define GS_MAX_STOPPED 4096
#define GS_NREGS 23 /* x86-64 gregs in a ucontext */

/* A thread's state in a stop. */
enum {
    GS_STOP_SIGNALLED = 0,
    GS_STOP_STOPPED = 1, /* in the handler: sp and regs saved */
    GS_STOP_GONE = 2,    /* exited meanwhile */
    GS_STOP_PARKED = 3,  /* blocks the signal, blocked in the kernel: sp from
                          * /proc, no registers; not stopped (stop.c) */
    GS_STOP_RUNNING = 4, /* blocks the signal and runs past the grace: the
                          * stop fails */
};

struct gs_stopped {
    int tid;
    atomic_int state;        /* GS_STOP_* */
    uintptr_t sp;
    uintptr_t regs[GS_NREGS];
    /* The system call the thread was blocked in before it was signalled
     * (/proc/self/task/TID/syscall): number (-1: none known), arguments and
     * the address after the syscall instruction. The handler restarts that
     * call when the stop signal interrupted it (stop.c). */
    long sc_nr;
    uintptr_t sc_args[6];
    uintptr_t sc_pc;
    int ran_seen;       /* /proc said "running" (it may enter a call before the signal) */
    uint64_t t_blocked; /* signalled while it blocked the signal (when), or 0 */
};

/* Picks the stop signal (a real-time one nobody handles); 0 or -1. */
int gs_stop_init(void);
/* Stops every thread but the caller and gcspy's own; 0 or -1 with a reason. */
int gs_stop_world(struct gs_stopped **threads, int *n, char *why, size_t whylen);
void gs_start_world(void);
void gs_stop_atfork_child(void);

#endif /* GCSPY_STOP_H */
