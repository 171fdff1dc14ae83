/*
 * What the CUPTI subscriber does with what CUPTI hands it, kept apart from
 * the subscription itself (subscriber.c) so that it runs without a GPU: the
 * unit tests (tests/unit/test_cupti.c) feed it synthetic callback data and
 * activity buffers and watch the calls it makes through struct gs_cupti_ops.
 *
 * Two sources, one trace:
 *  - API callbacks (runtime and driver domains, allocation and free calls
 *    only) run on the calling thread: allocations are recorded on API exit
 *    when the call succeeded, with the caller's stack; frees on API entry,
 *    before the memory can be handed out again. Calls nested inside another
 *    subscribed call (the runtime's cudaMalloc reaching cuMemAlloc_v2) are
 *    the outer call's business: one call, one event.
 *  - Activity records (MEMORY2, MEMORY_POOL) arrive later, in buffers, on
 *    another thread. They show what no API call shows (graph memory nodes,
 *    memory a context takes with it), but they also repeat every call the
 *    callbacks saw. Each event a callback handled leaves a pending entry
 *    (address, allocations, frees); a record that finds its entry is a
 *    repeat and is dropped, anything else goes to the bridge. Records for
 *    one address come in the order of the events, so counting is enough.
 *
 * The bridge (include/gcspy/bridge.h) drops an event for an address it
 * already tracks and any call made inside one of the shim's own hooks: what
 * a PLT hook recorded is not recorded again.
 *
 * Addresses this file keeps (pending entries, pools) are stored complemented:
 * the leak scanner takes this library's data as a root, and a plain device
 * address there would make that block look reachable forever.
 */
#ifndef GCSPY_CUPTI_RECORDS_H
#define GCSPY_CUPTI_RECORDS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cupti.h>

/* Everything the handlers call: the bridge, and the two CUPTI services they
 * need. subscriber.c fills it from libgcspy.so and libcupti; tests fake it. */
struct gs_cupti_ops {
    int (*device_alloc)(uint64_t addr, uint64_t size, unsigned kind, unsigned fn,
                        unsigned device, uint64_t stream, uint64_t dur_ns, int with_stack);
    int (*device_free)(uint64_t addr);
    void (*pause)(uint64_t t_start_ns, uint64_t t_end_ns, unsigned kind, uint64_t a, uint64_t b);
    void (*device_sample)(unsigned device, unsigned kind, uint64_t reserved, uint64_t in_use,
                          uint64_t segments, uint64_t largest_free);
    uint64_t (*now_ns)(void);
    CUptiResult (*next_record)(uint8_t *buffer, size_t valid, CUpti_Activity **record);
    CUptiResult (*device_id)(CUcontext ctx, uint32_t *device);
};

#define GS_CUPTI_PENDING   65536u /* pending entries (power of two) */
#define GS_CUPTI_INFLIGHT  256u   /* allocation calls in flight, all threads */
#define GS_CUPTI_POOLS     256u   /* stream-ordered memory pools */
#define GS_CUPTI_SYNC_NS   50000u /* calls this long are CUDA_SYNC pauses (as the hooks) */
/* A pending entry is stale, and dropped, once records 2 s newer than it
 * have been handled, or once a flush that began 1 s after it was made has
 * delivered every record (memory records are complete when written). With
 * the table 3/4 full anyway, entries older than 60 s go too. */
#define GS_CUPTI_STALE_NS       2000000000ull
#define GS_CUPTI_FLUSHED_NS     1000000000ull
#define GS_CUPTI_ABANDON_NS    60000000000ull
/* How long a record waits for the exit callback of the call that made it. */
#define GS_CUPTI_WAIT_NS        200000000ull

/* What one record did (gs_cupti_on_record's result). */
enum gs_cupti_outcome {
    GS_CUPTI_IGNORED = 0,  /* not a record kind or memory kind we use */
    GS_CUPTI_REPEAT = 1,   /* an event a callback already handled */
    GS_CUPTI_SENT = 2,     /* passed to the bridge (which may still drop it) */
    GS_CUPTI_SAMPLED = 3,  /* pool figures: a DEVICE_SAMPLE */
};

