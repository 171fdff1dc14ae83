/*
 * Two runs compared site by site (`gcspy diff A B`, heaptrack -d,
 * memory_viz compare): the sites of two results matched by their stacks as
 * text (every frame's gs_frame_label, so the same code matches across runs
 * whatever the addresses), one value per site summed over the stacks that
 * read the same, and the sites whose value changed: new, gone, grown,
 * shrunk. Reads result.h's sitestats only (gs_analyze_opts.sites).
 */
#ifndef GCSPY_DIFF_H
#define GCSPY_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"

enum { GS_DIFF_NEW, GS_DIFF_GONE, GS_DIFF_GROWN, GS_DIFF_SHRUNK };

struct gs_diff_row {
    char *key;                      /* the stack as text, outermost first */
    const struct gs_sitestat *site; /* one of its sites (B's when in B) */
    uint64_t a, b;
    int status;                     /* GS_DIFF_* */
};

struct gs_diff {
    struct gs_diff_row *v;          /* changed sites, largest rise first */
    size_t n;
    uint64_t total_a, total_b;
    uint64_t rise;                  /* the rises of new and grown sites, summed */
    size_t count[4];                /* by status */
};

/* The value of a site to compare (the caller's: exports.h's gs_sval_get). */
typedef uint64_t (*gs_diff_value_fn)(const struct gs_sitestat *s, int which);

/* 0, or -1 when out of memory. */
int gs_diff_sites(const struct gs_result *a, const struct gs_result *b, gs_diff_value_fn get,
                  int which, struct gs_diff *out);
void gs_diff_free(struct gs_diff *d);
/* "new", "gone", "grown", "shrunk" */
const char *gs_diff_status_name(int status);

#endif /* GCSPY_DIFF_H */
