/*
 * The replay model of one trace: everything the analyses need, built in one
 * streaming pass over the records (gs_model_feed), in memory bounded by the
 * live set and the aggregates, never by the length of the trace.
 *
 *   live set     addr -> (size, stack, kind, fn, device, t), open addressing
 *   stacks       the STACK tree, each node with the module its ip fell in
 *                when the node was defined (modules can be unloaded later)
 *   sites        per allocation stack: live bytes now, growth fit sums
 *   scans        the last complete scan's classified blocks, the one before
 *                it (to see which blocks are newly unreachable), and the
 *                scan being read
 *   time series  live bytes per memory kind, RSS, glibc arena figures, device
 *                allocator figures, all bucketed (series.h)
 *   pauses       every pause interval (scan, CUDA sync, Python GC)
 *   pool         PyTorch's caching allocator: the latest complete snapshot's
 *                figures per device (never the snapshots themselves), and
 *                the snapshot being read
 *   site log     when the caller hands one (the HTML page's history): every
 *                site's value at the growth checkpoints (sitelog.h)
 *
 * The replay's files are listed in model_int.h.
 *
 * Blocks are keyed by (address, domain): host malloc-family blocks, CUDA
 * allocations and PyTorch caching-allocator blocks are separate layers and a
 * PyTorch block may start at the same address as the cudaMalloc segment that
 * holds it. The PyTorch layer is memory allocated inside those segments, not
 * more memory: its bytes are kept apart (torch_live_bytes), never added to
 * the per-kind totals, so device totals are the segments (reserved). A
 * caching-allocator snapshot (POOL_* records) replaces that layer whole once
 * its last record is read.
 *
 * Records of one address arrive in event order, so the live set is always
 * exact in file order; records of different addresses may be out of time
 * order by a flush interval, which only blurs the time series and checkpoints
 * by that much.
 */
#ifndef GCSPY_MODEL_H
#define GCSPY_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "growth.h"
#include "series.h"
#include "tbuckets.h"
#include "trace_reader.h"

enum gs_domain { GS_DOM_HOST = 0, GS_DOM_CUDA = 1, GS_DOM_TORCH = 2 };

/* Report memory categories: the leak report's "memory" (VMM ranges are
 * device memory). */
enum gs_memcat { GS_MC_HOST = 0, GS_MC_PINNED, GS_MC_MANAGED, GS_MC_DEVICE, GS_MC__N };
/* Report classes: the scanner's four and "not freed at exit". */
enum { GS_RC_NOT_FREED = GS_CLASS__N, GS_RC__N };

static inline int gs_memcat_of(uint64_t kind)
{
    switch (kind) {
    case GS_MEM_PINNED: return GS_MC_PINNED;
    case GS_MEM_MANAGED: return GS_MC_MANAGED;
    case GS_MEM_DEVICE: case GS_MEM_VMM: return GS_MC_DEVICE;
    default: return GS_MC_HOST;
    }
}

struct gs_live {            /* 32 bytes; addr 0 marks an empty slot */
    uint64_t addr;
    uint64_t size;
    uint64_t t;
    uint32_t stack;         /* 0: unknown */
    uint8_t kind, fn, device, dom;
};

struct gs_livemap {
    struct gs_live *slot;
    size_t cap;             /* power of two */
    size_t n;
};

/* A block a scan classified. */
struct gs_sblock {          /* 32 bytes */
    uint64_t addr;
    uint64_t size;
    uint32_t stack;
    uint8_t kind, cls, used;
    uint8_t torch;          /* SCAN_BLOCK fn torch: a caching-allocator block */
    uint32_t first_scan;    /* index (in m->scans) of the first scan that found
                               it unreachable; for unreachable classes only */
    uint32_t pad2;
};

struct gs_smap {
    struct gs_sblock *slot;
    size_t cap, n;
};

/* Scan maps are keyed by (address, memory category); caching-allocator
 * blocks have a key of their own, since one may start at the address of the
 * segment (a device block) that holds it. */
#define GS_SCAN_KEY_TORCH GS_MC__N

