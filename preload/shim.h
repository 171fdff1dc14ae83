/*
 * Internal interface of libgcspy.so: what the files of preload/ share.
 *
 * The shim is split so that its core can be driven without LD_PRELOAD:
 * hooks.c (the interposed libc functions) is the only file that knows about
 * interposition; everything below it works on plain addresses and is called
 * directly by the unit tests (tests/unit/test_core.c) with fake pointers.
 *
 *   hooks.c    interposed functions, bootstrap, recursion guard
 *   core.c     gs_on_alloc/free/realloc, threads, process start/exit, fork
 *   table.c    the sharded live-block table; each shard owns an event buffer
 *   stack.c    stack capture (frame pointers or libunwind) and interning
 *   writer.c   buffer pool, background writer thread, chunks, trace file
 *   modules.c  the module map (dl_iterate_phdr), written as MODULE records
 *   options.c  options from the environment (options.def)
 *   mem.c      the shim's own memory, straight from mmap
 *   scan.c     the leak scan (with stop.c: stopping threads, roots.c: roots)
 *   python.c   Python frames, optimizer steps, GC pauses; finds the CPython
 *              functions it shares with torch.c (pyapi.h)
 *   torch.c    PyTorch-aware mode (caching-allocator snapshots, weak metadata,
 *              unscanned tensor storage)
 *   elfsym.c   symbols of loaded modules, read in memory
 *   cuda_hooks.c, bridge.c  CUDA allocation calls, and CUPTI's way in
 *
 * Invariants every file keeps:
 *  - Nothing here allocates through the hooked functions: memory comes from
 *    gs_pages_alloc (mmap). Code that must call into libc functions that may
 *    allocate (pthread_getattr_np, dl_iterate_phdr, libunwind) runs with the
 *    thread's recursion flag set, so those allocations pass through untracked.
 *  - Lock order: loader lock (dl_iterate_phdr) → stack lock → meta lock;
 *    a shard lock is never held while taking any other lock except the buffer
 *    pool lock (a leaf). Nothing calls dl_iterate_phdr or an unwinder while
 *    holding a gcspy lock.
 *  - No gcspy lock is held across a call into the program, except the shard
 *    lock of a block across the real realloc (see core.c).
 */
#ifndef GCSPY_SHIM_H
#define GCSPY_SHIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "gcspy/record.h"
#include "gcspy/trace_format.h"

#define GS_LIKELY(x) __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GS_HIDDEN __attribute__((visibility("hidden")))

/* ---- options (options.c) ---- */
struct gs_options {
#define GS_OPT_STR const char *
#define GS_OPT_INT uint64_t
#define GS_OPT_BOOL int
#define GS_OPT_UNWIND int
#define GS_OPT(field, env, type, def, help) GS_OPT_##type field;
#include "gcspy/options.def"
#undef GS_OPT
};
extern struct gs_options gs_opt;
/* Parses the environment (envp as the kernel gave it) into gs_opt; never
 * allocates. Bad values keep the default and print one line. */
void gs_options_load(char **envp);

/* ---- memory (mem.c) ---- */
void *gs_pages_alloc(size_t bytes);          /* zeroed, or NULL */
void gs_pages_free(void *p, size_t bytes);
/* One line on stderr, "gcspy: ..." (write(2), no stdio, no malloc). */
void gs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* vsnprintf-like into a buffer without malloc: %s %d %u %lu %llu %zu %x %lx %p %%. */
int gs_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int gs_raw_gettid(void);
/* Whole-file read into buf (no stdio); returns bytes read or -1. */
ssize_t gs_read_file(const char *path, char *buf, size_t len);

/* ---- clock ---- */
extern uint64_t gs_t0_ns; /* CLOCK_MONOTONIC at start */
static inline uint64_t gs_mono_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* Event time: the coarse clock (a few ns; jiffy resolution) is enough to
 * place events on a memory-over-time axis. Pauses use gs_now_fine(). */
