/*
 * Stopping and restarting the world for a scan (stop.c).
 */
#ifndef GCSPY_STOP_H
#define GCSPY_STOP_H

#include "shim.h"

#define GS_MAX_STOPPED 4096
#define GS_NREGS 23 /* x86-64 gregs in a ucontext */

struct gs_stopped {
    int tid;
    atomic_int state;        /* 0 signalled, 1 stopped, 2 gone */
    uintptr_t sp;
    uintptr_t regs[GS_NREGS];
};

/* Picks the stop signal (a real-time one nobody handles); 0 or -1. */
int gs_stop_init(void);
/* Stops every thread but the caller and gcspy's own; 0 or -1 with a reason. */
int gs_stop_world(struct gs_stopped **threads, int *n, char *why, size_t whylen);
void gs_start_world(void);
void gs_stop_atfork_child(void);

#endif /* GCSPY_STOP_H */