/* One device's figures in a caching-allocator snapshot (POOL_* records). */
struct gs_poolfig {
    uint64_t device, snap_id, t, reason;            /* reason: GS_POOL_WHY_* */
    uint64_t segments, reserved;                    /* reserved: sum of segment sizes */
    uint64_t active_blocks, active_bytes;           /* live tensors' storage */
    uint64_t requested;                             /* of the active blocks */
    uint64_t pending_blocks, pending_bytes;         /* freed, waiting on a stream */
    uint64_t inactive_blocks, inactive_bytes;       /* cached free: reserved, no leak */
    uint64_t largest_inactive;
    uint64_t events, events_by[GS_PEV__N];          /* allocator history, by action */
};

struct gs_poolsnap;          /* the snapshot being read (model_pool.c) */
struct gs_sitelog;
struct gs_siteext;

struct gs_stacknode {
    uint64_t ip;
    uint32_t parent;
    uint32_t module;        /* 1 + index into m->mods; 0: none (or Python) */
};

struct gs_module {
    uint64_t id, base, t_load, t_unload;
    int unloaded;
    char *path;
    uint8_t *build_id;
    size_t build_id_len;
    uint32_t nseg;
    struct { uint64_t vaddr, memsz, flags; } seg[GS_MAX_SEGS];
};

/* Kept in a table keyed by id + 1 (idtab.h), not indexed by id: ids are
 * the program's (up to 2^31), and a trace naming a few far apart must not
 * cost memory in proportion to the largest. */
struct gs_pycode {
    uint32_t key;           /* id + 1; 0: an empty slot */
    char *file, *function;
    uint64_t firstline;
};

struct gs_pause {
    uint64_t t0, t1, a, b;
    uint32_t kind;          /* enum gs_pause_kind */
    uint32_t pad;
};

struct gs_pauses {
    struct gs_pause *v;
    size_t n, cap;
};

#define GS_LABEL_MAX 96

struct gs_scan {
    uint64_t id, trigger, mode, t_begin;
    uint64_t t_start, t_stopped, t_marked, t_end, threads, bytes_scanned,
        blocks_visited, live_blocks, live_bytes;
    uint64_t cls_blocks[GS_CLASS__N], cls_bytes[GS_CLASS__N];
    uint64_t unreadable_bytes; /* bytes of blocks the scan could not read */
    /* unreachable now and not in the previous scan: the interval's leaks */
    uint64_t new_blocks, new_bytes;
    /* what happened between the previous scan and this one */
    uint64_t steps_before, steps_at;          /* step ordinals at both ends */
    uint64_t user_markers;                    /* user markers in the interval */
    char first_marker[GS_LABEL_MAX];          /* first and last user marker in it */
    char last_marker[GS_LABEL_MAX];
    char marker_before[GS_LABEL_MAX];         /* last marker of any kind before it */
};

struct gs_marker {
    uint64_t t, ordinal;
    uint32_t kind;
    char label[GS_LABEL_MAX];
};

/* Markers of one kind, thinned by a doubling stride so at most
 * GS_MARKERS_KEPT are held: marker k is kept when k % stride == 0. */
#define GS_MARKERS_KEPT 2048u
struct gs_markerlog {
    struct gs_marker *v;
    size_t n;
    uint64_t stride, seen;
};

/* Channels of the process series. */
enum {
    GS_CH_HOST = 0, GS_CH_PINNED, GS_CH_MANAGED, GS_CH_DEVICE, GS_CH_TOTAL,
    GS_CH_RSS, GS_CH_ARENA, GS_CH_INUSE, GS_CH_FREE, GS_CH_TOPPAD, GS_CH__N
};
/* Channels of a device series. */
enum { GS_DCH_RESERVED = 0, GS_DCH_INUSE, GS_DCH_SEGMENTS, GS_DCH_LARGEST, GS_DCH__N };

#define GS_MAX_DEVICES 32
struct gs_devstate {
    uint64_t device, kind;
    uint64_t samples;
    uint64_t reserved, in_use, segments, largest_free;      /* last sample */
    uint64_t peak_reserved, peak_in_use, max_segments;
    double worst_ratio;                 /* highest fragmentation ratio seen */
    uint64_t worst_t, worst_free, worst_largest;
    struct gs_series series;
};

