/*
 * Snapshots of the live set over the run, for the HTML page's address-space
 * maps, the host heap's free space over time and the devices' allocator
 * states: taken during the one replay (analyze.c calls gs_snaps_clock before
 * each hot record), so a live block here is exactly a live block of the
 * report, and the trace is read once, from a file or a pipe alike.
 *
 * When: the run's length is known only at its end, so the moments lie on a
 * grid that widens as the run goes on. Slot j of the grid is the time
 * j * 2^shift ns (1 <= j < GS_SNAPS); a snapshot of slot j is the live set
 * just before the first allocation or free event at or after its time. When
 * an event lands past the grid, the spacing doubles and the snapshots of odd
 * slots are dropped: the even ones are exactly the new grid's slots. So the
 * run ends with between GS_SNAPS / 2 and GS_SNAPS - 1 snapshots on a grid
 * of even spacing, and one more at the end of the trace. Only allocation and
 * free events count as the clock: they are written in time order per
 * thread, while SAMPLE, MARKER and scan records may be written a flush
 * interval before or after the events of their time.
 *
 * What a snapshot holds, per layer (the host heap's malloc blocks, each
 * device's cudaMalloc and driver blocks, and the PyTorch caching
 * allocator's blocks inside them): its regions (blocks less than
 * GS_REGION_GAP apart) and at most about GS_SNAP_UNITS cells of address
 * space (their width doubles until the layer's span fits), each with the
 * bytes in it, their mean age and the site holding most of it; and the host
 * heap's fragmentation (frag.h). Per device, the blocks of both layers are
 * kept whole at the snapshot with the most device memory and at the end.
 *
 * Cost: walking the live set is what a snapshot costs. The snapshots kept
 * may walk GS_SNAP_BUDGET units in all, spread over the grid (a slot is
 * skipped when taking it would spend more than its share), and all the
 * snapshots taken, dropped ones included, at most four times that: a live
 * set of several hundred thousand blocks gets fewer columns. Memory: the
 * model, plus GS_SNAPS x layers x about GS_SNAP_UNITS small records, plus
 * the devices' two states; never the trace.
 */
#ifndef GCSPY_SNAPSHOTS_H
#define GCSPY_SNAPSHOTS_H

#include <stddef.h>
#include <stdint.h>

#include "blocks.h"
#include "model.h"
#include "result.h"

#define GS_SNAPS 128
#define GS_SNAP_SHIFT0 10               /* the grid's first spacing: 1024 ns */
#define GS_SNAP_UNITS 2048
#define GS_SNAP_MAX_LAYERS (1 + 2 * GS_MAX_DEVICES)
/* a few hundred instructions per live block sorted and binned, an eighth of
 * that per empty slot of the live set walked: about a second */
#define GS_SNAP_BUDGET (12ull << 20)

enum { GS_LAYER_HOST = 0, GS_LAYER_CUDA = 1, GS_LAYER_TORCH = 2 };

/* A cell of address space at one snapshot: [addr, addr + q) of its layer. */
struct gs_unit {
    uint64_t addr;
    float bytes, agesum;    /* agesum: bytes x age in seconds */
    float sitebytes;        /* the largest share one block has in it */
    uint32_t site;          /* that block's stack */
};

/* One layer at one snapshot. */
struct gs_snapl {
    uint64_t q, bytes;      /* cell width; live bytes */
    struct gs_unit *u;
    uint32_t nu, nrg;
    uint64_t (*rg)[2];      /* regions [lo, hi) */
};

struct gs_layer {
    int kind, device;       /* GS_LAYER_*; device -1 for the host */
    struct gs_blkv tmp;     /* the blocks of the snapshot being taken, by address */
    struct gs_snapl s[GS_SNAPS];
};

/* A device's blocks at one moment: its cudaMalloc layer's (segments) and
 * its torch layer's, the largest GS_SNAP_MAX_SEGS and GS_SNAP_MAX_BLOCKS,
 * by address. */
#define GS_SNAP_MAX_SEGS 512
#define GS_SNAP_MAX_BLOCKS 8192
struct gs_devsnap {
    uint64_t t, bytes;
    int have;
    struct gs_blk *segs, *blks;
    uint32_t nsegs, nblks, segs_omitted, blks_omitted;
};

struct gs_snapdev {
    int device;
    int cuda, torch;        /* layer indexes, -1 none */
    struct gs_devsnap peak, end;
};

struct gs_snaps {
    uint64_t due;           /* gs_snaps_clock has work at or after this time */
    unsigned shift;         /* the grid's spacing is 2^shift ns */
    uint32_t next;          /* the first slot not passed yet (GS_SNAPS: none left) */
    uint32_t ns;            /* snapshots kept */
    uint64_t t[GS_SNAPS];
    uint32_t slot[GS_SNAPS];        /* each one's slot (0: the end) */
    uint64_t cost[GS_SNAPS];        /* and what it walked */
    struct gs_heapfrag hf[GS_SNAPS];
    uint64_t kept_cost, spent;
    struct gs_layer *L[GS_SNAP_MAX_LAYERS];
    int nl;
    struct gs_snapdev dev[GS_MAX_DEVICES];
    int ndev;
    int16_t lmap[3][256];   /* layer of (kind, device): 0 unknown, else 1 + index */
    struct gs_blkv scratch; /* the sort's */
    uint32_t *count;        /* the sort's, 65536 */
};

/* NULL when out of memory. */
struct gs_snaps *gs_snaps_new(void);
void gs_snaps_free(struct gs_snaps *s);
/* Before a hot record of time t is fed to m, when t >= s->due. 0, or -1
 * when out of memory. */
int gs_snaps_clock(struct gs_snaps *s, const struct gs_model *m, uint64_t t);
/* After the last record: the snapshot at the end (t_end), and each
 * device's end state. */
int gs_snaps_end(struct gs_snaps *s, const struct gs_model *m, uint64_t t_end);

#endif /* GCSPY_SNAPSHOTS_H */
