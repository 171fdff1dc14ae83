/*
 * The run over time, as the HTML page draws it beyond the JSON report
 * (result.h's history; built only when gs_analyze_opts.history asks): the
 * live set's address space at moments spread over the run, the host heap's
 * free space at each, each device's allocator state at its peak and at the
 * end, each growth suspect's live bytes at the checkpoints its fit used,
 * and every pause. Plain data in the result's arena, gathered during the
 * one replay (snapshots.h, sitelog.h) and finished at its end (history.c,
 * addrmap.c); the HTML reporter only writes it out (docs/html-report.md
 * names the keys).
 */
#ifndef GCSPY_HISTORY_H
#define GCSPY_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"

/* Index values of a site in the maps and states: the sites list's index,
 * or these. */
#define GS_HSITE_OTHER 254      /* a site not in the list */
#define GS_HSITE_NONE 255       /* no bytes */

/* A site the maps colour, named by one frame (stacks.h). */
struct gs_hsite {
    uint32_t stack_id;
    struct gs_frame f;
};

struct gs_hregion {
    uint64_t lo, hi;
    uint32_t row, rows;
};

/* A layer of a map: one byte per cell (rows x snapshots, snapshot-major)
 * for how full it is (0..255), the mean age of its bytes over the run's
 * length (0..255) and its site. */
struct gs_hlayer {
    const char *name;
    uint64_t *live_bytes;           /* per snapshot */
    uint8_t *occ, *age, *site;
};

/* An address-space map: the host heap, or one device's. */
struct gs_hmap {
    const char *name;
    int device;                     /* -1: the host */
    uint32_t rows, regions_total;   /* regions_total: before the fullest were chosen */
    uint64_t omitted_bytes;         /* mean bytes of the regions left out */
    struct gs_hregion *regions;
    uint32_t nregions;
    struct gs_hlayer layers[2];
    uint32_t nlayers;
};

/* A device's segments and the caching allocator's blocks inside them. */
struct gs_hseg {
    uint64_t addr, size;
    uint32_t site;
};
struct gs_hblk {
    int64_t seg;                    /* index into segs; -1: outside every one */
    uint64_t addr, size;
    uint32_t site;
};
struct gs_hstate {
    const char *when;               /* "peak", "end" */
    uint64_t t, bytes;
    uint32_t segs_omitted, blks_omitted;
    struct gs_hseg *segs;
    struct gs_hblk *blks;
    uint32_t nsegs, nblks;
};
struct gs_hdev {
    uint64_t device;
    int cuda_layer, torch_layer;
    struct gs_hstate states[2];
    uint32_t nstates;
};

#define GS_HPAUSE_BINS 40
struct gs_history {
    uint32_t nsnaps;
    uint64_t *snap_t;
    struct gs_hsite *sites;
    uint32_t nsites;
    struct gs_hmap *maps;
    uint32_t nmaps;
    struct gs_hdev *devs;
    uint32_t ndevs;
    /* the host heap at each snapshot (frag.h) */
    struct gs_heapfrag *host_frag;
    /* growth: the suspects' live bytes at the checkpoints of the report's axis */
    struct {
        int axis;
        uint64_t stride;            /* steps between samples (step axis) */
        double *x;
        uint32_t n;
        uint32_t nsites;
        uint32_t *stack_id;
        uint64_t **live_bytes;      /* per site, n values */
    } growth;
    /* every pause the report counts, the longest GS_HPAUSE_MAX when more,
     * by start time; and a histogram of all: bins [2^i, 2^(i+1)) us, the
     * first holding everything shorter than 2 us */
    struct {
        uint64_t count;
        uint32_t shown;
        uint64_t *t, *duration;
        uint32_t *kind;
        uint64_t hist[GS_HPAUSE_BINS];
        uint32_t nbins;             /* up to the last non-empty bin */
    } pauses;
};
#define GS_HPAUSE_MAX 4000

#endif /* GCSPY_HISTORY_H */