/* An allocation site, split hot and cold: the 48 bytes every event of the
 * site touches, and the growth fit (m->site_ax, GS_AXIS__N per site),
 * touched only when a checkpoint has passed since the site's last event. */
struct gs_site {
    int64_t live_bytes;
    uint64_t live_blocks;
    uint64_t peak_bytes;
    uint64_t allocs;
    uint32_t stack;
    uint32_t last_cp[GS_AXIS__N];   /* copies of the axes' last_cp */
    uint8_t memcat;                 /* of the site's first block */
    uint8_t pad[3];
};

struct gs_model_opts {
    uint64_t cuda_pause_ns;     /* a synchronous CUDA call this long is a pause */
};

struct gs_model {
    struct gs_model_opts opts;
    /* format 2.0 on, a POOL snapshot's history events are those newer than
     * the last snapshot's, summed here; 1.x repeated the whole history, the
     * last snapshot's count holding (set by the caller from the trace's
     * version; gs_model_init: 1) */
    int pool_events_delta;

    /* PROCESS_START (strings owned, NUL-terminated) */
    int have_proc;
    uint64_t pid, ppid, wall_ns, rank1, local_rank1, world_size1, pflags,
        unwinder, depth, page_size;
    char *exe, *argv, *host, *version;
    size_t argv_len;
    /* PROCESS_EXIT, EXEC, STOPPED, TRACE_END */
    int have_exit;
    int64_t exit_status;
    uint64_t exit_how, t_exit;
    char *exec_path;
    uint64_t t_exec;                /* the last EXEC record's time */
    int have_stopped;
    uint64_t stopped_dropped, t_stopped;
    char *stopped_reason;
    int have_end;
    uint64_t end_t, end_allocs, end_frees, end_bytes_allocated, end_live_blocks,
        end_live_bytes;

    /* counters */
    uint64_t records, allocs, frees, reallocs, bytes_allocated;
    uint64_t unmatched_frees, replaced_allocs, bad_records;
    uint64_t t_max;
    uint64_t threads;

    /* live set and per-kind totals */
    struct gs_livemap live;
    uint64_t live_bytes[GS_MC__N], live_blocks[GS_MC__N];
    uint64_t live_total;
    /* peaks, order-free (tbuckets.h: the file is in time order per address
     * only): per memory class, then the total; and the largest block of
     * each class, a peak is never less */
    struct gs_tbuckets peak_tb[GS_MC__N + 1];
    uint64_t max_block[GS_MC__N], max_block_t[GS_MC__N]; /* and when it was made */

    /* stacks, sites, modules, Python code objects */
    struct gs_stacknode *nodes;
    uint32_t nnodes;
    uint32_t max_stack_id;          /* highest STACK id defined so far */
    uint32_t *site_of;              /* stack id -> 1 + site index; 0 none */
    uint32_t site_of_cap;
    struct gs_site *sites;
    struct gs_axis *site_ax;        /* GS_AXIS__N per site */
    uint32_t nsites, sites_cap;
    struct gs_module *mods;
    uint32_t nmods, mods_cap;
    int segs_dirty;                 /* the lookup table below needs a rebuild */
    struct gs_segref { uint64_t lo, hi; uint32_t mod; } *segs;
    uint32_t nsegs, segs_cap;
    struct gs_pycode *pycodes;  /* idtab.h table of pycap slots */
    size_t npycodes, pycap;

    /* scans */
    struct gs_scan *scans;          /* every complete scan, in order */
    uint32_t nscans, scans_cap;
    int in_scan;
    struct gs_scan cur_scan;
    struct gs_smap cur, last;       /* being read; the last complete one */
    uint64_t incomplete_scans;

    /* markers */
    struct gs_markerlog steps, users;
    uint64_t nsteps, nusers;
    char last_label[GS_LABEL_MAX];
    uint64_t int_users;                     /* since the last scan */
    char int_first[GS_LABEL_MAX], int_last[GS_LABEL_MAX];
    uint64_t steps_at_last_scan;

