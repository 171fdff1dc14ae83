/*
 * The core (core.c): what happens on each allocation event. This is the
 * narrow API under the hooks: it works on plain addresses, so unit tests
 * drive it with fake pointers and no LD_PRELOAD.
 *
 * It also keeps the byte count since the last scan and the pending scan
 * request (plain atomics): the triggers above (scan_trigger.c) read and
 * clear them, so the allocation path never calls up into the scanner.
 */
#ifndef GCSPY_CORE_H
#define GCSPY_CORE_H

#include "table.h"

void gs_on_alloc(uint64_t addr, uint64_t size, uint32_t stack, unsigned kind, unsigned fn);
void gs_on_alloc_ex(uint64_t addr, uint64_t size, uint32_t stack, unsigned kind, unsigned fn,
                    unsigned device, uint64_t stream, uint64_t dur_ns);
/* Returns 1 when addr was a tracked block (a FREE was recorded). */
int gs_on_free(uint64_t addr);
int gs_on_free_block(uint64_t addr, struct gs_block *out); /* also returns the block */
/* The non-host blocks for which match(addr, arg) says 1 (every one when
 * match is NULL): a context was destroyed and took them along. match runs
 * under a shard lock. */
void gs_drop_device_blocks(int (*match)(uint64_t addr, void *arg), void *arg);
/* realloc: lock the old block's shard before the real realloc, so no other
 * thread can record a new block at the old address before our FREE of it. */
struct gs_shard *gs_on_realloc_begin(uint64_t old);
void gs_on_realloc_end(struct gs_shard *sh, uint64_t old, uint64_t neu, uint64_t size,
                       uint32_t stack);

/* Everything recorded so far, and what is live (TRACE_END's numbers). */
void gs_totals(uint64_t *allocs, uint64_t *frees, uint64_t *bytes, uint64_t *live_blocks,
               uint64_t *live_bytes);
/* A forked child: writes every block it inherited (ALLOC_EX, fn inherited)
 * into its own trace; the counts of events start from zero. */
void gs_events_reemit(void);
void gs_events_atfork_child(void);

/* The pending scan request: its trigger + 1, 0 when none. Set by the byte
 * count here (GCSPY_SCAN_BYTES) and by the scan signal's handler; taken by
 * the writer thread's tick (scan_trigger.c). */
extern atomic_int gs_scan_requested;
/* Bytes allocated since the last scan attempt (the tick resets it). */
extern atomic_uint_fast64_t gs_bytes_since_scan;

#endif /* GCSPY_CORE_H */
