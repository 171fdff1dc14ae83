/*
 * The analysis of one trace, as the reporters and the CI gate see it: plain
 * data, independent of the replay model that produced it, and laid out the
 * way the JSON report (docs/report-json.md) is, so that every reporter and
 * `gcspy check` work from the same figures; reporters only serialize it.
 * Everything hangs off the result's arena except frame strings, which live
 * in the symbolizer's arena (shared between traces; it must outlive the
 * results). The HTML page's extra data is the history (history.h).
 */
#ifndef GCSPY_RESULT_H
#define GCSPY_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "model.h"
#include "names.h"

struct gs_history;

struct gs_frame {
    const char *function;   /* NULL: not resolved */
    const char *file;       /* NULL: unknown */
    const char *module;     /* module path; NULL: none (Python frames, unknown ips) */
    uint64_t ip;            /* as recorded */
    uint64_t offset;        /* ip - module load bias */
    uint32_t line;          /* 0: unknown */
    uint8_t python;         /* a Python frame (function/file/line from PYCODE) */
    uint8_t inlined;        /* inlined into the next frame outwards */
};

struct gs_stackv {
    struct gs_frame *f;
    uint32_t n;
    uint32_t resolved;      /* symbolization was attempted */
};

/* Leaks grouped by allocation stack, class, memory category. */
struct gs_leak {
    int cls;                /* GS_CLASS_* or GS_RC_NOT_FREED */
    int mem;                /* GS_MC_* */
    int inherited;          /* GS_FN_INHERITED blocks: allocated in the parent */
    int torch;              /* blocks of PyTorch's caching allocator: tensors'
                               storage inside segments (JSON "allocator": "torch") */
    uint64_t bytes, blocks, largest;
    uint32_t stack_id;
    int32_t first_scan;     /* index into scans where it became unreachable; -1 */
    struct gs_stackv st;
    const char *suppressed; /* the matching suppression, or NULL */
};

struct gs_cell {
    uint64_t bytes, blocks;
};

/* One allocation site's figures for the exports and the peak and temporary
 * views (sites.c; docs/exports.md), when gs_analyze_opts.sites asks. */
struct gs_sitestat {
    uint32_t stack_id;
    int mem;
    uint64_t allocs, alloc_bytes;
    uint64_t max_bytes;             /* the site's own highest live bytes */
    uint64_t at_peak_bytes, at_peak_blocks; /* live at peak_t */
    uint64_t live_bytes, live_blocks;       /* at the end */
    uint64_t temp_allocs, temp_bytes;       /* freed within temp_threshold_ns */
    uint64_t leaked_bytes, leaked_blocks;   /* definite + indirect, not suppressed */
    struct gs_frame site;           /* the frame that names it (stacks.h) */
    struct gs_stackv st;
};

struct gs_suspect {
    uint32_t stack_id;
    int mem;
    int axis;               /* GS_AXIS_STEP: rate in bytes/step; TIME: bytes/s */
    double rate, confidence;
    double points, x0, x1;  /* the fit window */
    uint64_t start_bytes, peak_bytes, end_bytes, live_blocks, allocs;
    struct gs_stackv st;
    const char *suppressed;
    int32_t finding;        /* the growth finding it is part of (findings.c); -1 none */
};

#define GS_NPCT 4
#define GS_NLONGEST 10
#define GS_NMMU 13
struct gs_pause_stats {
    uint64_t count, total_ns, union_ns, wall_ns;
    double share;
    uint64_t pct_ns[GS_NPCT];                   /* p50 p90 p99 max */
    struct { uint64_t count, total_ns, max_ns; } by_kind[GS_PAUSE_KINDS];
    struct gs_pause longest[GS_NLONGEST];
    uint32_t nlongest;
    struct { uint64_t window_ns; double mmu; int valid; } mmu[GS_NMMU];
    const char *sources;    /* which records the pauses came from */
};

struct gs_heapfrag {
    uint64_t regions, blocks, bytes, gaps, free_bytes, largest_free;
    uint64_t mmapped_blocks, mmapped_bytes;
    double ratio;
};

