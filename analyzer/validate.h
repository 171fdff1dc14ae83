/*
 * What a valid trace promises beyond its framing (docs/trace-format.md,
 * "What a valid trace promises"), checked record by record while the replay
 * applies them. The reader (trace_reader.h) checks the bytes; this checks
 * the meaning: PROCESS_START first, definitions (STACK, THREAD_START,
 * MODULE) before their use, frees and reallocs of live blocks only,
 * possible sizes, scan records inside their scan, nothing after TRACE_END.
 *
 * A problem is counted and the first one kept as a one-line message naming
 * the record's byte offset, in the reader's style:
 *   "offset N: chunk K, record at payload offset M: FREE of 0x9000 that is not live"
 * The replay goes on: a malformed trace is still reported, marked as such.
 *
 * Memory: the sets of started threads and of loaded modules (STACK ids are
 * dense, so the highest one defined says which are): bounded by what the
 * trace defines, never by its length.
 */
#ifndef GCSPY_VALIDATE_H
#define GCSPY_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

struct gs_model;

struct gs_idset {           /* a set of u64 ids: open addressing, key + 1 stored */
    uint64_t *slot;
    size_t cap, n;
};

#define GS_PROBLEM_MAX 320

struct gs_validate {
    uint64_t problems;              /* problems found so far */
    char first[GS_PROBLEM_MAX];     /* the first, with its offset; "" when none */
    int have_proc, have_end, before_proc_noted;
    uint64_t max_stack;             /* STACK ids are 1, 2, 3, ... in file order */
    int scan_open;
    uint64_t scan_id;
    struct gs_idset threads, modules;   /* threads: those of index >= GS_TBITS */
#define GS_TBITS 65536u
    uint64_t tbits[GS_TBITS / 64];      /* started threads below GS_TBITS (the
                                         * shim's indexes are dense from 1): a
                                         * bit test on the hot records' path */
    uint64_t unmatched_before;      /* the model's count before the record */
};

void gs_validate_init(struct gs_validate *v);
void gs_validate_free(struct gs_validate *v);

/* Before the model applies r (m: its state so far). Returns 1 when r is to
 * be applied, 0 when it cannot be (an impossible size or address: applying
 * it would only distort the figures), -1 when out of memory. */
int gs_validate_pre(struct gs_validate *v, const struct gs_model *m, const struct gs_record *r);
/* After the model applied r: problems only the replay sees (a free of a
 * block that is not live, in the model's own sense of which block). */
void gs_validate_post(struct gs_validate *v, const struct gs_model *m, const struct gs_record *r);

/* Counts a problem at r (NULL: no record, e.g. the reader's own damage,
 * whose message already names its offset). */
void gs_validate_problem(struct gs_validate *v, const struct gs_record *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "FREE", "ALLOC_EX", ...: the record type's name as docs/trace-format.md
 * gives it, or "type 0xNN" for one this reader does not know; buf holds at
 * least 16 bytes. */
const char *gs_rec_name(uint8_t type, char *buf);

#endif /* GCSPY_VALIDATE_H */