static inline uint64_t gs_now(void)
{
    uint64_t t = gs_mono_ns(CLOCK_MONOTONIC_COARSE);
    return t > gs_t0_ns ? t - gs_t0_ns : 0;
}
static inline uint64_t gs_now_fine(void)
{
    uint64_t t = gs_mono_ns(CLOCK_MONOTONIC);
    return t > gs_t0_ns ? t - gs_t0_ns : 0;
}

/* ---- buffers and the writer (writer.c) ---- */
#define GS_BUF_SIZE (64u << 10)
struct gs_buf {
    struct gs_buf *next;
    uint64_t seq;   /* start order: buffers of one stream are written in seq order */
    uint32_t len;
    uint32_t pad;
    struct gs_enc_state st;
    uint8_t data[GS_BUF_SIZE];
};
/* A stream: a current buffer plus the lock that serialises appends to it. The
 * shards of the table are streams; so is the meta stream (definitions). */
struct gs_stream {
    atomic_int lock;
    struct gs_buf *cur;
};
static inline void gs_spin_lock(atomic_int *l)
{
    for (unsigned n = 0;; n++) {
        if (!atomic_exchange_explicit(l, 1, memory_order_acquire))
            return;
        while (atomic_load_explicit(l, memory_order_relaxed)) {
            if (n++ < 64)
                __builtin_ia32_pause();
            else {
                extern int sched_yield(void);
                sched_yield();
            }
        }
    }
}
static inline void gs_spin_unlock(atomic_int *l)
{
    atomic_store_explicit(l, 0, memory_order_release);
}
/* Returns a pointer where up to `need` bytes may be written into s's current
 * buffer (starting one, with its TIMEBASE, if needed), or NULL when tracing
 * has stopped. Caller holds s->lock and then calls gs_stream_commit. */
uint8_t *gs_stream_reserve(struct gs_stream *s, size_t need);
static inline void gs_stream_commit(struct gs_stream *s, uint8_t *end)
{
    s->cur->len = (uint32_t)(end - s->cur->data);
}
extern struct gs_stream gs_meta; /* definitions: STACK, MODULE, THREAD_*, ... */

int gs_writer_open(void);      /* opens the trace file; 0 or -1 */
int gs_writer_start(void);     /* starts the background thread */
/* Writes everything buffered so far, synchronously, from the calling thread. */
void gs_writer_flush(void);
/* Final flush, then `tail` (already encoded records) in the last chunk, then
 * close; nothing is written afterwards. 0 when everything reached the file. */
int gs_writer_close(const uint8_t *tail, size_t tail_len);
int gs_writer_is_thread(void);
/* fork: lock(0) = writer mutex (first), lock(1) = buffer pool (last). */
void gs_writer_atfork_lock(int pool);
void gs_writer_atfork_unlock(int pool);
/* After fork, in the child: forget the parent's buffers and file. */
void gs_writer_atfork_child(void);
const char *gs_writer_path(void);
/* Stops tracing after an internal failure: one line on stderr ("WHAT: WHY;
 * tracing stopped, the program runs on"), hooks pass straight through from
 * now on, the program runs on. The trace ends with a STOPPED record naming
 * the failure, unless writing the file is what failed (writer.c). */
void gs_fail(const char *what, int err);  /* WHY: strerror(err) */
void gs_fail_why(const char *what, const char *why);

/* ---- tracing state (core.c) ---- */
enum { GS_OFF = 0, GS_ON = 1, GS_STOPPED = 2 };
extern atomic_int gs_state;
static inline int gs_tracing(void)
{
    return atomic_load_explicit(&gs_state, memory_order_relaxed) == GS_ON;
}