struct gs_timeline {
    uint64_t bucket_ns;
    uint32_t nb;
    /* GS_CH__N channels of nb values; UINT64_MAX: no value yet */
    uint64_t *ch[GS_CH__N];
    uint32_t ndev;
    struct { uint64_t device, kind; uint64_t *ch[GS_DCH__N]; } dev[GS_MAX_DEVICES];
    struct gs_marker *markers;      /* kept steps and user markers, by time */
    uint32_t nmarkers;
    uint64_t step_stride, user_stride;
};

/* One row per allocation site (findings.c): the leak groups of one stack,
 * memory category, layer and inheritance, with the classes side by side
 * (a site's blocks split between classes by what happened to point at
 * them, not by where they came from). */
struct gs_leaksite {
    uint32_t stack_id;
    int mem, inherited, torch;
    int worst;                      /* the worst class present (lowest GS_CLASS_*) */
    struct gs_cell cls[GS_RC__N];   /* bytes/blocks by class */
    uint64_t largest;
    struct gs_stackv st;            /* the stack (unresolved when no group of it was) */
    int32_t user;                   /* index of the user's frame in st; -1 none */
    int noise;                      /* GS_NOISE_* (userframe.h) */
    const char *suppressed;         /* the suppression its groups matched, or NULL */
    int32_t finding;                /* the finding it is part of; -1 none */
    int32_t first_scan;             /* the earliest of its groups' (gs_leak) */
};

/* The headline findings (findings.c), largest first. */
enum { GS_FIND_LEAK = 0, GS_FIND_GROWTH, GS_FIND_NOISE, GS_FIND_FRAG, GS_FIND__N };
struct gs_finding {
    int kind;                       /* GS_FIND_* */
    int cls;                        /* LEAK, NOISE: the worst class of its sites */
    int mem;                        /* GS_MC_* */
    uint64_t bytes, blocks;         /* LEAK, NOISE: lost bytes (definite+indirect+
                                       possible); GROWTH: the rise over the fit
                                       window; FRAG: free bytes wasted (outside
                                       the largest free piece) */
    struct gs_cell cls_cells[GS_CLASS__N]; /* LEAK, NOISE: by scanner class */
    int axis;                       /* GROWTH: GS_AXIS_* */
    double rate;                    /* GROWTH: bytes per step or second, summed */
    int freed_at_exit;              /* GROWTH: nothing of it live at the end */
    uint64_t live_end;              /* GROWTH: bytes of it live at the end */
    double ratio;                   /* FRAG: wasted / free */
    uint64_t total;                 /* FRAG: the span the free bytes lie in */
    uint64_t free_bytes;            /* FRAG: all free bytes in it */
    const struct gs_frame *user;    /* the user's frame; NULL: none found */
    const struct gs_frame *where;   /* the allocation's first named frame */
    uint32_t nsites;                /* sites (LEAK, NOISE) or suspects (GROWTH) */
    uint32_t first;                 /* index of the largest into sites or suspects */
    int noise;                      /* NOISE: GS_NOISE_* origin */
    uint32_t id;                    /* its place before ranking (findings.c) */
};

/* How a process's leak figures stand (gs_result.leak_status). */
enum {
    GS_LS_SCANNED = 0,      /* the classes come from the trace's last scan */
    GS_LS_NO_SCAN = 1,      /* no scan ended in the trace: killed, _exit, the
                               scan skipped or turned off; its live blocks
                               are only "not freed", no leak is known or ruled out */
    GS_LS_EXEC = 2,         /* no scan, but the trace ended by exec: a clean
                               end; the exec released the blocks live then
                               (released_by_exec), the new image's trace
                               carries the verdict */
};

struct gs_result {
    struct gs_arena arena;
    const char *trace;              /* the path given */

    /* process */
    int have_proc;
    uint64_t pid, ppid, wall_ns, flags;
    int64_t rank, local_rank, world_size;   /* -1: unset */
    const char *exe, *command, *host, *version;
    const char **argv;
    uint32_t argc;

