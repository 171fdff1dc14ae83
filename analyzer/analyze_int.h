/*
 * The analysis's insides (analyze.h is the interface): after the replay,
 * each part of the result is built from the model's end state by its own
 * file, in this order:
 *
 *   process.c   the process, its counts, scans and memory figures
 *   leaks.c     leak groups, reconciled with the last scan
 *   suspects.c  growth suspects from the sites' fits
 *   pauses.c    pause statistics
 *   timeline.c  the time series on one bucket grid, markers
 *   history.c   what the HTML page draws over the run (when asked)
 *
 * Each reads the model and writes only its own part of the result (into the
 * result's arena); the stacks they show are symbolized through one cache.
 */
#ifndef GCSPY_ANALYZE_INT_H
#define GCSPY_ANALYZE_INT_H

#include "analyze.h"
#include "stacks.h"

struct gs_actx {
    const struct gs_model *m;
    struct gs_result *r;
    const struct gs_analyze_opts *o;
    struct gs_stacks stacks;
};

/* Each: 0, or -1 when out of memory. */
int gs_build_process(struct gs_actx *c);
int gs_build_leaks(struct gs_actx *c);
int gs_build_suspects(struct gs_actx *c);
int gs_build_pauses(struct gs_actx *c);
int gs_build_timeline(struct gs_actx *c);
struct gs_snaps;
struct gs_sitelog;
struct gs_siteext;
int gs_build_sites(struct gs_actx *c, const struct gs_siteext *x);   /* sites.c */
int gs_build_history(struct gs_actx *c, const struct gs_snaps *s, const struct gs_sitelog *log);

#endif /* GCSPY_ANALYZE_INT_H */