/* ---- the live-block table (table.c) ---- */
struct gs_block {
    uint64_t addr;   /* 0: empty slot */
    uint64_t size;
    uint32_t stack;
    uint8_t kind;    /* enum gs_mem_kind */
    uint8_t fn;      /* enum gs_alloc_fn */
    uint8_t mark;    /* scanner's use */
    uint8_t flags;
};
#define GS_SHARDS 128
struct gs_shard {
    struct gs_stream s;     /* lock guards the table and the buffer */
    struct gs_block *slots;
    uint64_t cap;           /* power of two */
    uint64_t count;
    uint64_t bytes;
    char pad[64 - (sizeof(struct gs_stream) + 4 * sizeof(uint64_t)) % 64];
};
extern struct gs_shard gs_shards[GS_SHARDS];
static inline struct gs_shard *gs_shard_of(uint64_t addr)
{
    /* Blocks of one 64 KiB region share a shard: consecutive allocations of
     * one thread land in one buffer, so address deltas stay small. */
    return &gs_shards[((addr >> 16) * 0x9E3779B97F4A7C15ull) >> 57];
}
/* Slot of an address in its shard's table. The page (4 KiB) picks, by a
 * hash, an aligned window of 256 slots; the address within the page picks
 * the slot in that window (xor a per-page hash, so pages laid out alike do
 * not collide slot for slot). So the blocks of one page sit together
 * (malloc hands out neighbours: the hot path stays in cache), every block of
 * a page has its home in one window (the scanner's interior lookup reads
 * just that window), and pages spread evenly over the table. Tables start
 * at 1024 slots, so a window always fits. */
static inline uint64_t gs_slot_of(uint64_t addr, uint64_t mask)
{
    uint64_t ph = (addr >> 12) * 0x9E3779B97F4A7C15ull;
    return (((ph >> 32) << 8) | (((addr >> 4) ^ (ph >> 56)) & 255)) & mask;
}
static inline struct gs_block *gs_table_lookup(const struct gs_shard *sh, uint64_t addr)
{
    uint64_t mask = sh->cap - 1, j = gs_slot_of(addr, mask);
    for (;;) {
        struct gs_block *b = &sh->slots[j];
        if (!b->addr)
            return NULL;
        if (b->addr == addr)
            return b;
        j = (j + 1) & mask;
    }
}
int gs_table_init(void);
/* Under the shard lock: */
int gs_table_insert(struct gs_shard *sh, const struct gs_block *b); /* 0 or -1 (no memory) */
int gs_table_remove(struct gs_shard *sh, uint64_t addr, struct gs_block *out); /* 1 found */
struct gs_block *gs_table_find(struct gs_shard *sh, uint64_t addr);

/* ---- stacks (stack.c) ---- */
#define GS_MAX_DEPTH 256
void gs_stack_init(void);
/* Captures the caller's stack, given the frame address of the hook (fp walk
 * starts there; frames inside libgcspy are skipped for libunwind). */
int gs_stack_capture(void *hook_frame, uintptr_t *ips, int max);
/* Interns a stack (ips[0] innermost). Emits STACK records for new nodes. */
uint32_t gs_stack_intern(const uintptr_t *ips, int n);
/* Capture and intern in one: the hot path (fused walk and hash). */
uint32_t gs_stack_id(void *hook_frame);
/* Node table access for fork re-emission. */
void gs_stack_reemit(void);
void gs_stack_lock(void);
void gs_stack_unlock(void);

/* ---- symbols of loaded modules (elfsym.c) ---- */
struct dl_phdr_info;
struct gs_dynsyms {
    uintptr_t base;
    const void *symtab; /* ElfW(Sym) */
    const char *strtab;
    size_t strsz, nsyms;
    const uint32_t *gnu, *sysv;
};
int gs_elf_dynsyms(const struct dl_phdr_info *info, struct gs_dynsyms *d); /* 0 or -1 */
/* A function defined by any loaded module other than libgcspy, by name. */
void *gs_elf_find(const char *name);

/* ---- modules (modules.c) ---- */
void gs_modules_sync(void);  /* emits MODULE / MODULE_UNLOAD for changes */
void gs_modules_reemit(void);
/* Address range of libgcspy.so's own code, for skipping its frames. */
extern uintptr_t gs_self_lo, gs_self_hi, gs_self_data_lo, gs_self_data_hi;

