/*
 * What the exports (pprof.c, collapsed.c) and the site views (siteview.c)
 * share: the per-site values they can show (frames are named by fmt.h's
 * gs_frame_label, so a site reads the same in a flame graph, in pprof and
 * in `gcspy diff`).
 * They all read result.h's sitestats, which `gcspy report` asks the analysis
 * for (gs_analyze_opts.sites) when one of these formats is chosen.
 */
#ifndef GCSPY_EXPORTS_H
#define GCSPY_EXPORTS_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* The values of a site, by name (docs/exports.md). */
enum gs_siteval {
    GS_SV_LEAKED = 0,       /* definite + indirect bytes, not suppressed */
    GS_SV_LEAKED_BLOCKS,
    GS_SV_PEAK,             /* live bytes when the total peaked */
    GS_SV_PEAK_BLOCKS,
    GS_SV_ALLOCS,           /* allocations made */
    GS_SV_ALLOC_BYTES,
    GS_SV_TEMP,             /* temporary allocations (freed within the threshold) */
    GS_SV_TEMP_BYTES,
    GS_SV__N
};

/* "leaked", "leaked-blocks", "peak", ...; NULL past the end. */
const char *gs_sval_name(int v);
/* The value named s, or -1. */
int gs_sval_find(const char *s);
uint64_t gs_sval_get(const struct gs_sitestat *s, int v);

/* Frames are named by gs_frame_label (analyzer/fmt.h). */
#include "../analyzer/fmt.h"

/* Sites the peak and temporary views list when --max-groups is not given. */
#define GS_SITEVIEW_ROWS 20

/* The sites of r with a nonzero value v, largest first (ties by stack id),
 * as the views list them; *n of them; NULL when out of memory. */
const struct gs_sitestat **gs_siteview_sorted(const struct gs_result *r, int v, size_t *n);
/* The rank that keeps and orders the sites the JSON's views need
 * (analyze.h's sites_rank): with GS_SV_PEAK, those live at the peak by
 * bytes, then those with temporary allocations only; otherwise the value. */
uint64_t gs_siteview_rank(const struct gs_sitestat *s, int which);

extern const struct gs_reporter gs_reporter_pprof;
extern const struct gs_reporter gs_reporter_collapsed;
extern const struct gs_reporter gs_reporter_peak;
extern const struct gs_reporter gs_reporter_temporary;

#endif /* GCSPY_EXPORTS_H */
