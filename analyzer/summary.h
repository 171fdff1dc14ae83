/*
 * Per-process summaries (summary.c): the few figures of one trace's
 * analysis that a job report needs (identity and rank, leaked bytes by
 * class, the largest leak sites, growth fits, pauses, fragmentation), small
 * enough to be written on the node that made the trace and merged by the
 * thousand elsewhere. A summary is a versioned JSON document
 * (docs/jobs.md): {"format": "gcspy-summary", "version": 1, ...}; a reader
 * refuses another format or a newer major version.
 *
 * A summary made from a trace and the one read back from its file are the
 * same figures: the job report of either is the same text.
 */
#ifndef GCSPY_SUMMARY_H
#define GCSPY_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "result.h"

#define GS_SUMMARY_VERSION 1
#define GS_PSUM_SITES 8
#define GS_PSUM_GROWTH 4
#define GS_PSUM_STR 512

struct gs_psum_site {
    char cls[16];                   /* "definite" "indirect" "possible" */
    uint64_t bytes, blocks;
    char where[GS_PSUM_STR];        /* the innermost frame */
};

struct gs_psum_growth {
    char axis[8];                   /* "step": bytes per step; "time": per second */
    double rate, confidence;
    uint64_t peak_bytes;
    char where[GS_PSUM_STR];
};

struct gs_psum {
    char trace[GS_PSUM_STR * 2], host[256], exe[GS_PSUM_STR];
    uint64_t pid;
    int64_t rank, local_rank, world_size;   /* -1: unset */
    int launcher, complete;
    uint64_t duration_ns, peak_bytes, rss_peak;
    uint64_t leaked_bytes[3], leaked_blocks[3]; /* definite, indirect, possible; unsuppressed */
    struct gs_psum_site sites[GS_PSUM_SITES];   /* by bytes, largest first */
    uint32_t nsites;
    struct gs_psum_growth growth[GS_PSUM_GROWTH]; /* the analysis's order */
    uint32_t ngrowth;
    uint64_t pause_count, pause_total_ns, pause_max_ns;
    uint64_t heap_free_bytes, heap_largest_free;
    double heap_ratio;
};

/* The summary of an analysed trace. */
void gs_psum_from_result(const struct gs_result *r, struct gs_psum *p);
/* Written as JSON by reports/summary_json.h. */

/* The keys of the "leaked" object, in GS_CLASS_ order. */
extern const char *const gs_psum_classes[3];
/* Whether path's first non-blank byte opens a JSON object (a summary, not a
 * trace): 1, 0, or -1 when it cannot be read. */
int gs_psum_is_summary(const char *path);
/* A summary file read back: 0, or -1 with one line in err. */
int gs_psum_read(const char *path, struct gs_psum *p, char *err, size_t errlen);
/* The sum of leaked_bytes. */
uint64_t gs_psum_leaked(const struct gs_psum *p);
/* The first growth fit's rate (0 without one). */
double gs_psum_growth_rate(const struct gs_psum *p);

#endif /* GCSPY_SUMMARY_H */