/* ---- per-thread state (core.c) ---- */
struct gs_thread {
    struct gs_thread *next;      /* registry list */
    uint32_t index;
    int tid;
    int dead;
    uintptr_t stack_lo, stack_hi;
    uint64_t allocs, frees, bytes;
    uint64_t cache_hash[1024];
    uint32_t cache_id[1024];
    int py_in_step;              /* python.c: last allocation was inside a step */
    uint64_t py_line_key[512];   /* python.c: (code, offset) -> line cache */
    int32_t py_line[512];
};
struct gs_tls {
    int in_hook;                 /* recursion guard: set while inside gcspy */
    int exited;                  /* thread's TSD destructors have run */
    volatile int stop_pending;   /* a stop request arrived while in_hook */
    struct gs_thread *th;
};
extern __thread struct gs_tls gs_tls __attribute__((tls_model("initial-exec")));
struct gs_thread *gs_thread_get(void);
/* Leaving gcspy: clears the recursion flag, then honours a stop request that
 * arrived while the thread was inside (stop.c). The order matters: a stop
 * signal landing after the clear stops the thread directly. */
void gs_stop_check_slow(void);
static inline void gs_leave(void)
{
    gs_tls.in_hook = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (GS_UNLIKELY(gs_tls.stop_pending))
        gs_stop_check_slow();
}
/* Restores the recursion flag saved on entry (gs_leave when it was clear). */
static inline void gs_restore(int saved)
{
    if (saved)
        gs_tls.in_hook = saved;
    else
        gs_leave();
}

/* ---- the core API the hooks (and tests) call ---- */
int gs_core_early_init(char **envp); /* first hook call or constructor */
int gs_core_start(void);             /* constructor: file, writer, atexit, atfork */
/* Final scan (unless scan is 0: _exit skips it, as it skips exit handlers),
 * summary, close. */
void gs_core_exit(int status, int scan);
void gs_on_alloc(uint64_t addr, uint64_t size, uint32_t stack, unsigned kind, unsigned fn);
void gs_on_alloc_ex(uint64_t addr, uint64_t size, uint32_t stack, unsigned kind, unsigned fn,
                    unsigned device, uint64_t stream, uint64_t dur_ns);
/* One length-prefixed record of n unsigned varints into the meta stream
 * (takes the meta lock; the caller holds the recursion flag). */
void gs_emit_meta(uint8_t type, const uint64_t *v, int n);
/* PAUSE and DEVICE_SAMPLE records (times from gs_now_fine). */
void gs_record_pause(uint64_t t0, uint64_t t1, unsigned kind, uint64_t a, uint64_t b);
void gs_record_device_sample(unsigned device, unsigned kind, uint64_t reserved, uint64_t in_use,
                             uint64_t segments, uint64_t largest_free);
/* Returns 1 when addr was a tracked block (a FREE was recorded). */
int gs_on_free(uint64_t addr);
int gs_on_free_block(uint64_t addr, struct gs_block *out); /* also returns the block */
void gs_drop_device_blocks(void); /* every non-host block: a context was destroyed */
/* realloc: lock the old block's shard before the real realloc, so no other
 * thread can record a new block at the old address before our FREE of it. */
struct gs_shard *gs_on_realloc_begin(uint64_t old);
void gs_on_realloc_end(struct gs_shard *sh, uint64_t old, uint64_t neu, uint64_t size,
                       uint32_t stack);
void gs_on_exec(const char *path);

/* ---- Python (python.c) ---- */
void gs_py_init(void);
extern int gs_py_on;
static inline int gs_py_active(void) { return gs_py_on; }
/* Replaces the interpreter's native frames in ips[0..n) with Python frames
 * (appends them when the native walk stopped short); returns the new n. */
int gs_py_merge(uintptr_t *ips, int n, int max);
void gs_py_tick(void); /* writer: installs the GC callback once Python runs */
void gs_record_marker(unsigned kind, const char *label);