    /* completeness */
    int complete;
    const char *damage;             /* NULL when complete */
    /* the format's promises (validate.h): a malformed trace breaks one, by
     * its content or by damage other than a cut at the end of the file */
    int malformed;
    uint64_t problems;              /* how many were found */
    const char *problem;            /* the first, naming its byte offset; NULL: none */
    uint64_t chunks, bytes_read;
    int have_stopped;
    uint64_t stopped_dropped, t_stopped;
    const char *stopped_reason;
    int have_exit;
    int64_t exit_status;
    uint64_t exit_how, t_exit;
    const char *exec_path;
    /* the trace ends at an exec that succeeded (EXEC with no allocation or
     * free after it in time, no TRACE_END): complete, have_exit with
     * exit_how GS_EXIT_EXEC */
    int ended_by_exec;
    uint64_t duration_ns;

    /* counts */
    uint64_t records, allocs, frees, reallocs, bytes_allocated, unmatched_frees,
        replaced_allocs, bad_records, threads, freed_after_scan, incomplete_scans;
    uint64_t peak_bytes[GS_MC__N], peak_total, live_bytes_end[GS_MC__N];
    uint64_t rss_peak, rss_last;

    /* scans */
    struct gs_scan *scans;
    uint32_t nscans;
    int32_t last_scan;              /* index into scans; -1 none */

    /* leaks */
    int leak_status;                /* GS_LS_* */
    struct gs_cell released_by_exec;/* ended by exec: blocks live then that no
                                       scan classified (not in summary) */
    struct gs_leak *leaks;          /* every group, sorted: class, then bytes */
    uint32_t nleaks;
    struct gs_cell summary[GS_RC__N][GS_MC__N];
    struct gs_cell inherited[GS_RC__N];
    struct gs_cell suppressed[GS_RC__N];   /* filled by gs_suppress_apply */

    /* one row per allocation site and the headline findings (findings.c,
     * after suppressions): every view's totals come from these and the
     * summary, suppressed bytes always apart */
    struct gs_leaksite *sites;          /* sorted: lost bytes, then all bytes */
    uint32_t nsites;
    struct gs_finding *findings;
    uint32_t nfindings;

    /* growth */
    int growth_axis;
    uint32_t growth_checkpoints;
    uint64_t steps;
    struct gs_suspect *suspects;
    uint32_t nsuspects;

    /* fragmentation */
    int have_host_samples;
    uint64_t samples;
    uint64_t mi_arena, mi_inuse, mi_free, mi_toppad, mi_hblkhd, mi_peak_arena, mi_peak_free;
    struct gs_heapfrag heap;
    uint32_t ndev;
    struct gs_devstate dev[GS_MAX_DEVICES];  /* series field not used here */
    /* PyTorch's caching allocator: the torch layer (tensors' storage inside
     * CUDA segments, never added to the device totals) at the end and at its
     * peak, and the latest complete snapshot's figures per device */
    uint64_t torch_live_bytes, torch_live_blocks, torch_peak_bytes;
    uint64_t pool_snapshots, pool_incomplete;
    uint32_t npool;
    struct gs_poolfig pool[GS_MAX_DEVICES];

    /* pauses */
    struct gs_pause_stats pauses;

    struct gs_timeline tl;

    /* the allocation sites (sites.c): every one, largest allocated bytes
     * first, or those gs_analyze_opts.sites_rank keeps, by rank; NULL unless
     * gs_analyze_opts.sites asked. A site past sites_max has no frames */
    struct gs_sitestat *sitestats;
    uint32_t nsitestats;
    int sites_incomplete;           /* out of memory while replaying: partial */
    int peak_known;                 /* peak_t and at_peak found (a file, read twice) */
    uint64_t peak_t, peak_live;     /* when the live total peaked, in time order
                                       (siteext.h), and that total */
    uint64_t temp_threshold_ns, temp_allocs, temp_bytes;

    /* the run over time, for the HTML page (history.h); NULL unless
     * gs_analyze_opts.history asked for it */
    const struct gs_history *history;
};

#endif /* GCSPY_RESULT_H */
