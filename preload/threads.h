/*
 * The per-thread registry (threads.c): each program thread's struct
 * gs_thread (shim.h), its index in the trace, its stack bounds and its
 * event counts, kept after the thread ends so that TRACE_END counts every
 * recorded event.
 */
#ifndef GCSPY_THREADS_H
#define GCSPY_THREADS_H

#include "shim.h"

/* The calling thread's struct, made (and its THREAD_START written) on first
 * use; NULL after its TSD destructors ran, or without memory. */
struct gs_thread *gs_thread_get(void);
/* At start: the TSD key whose destructor writes THREAD_EXIT. */
void gs_threads_init(void);
/* Events counted by every thread struct, live or dead (under the lock). */
void gs_threads_totals(uint64_t *allocs, uint64_t *frees, uint64_t *bytes);
/* fork: the registry lock, taken by the prepare handler (life.c). */
void gs_threads_lock(void);
void gs_threads_unlock(void);
/* In the child: only the calling thread exists; counts start from zero. */
void gs_threads_atfork_child(void);

#endif /* GCSPY_THREADS_H */