struct gs_cupti_stats {
    atomic_ulong api_events;     /* top-level callbacks that made a bridge call */
    atomic_ulong api_nested;     /* callbacks inside another subscribed call */
    atomic_ulong api_failed;     /* allocation calls that returned an error */
    atomic_ulong records;        /* activity records seen */
    atomic_ulong repeats;        /* ... already handled by a callback */
    atomic_ulong sent;           /* ... passed to the bridge */
    atomic_ulong ignored;        /* ... of no use */
    atomic_ulong pool_samples;
    atomic_ulong pending_stale;  /* pending entries dropped unmatched */
    atomic_ulong pending_full;   /* events with no room for a pending entry */
    atomic_ulong waits;          /* records that waited for their exit callback */
    atomic_ulong dropped;        /* records CUPTI says it dropped */
};

struct gs_cupti_pend {
    uint64_t key;     /* ~address; 0: empty slot */
    uint32_t allocs;  /* allocation events not yet matched by a record */
    uint32_t frees;
    uint64_t t_ns;    /* gcspy time of the last event */
};

struct gs_cupti_pool {
    uint64_t key;     /* ~pool base address; 0: empty */
    uint32_t device;
    uint64_t size, used;
};

struct gs_cupti {
    const struct gs_cupti_ops *ops;
    int activity;     /* MEMORY2 records are on: callbacks leave pending entries */
    int vmm_samples;  /* write VMM DEVICE_SAMPLEs (standalone: no hooks write them) */
    int64_t clock_offset; /* gcspy ns - CUPTI ns */
    /* lock: pend, npend, newest_ns, flushed_ns, pools. Held for a few loads and stores,
     * never across a bridge call or a wait. */
    pthread_mutex_t lock;
    uint64_t newest_ns;   /* gcspy time of the newest record handled */
    uint64_t flushed_ns;  /* every record made before this was handled */
    uint64_t last_sweep_ns;
    uint32_t npend;
    struct gs_cupti_pend pend[GS_CUPTI_PENDING];
    struct gs_cupti_pool pools[GS_CUPTI_POOLS];
    /* Allocation calls between their entry and exit callbacks: correlation
     * id | tid << 32, 0 when free. A record whose call is still here waits
     * for the exit callback, else it would be taken for an unseen event. */
    atomic_ullong inflight[GS_CUPTI_INFLIGHT];
    atomic_ullong vmm_reserved, vmm_mapped, vmm_handles;
    struct gs_cupti_stats st;
    /* gs_cupti_taken_over's counts at its last call, and its verdict */
    uint64_t to_records, to_stale, to_dropped;
    int taken;
};

/* The subscribed calls, for cuptiEnableCallback. */
struct gs_cupti_cbid {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
};
extern const struct gs_cupti_cbid gs_cupti_cbids[];
extern const unsigned gs_cupti_ncbids;

/* Sets c up (c may be uninitialised memory). activity: MEMORY2 is on. */
void gs_cupti_init(struct gs_cupti *c, const struct gs_cupti_ops *ops, int activity,
                   int vmm_samples);
/* CUPTI's clock against gcspy's, from one reading of each taken together. */
void gs_cupti_calibrate(struct gs_cupti *c, uint64_t cupti_ns, uint64_t gcspy_ns);
uint64_t gs_cupti_time(const struct gs_cupti *c, uint64_t cupti_ns);

/* One API callback (cbdata of CUPTI_CB_DOMAIN_RUNTIME_API/DRIVER_API).
 * Returns 1 when it made a bridge call, else 0. */
int gs_cupti_on_api(struct gs_cupti *c, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const CUpti_CallbackData *cb);
/* A flush that began at gcspy time t delivered, and the subscriber handled,
 * every buffer CUPTI held. */
void gs_cupti_flushed(struct gs_cupti *c, uint64_t t);
/* After each periodic flush (one thread): 1, once, when another CUPTI
 * client seems to have taken the activity buffers (records.c says how it
 * is told). */
int gs_cupti_taken_over(struct gs_cupti *c);
/* One activity record: an enum gs_cupti_outcome. */
int gs_cupti_on_record(struct gs_cupti *c, const CUpti_Activity *rec);
/* Every record of a completed buffer (through ops->next_record); returns
 * how many were read. */
size_t gs_cupti_on_buffer(struct gs_cupti *c, uint8_t *buf, size_t valid);

#endif /* GCSPY_CUPTI_RECORDS_H */