    /* growth checkpoints (growth.h) */
    struct gs_cps cps[GS_AXIS__N];
    struct gs_sitelog *sitelog;     /* every site's value at them (sitelog.h);
                                       NULL: not kept. The caller's. */
    struct gs_siteext *ext;         /* per-site extras for the exports and the
                                       peak and temporary views (siteext.h);
                                       NULL: not kept. The caller's. */
    int peak_only;                  /* the sites' first read (analyze.c): the
                                       live set and ext's peak buckets only,
                                       no sites (nothing else of the model
                                       reads them) */
    uint64_t next_step_cp;          /* step ordinal of the next step checkpoint */
    uint64_t next_tick;             /* time of the next time checkpoint */

    /* samples */
    struct gs_series series;
    uint64_t samples;
    uint64_t rss_last, rss_peak;
    uint64_t mi_arena, mi_inuse, mi_free, mi_toppad, mi_hblkhd;   /* last */
    uint64_t mi_peak_arena, mi_peak_free;
    struct gs_devstate dev[GS_MAX_DEVICES];
    uint32_t ndev;

    /* pauses */
    struct gs_pauses pauses;        /* PAUSE records */
    struct gs_pauses cuda_calls;    /* synchronous CUDA calls above threshold */
    struct gs_pauses scan_pauses;   /* from SCAN_END timings */

    /* PyTorch's caching allocator: the torch layer's totals (ALLOC_EX fn
     * torch and snapshot blocks alike), and the latest complete snapshot's
     * figures, one per device it named, by device */
    uint64_t torch_live_bytes, torch_live_blocks, torch_peak_bytes;
    struct gs_poolfig pool[GS_MAX_DEVICES];
    uint32_t npool;
    uint64_t pool_snapshots;        /* complete snapshots applied */
    uint64_t pool_incomplete;       /* snapshots whose records never all came */
    struct gs_poolsnap *psnap;      /* the one being read; NULL none */
};

int gs_model_init(struct gs_model *m, const struct gs_model_opts *o);
/* The largest live total of memory class mc (GS_MC__N: all classes) at a
 * tick of the events' clock, and never less than the class's largest block
 * (tbuckets.h says why not the running total in file order). */
uint64_t gs_model_peak(const struct gs_model *m, int mc);
/* Applies one record; returns 0, or -1 when out of memory. */
int gs_model_feed(struct gs_model *m, const struct gs_record *rec);
/* Memory-level parallelism for the hot records: the caller reads a few
 * records ahead and calls this with stage 0 for the newest (fetches the
 * live-set slot and the site index) and stage 1 for one halfway to being
 * fed (fetches the site), so feeding them finds their cache lines warm.
 * Only a hint: any state of the model is fine. */
void gs_model_prefetch(const struct gs_model *m, const struct gs_record *r, int stage);
/* After the last record: final growth flush and series extent. */
int gs_model_finish(struct gs_model *m);
void gs_model_free(struct gs_model *m);

/* Lookups for the analyses. */
const struct gs_live *gs_model_live_find(const struct gs_model *m, uint64_t addr, int dom);
const struct gs_stacknode *gs_model_node(const struct gs_model *m, uint32_t id);
const struct gs_pycode *gs_model_pycode(const struct gs_model *m, uint64_t id);
/* The block of the last complete scan at (addr, memory category, or
 * GS_SCAN_KEY_TORCH for caching-allocator blocks), or NULL. */
const struct gs_sblock *gs_model_scan_find(const struct gs_model *m, uint64_t addr, int mc);
/* The module (loaded or since unloaded; the latest loaded wins) whose
 * segments held code address a, or NULL: for stacks defined before their
 * module's record. */
const struct gs_module *gs_model_module_any(const struct gs_model *m, uint64_t a);

/* Hashing shared by the maps. */
static inline uint64_t gs_hash_addr(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdull;
    a ^= a >> 33;
    return a;
}

#endif /* GCSPY_MODEL_H */
