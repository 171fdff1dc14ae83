/*
 * The byte sink (writer.c): streams of event buffers, the background writer
 * thread that packs them into compressed chunks, and the trace file. Above
 * it, emit.c encodes records into its streams; the writer learns what its
 * thread does between flushes, and how a failed trace ends, from callbacks
 * registered at start (life.c registers daemon.c's tick and emit.c's
 * STOPPED encoder).
 */
#ifndef GCSPY_WRITER_H
#define GCSPY_WRITER_H

#include "shim.h"

/* Returns a pointer where up to `need` bytes may be written into s's current
 * buffer (starting one, with its TIMEBASE, if needed), or NULL when tracing
 * has stopped. Caller holds s->lock and then calls gs_stream_commit. */
uint8_t *gs_stream_reserve_slow(struct gs_stream *s, size_t need);
static inline uint8_t *gs_stream_reserve(struct gs_stream *s, size_t need)
{
    /* The common case (room left in the current buffer) inline: every
     * allocation event reserves once, and the call's register saves for the
     * slow path's backpressure wait cost more than the test itself (about 22
     * instructions an event, bench/hotpath-profile.sh). */
    struct gs_buf *b = s->cur;
    if (GS_LIKELY(b && b->len + need <= GS_BUF_SIZE))
        return b->data + b->len;
    return gs_stream_reserve_slow(s, need);
}
static inline void gs_stream_commit(struct gs_stream *s, uint8_t *end)
{
    s->cur->len = (uint32_t)(end - s->cur->data);
}
extern struct gs_stream gs_meta; /* definitions: STACK, MODULE, THREAD_*, ... */

int gs_writer_open(void);      /* opens the trace file; 0 or -1 */
/* The pthread_join the writer is joined with (glibc's own, found by
 * life.c); the global one until this is called. */
void gs_writer_set_join(int (*join)(pthread_t, void **));
int gs_writer_start(void);     /* starts the background thread */
/* Stops the background thread and waits until the kernel no longer counts
 * it, the file left open (for a call that needs a single-threaded process);
 * gs_writer_start starts it again. 0, or -1 when it was not running. */
int gs_writer_park(void);
/* Writes everything buffered so far, synchronously, from the calling thread. */
void gs_writer_flush(void);
/* Final flush, then `tail` (already encoded records) in the last chunk, then
 * close; nothing is written afterwards. 0 when everything reached the file. */
int gs_writer_close(const uint8_t *tail, size_t tail_len);
/* fork: lock(0) = writer mutex (first), lock(1) = buffer pool (last). */
void gs_writer_atfork_lock(int pool);
void gs_writer_atfork_unlock(int pool);
/* After fork, in the child: forget the parent's buffers and file. */
void gs_writer_atfork_child(void);
const char *gs_writer_path(void);
/* Wakes the writer thread (a scan request, new work for its tick). */
void gs_writer_wake(void);
/* The exit, once tracing is stopped: no thread is left waiting for room. */
void gs_writer_release_waiters(void);

/* What the writer thread does between flushes: run() after each wait (it
 * calls gs_writer_flush_due where the flush belongs among its steps), and
 * due_ns() the time until it wants to run again, which shortens the wait
 * (flush interval otherwise). Without a tick the thread only flushes. */
void gs_writer_set_tick(void (*run)(void), uint64_t (*due_ns)(void));
/* Flushes when the flush interval has passed or full buffers wait. */
void gs_writer_flush_due(uint64_t now);
/* The writer thread has been asked to end (the exit). */
int gs_writer_stopping(void);
/* The record that ends a failed trace: enc(p, t, why) writes it at p and
 * returns its end (emit.c's gs_emit_stopped). */
void gs_writer_set_stop_record(uint8_t *(*enc)(uint8_t *p, uint64_t t, const char *why));

/* Stops tracing after an internal failure: one line on stderr ("WHAT: WHY;
 * tracing stopped, the program runs on"), hooks pass straight through from
 * now on, the program runs on. The trace ends with a STOPPED record naming
 * the failure, unless writing the file is what failed (writer.c). */
void gs_fail(const char *what, int err);  /* WHY: strerror(err) */
void gs_fail_why(const char *what, const char *why);

/* The STOPPED ending of a trace that failed, written now by the calling
 * thread if the writer thread has not written it (exit paths). */
void gs_writer_end_if_stopped(void);

#endif /* GCSPY_WRITER_H */