/* A code id for a Python frame known only by its names (PyTorch's
 * recorded stacks): a PYCODE record is written; 0 when the table is full. */
uint32_t gs_py_code_new(const char *file, size_t flen, const char *fn, size_t fnlen);

/* ---- PyTorch-aware mode (torch.c) ---- */
struct gs_pool_seg { uint64_t addr, size; };
/* Sorted records whose first member is a uint64_t key (pool segments and
 * blocks, torch.c's code ranges; torch.c's sort_by_key sorts them): how
 * many have a key <= k, so the record that may hold k is [result - 1]. */
static inline size_t gs_keyed_upto(const void *v, size_t n, size_t stride, uint64_t k)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (*(const uint64_t *)(const void *)((const char *)v + m * stride) <= k)
            a = m + 1;
        else
            b = m;
    }
    return a;
}
struct gs_pool_blk {
    uint64_t addr, size;
    uint32_t stack;
    uint8_t state, mark, pad[2];
};
/* A caching allocator's state at one moment, sorted by address; blk holds
 * the active and pending-free blocks only. */
struct gs_pool_view {
    struct gs_pool_seg *seg;
    size_t nseg;
    struct gs_pool_blk *blk;
    size_t nblk;
};
void gs_torch_init(void);         /* after gs_py_init */
void gs_torch_note_device(void);  /* a device block was recorded */
/* Scan owner, world running: GS_SB_* bits per stack id (NULL: none). */
void gs_torch_prepare_scan(const uint8_t **bits, uint32_t *nbits);
int gs_torch_route_scan(int trigger); /* writer: 1 when handed to Python */
int gs_torch_api_scan(void);          /* gcspy_scan(): -2 when not applicable */
void gs_torch_at_exit(void);          /* Python atexit: the exit scan */
/* Per-stack-id bits for the scanner. WEAK: a frame of the caching
 * allocator's code anywhere in the stack (the block is its metadata).
 * DATA: the innermost frame is in code that allocates pointer-free memory
 * (a tensor's storage): the block is never scanned for pointers. */
enum { GS_SB_WEAK = 1, GS_SB_DATA = 2 };
/* Stack tree walk: nodes [from, count) get bits[id] = of(ip) |
 * (bits[parent] & GS_SB_WEAK), where ip is the node's (innermost) frame;
 * returns the node count. */
uint32_t gs_stack_bits_fill(uint8_t **bits, uint64_t *cap, uint32_t from,
                            uint8_t (*of)(uint64_t ip));

/* CUDA driver seen in the module map; the writer then attaches CUPTI. */
extern atomic_int gs_cuda_loaded;
void gs_cupti_maybe_load(void);
void gs_cupti_flush(void);

/* ---- the leak scanner (scan.c) ---- */
int gs_scan_init(void);
/* Runs a scan; self_sp: the calling program thread's stack pointer at entry
 * into gcspy (its stack above it is a root), 0 for a gcspy thread. */
int gs_scan(int trigger, uintptr_t self_sp);
/* A scan from a program thread (its stack above this call is a root), with
 * a caching allocator's view when one was just taken (may be NULL). */
int gs_scan_program(int trigger, struct gs_pool_view *pool);
/* Zeroes the dead stack below the caller (scan.c says why). */
void gs_scrub_stack(void);
int gs_scan_running(void);
void gs_scan_tick(void);          /* writer: periodic and requested scans */
uint64_t gs_scan_next_due_ns(void); /* writer: time to the next periodic scan */
void gs_scan_note_bytes(uint64_t n);
void gs_scan_atfork_child(void);
extern void (*gs_exit_scan_hook)(void);
extern int gs_exit_scan_done; /* an exit scan already ran (Python's atexit) */
void gs_writer_wake(void);
void gs_writer_release_waiters(void);
void gs_meta_thread_start(struct gs_thread *th);

#endif /* GCSPY_SHIM_H */
