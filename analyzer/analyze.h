/*
 * From a trace to a struct gs_result (result.h), in one pass: read
 * (trace_reader.h), check (validate.h), replay (model.h); then the result
 * built from the model's end state (analyze_int.h names the files), with
 * the stacks it shows symbolized, and for the HTML page the run's history
 * (history.h) gathered during the same pass. The pause helpers below are
 * the analysis's own and the history's.
 */
#ifndef GCSPY_ANALYZE_H
#define GCSPY_ANALYZE_H

#include <stddef.h>

#include "growth.h"
#include "model.h"
#include "names.h"
#include "result.h"
#include "symbols.h"
#include "turn.h"
#include "userframe.h"

struct gs_analyze_opts {
    struct gs_model_opts model;
    struct gs_growth_opts growth;
    uint32_t max_groups;        /* leak groups symbolized per class (0: 200) */
    uint32_t all_classes_mask;  /* 1 << class: every group of it symbolized */
    uint32_t max_suspects;      /* growth suspects kept (0: 100) */
    uint32_t max_frames;        /* frames per stack (0: 256) */
    int history;                /* also the run over time for the HTML page
                                   (result.h's history, history.h) */
    int sites;                  /* also every site's figures (result.h's sitestats);
                                   the trace is then read twice (siteext.h
                                   says why), but for standard input */
    uint64_t temp_threshold_ns; /* sites: freed sooner is temporary (0: 1 ms) */
    /* sites: which to keep and symbolize (symbolizing every site of a large
     * run costs seconds): with sites_rank set, a site it ranks 0 is left out,
     * the others are ordered by it, largest first, and only the first
     * sites_max (0: all) are symbolized; NULL: every site, by bytes allocated */
    uint64_t (*sites_rank)(const struct gs_sitestat *s, int which);
    int sites_rank_which;
    uint32_t sites_max;
    int sites_also;             /* 0, or 1 + a second `which`: the first sites_max
                                   by sites_rank(s, it) are symbolized too (the
                                   JSON's peak and temporary views) */
    int sites_pass1;            /* inside: the first read, for the peak's time
                                   and total only (result's peak_t, peak_live) */
    int sites_pass2;            /* inside: the second read, peak at sites_peak_t */
    uint64_t sites_peak_t;
    const struct gs_userframe_opts *userframe; /* the user's code (NULL: defaults) */
    /* traces analysed on several threads with one symbolizer (turn.h):
     * this trace symbolizes in turn turn_index; NULL: one thread */
    struct gs_turn *turn;
    size_t turn_index;
    int pipeline;               /* read on a thread of its own (analyze.c) */
};

void gs_analyze_defaults(struct gs_analyze_opts *o);

/* Analyses the trace at path. Stacks are symbolized with sym (NULL: not at
 * all, their `resolved` stays 0). Returns 0 with *out set (check (*out)->complete:
 * a damaged or cut trace still gives a result; and (*out)->malformed: a trace
 * that breaks its format's promises is replayed whole, its first problem
 * named with its byte offset), or -1 with a one-line
 * message in err when the trace cannot be read at all (missing, not a trace,
 * newer format) or memory runs out. */
int gs_analyze_file(const char *path, const struct gs_analyze_opts *o,
                    struct gs_symbolizer *sym, struct gs_result **out,
                    char *err, size_t errlen);
/* The same for a trace in memory (tests). */
int gs_analyze_mem(const void *data, size_t len, const char *name,
                   const struct gs_analyze_opts *o, struct gs_symbolizer *sym,
                   struct gs_result **out, char *err, size_t errlen);
void gs_result_free(struct gs_result *r);

/* The pauses of a run (pauses.c): PAUSE records, plus those implied by scan
 * timings and synchronous CUDA calls for each kind no PAUSE record covers
 * (so no pause counts twice); of the CUDA calls only the longest cuda_keep.
 * A malloc'd array of *n (NULL when out of memory); *derived gets bit
 * 1 << GS_PAUSE_SCAN / GS_PAUSE_CUDA_SYNC for kinds taken from timings. */
struct gs_pause *gs_pauses_gather(const struct gs_model *m, size_t cuda_keep, size_t *n,
                                  unsigned *derived);
/* Orders pauses longest first (qsort). */
int gs_pause_len_desc(const void *a, const void *b);
/* Pause statistics over pauses v[0..n) (pauses.c); v is sorted in place. */
int gs_pauses_compute(struct gs_pause *v, size_t n, uint64_t wall_ns,
                      struct gs_pause_stats *out);

#endif /* GCSPY_ANALYZE_H */
