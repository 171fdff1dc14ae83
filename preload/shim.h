/*
 * The bottom of libgcspy.so: the state every file of preload/ reads (the
 * tracing flag, the options, the clock, the per-thread state and its
 * recursion guard), the spin lock and the stream type. state.c defines it.
 *
 * The shim is split so that its core can be driven without LD_PRELOAD:
 * hooks.c (the interposed libc functions) is the only file that knows about
 * interposition; everything below it works on plain addresses and is called
 * directly by the unit tests (tests/unit/test_core.c) with fake pointers.
 *
 * Its files form layers, and calls go down: a file calls only files of its
 * own layer or a lower one, and includes only their headers (foo.c's is
 * foo.h; state.c's is this one, classify.c's is mark.h; the hooks have
 * none). A lower layer that must learn something from a higher one offers
 * a callback (registered at start, never on the malloc path) or a counter.
 * preload/LAYERS is the table; tests/integration/layers_preload.sh checks it
 * from the objects' symbols and the #include lines; docs/design.md draws it.
 *
 *   hooks       hooks.c (libc), exit_hooks.c (exit, _exit, _Exit), cuda_hooks.c
 *               (CUDA), bridge.c (CUPTI's way in)
 *   life        life.c: process start, exit, fork, exec
 *   integration python.c (GC pauses, atexit), torch.c (PyTorch-aware mode)
 *   daemon      daemon.c: the writer thread's tick (sampling, module sync,
 *               CUPTI attach, periodic and requested scans)
 *   triggers    scan_trigger.c: API, signal, byte-count, periodic, exit scans
 *   scan        scan.c: a scan's phases (stop, mark, classify, restart, write)
 *   mark        mark.c (marking), classify.c (definite/indirect/possible)
 *   world       stop.c (stopping threads), roots.c (the root set)
 *   stacks      stack.c: capture and interning
 *   process     modules.c, elfsym.c, cupti_load.c, pyapi.c, pyframes.c, dlsym.c
 *               (dlsym and dlvsym interposed; the hooks register filters)
 *   events      threads.c (per-thread registry), core.c (allocation events)
 *   emit        emit.c: every record preload writes is encoded here
 *   sink        writer.c: buffers, the writer thread, chunks, the file
 *   table       table.c: the sharded live-block table
 *   base        mem.c (own memory, logging), options.c (the environment)
 *   state       state.c (this header)
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

/* ---- options (parsed by options.c) ---- */
#define GS_MAX_DEPTH 256 /* the deepest stack gs_opt.depth may ask for */
struct gs_options {
#define GS_OPT_STR const char *
#define GS_OPT_INT uint64_t
#define GS_OPT_BOOL int
#define GS_OPT_UNWIND int
#define GS_OPT_SUMMARY int
#define GS_OPT(field, env, type, def, help) GS_OPT_##type field;
#include "gcspy/options.def"
#undef GS_OPT
};
extern struct gs_options gs_opt;
/* GCSPY_SUMMARY: who prints the exit summary (life.c) */
enum { GS_SUMMARY_FIRST = 0, GS_SUMMARY_ALL = 1, GS_SUMMARY_NONE = 2 };

/* ---- clock ---- */
extern uint64_t gs_t0_ns; /* CLOCK_MONOTONIC at start */
static inline uint64_t gs_mono_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* The time of the last MARKER (gs_emit_marker), which event times never
 * fall below; 0 from the start of a trace (set_clock). */
extern _Atomic uint64_t gs_time_floor;
/* Event time: the coarse clock (a few ns; jiffy resolution) is enough to
 * place events on a memory-over-time axis. Pauses and markers use
 * gs_now_fine(). The coarse clock lags the fine one by up to a tick and a
 * bit (4 ms ticks here: 3.4 ms on average, 5.3 ms at most), so an event
 * just after a step marker would read earlier than the marker, and the
 * analyzer would count it at that step's checkpoint: a block allocated
 * right after opt.step() and freed before the next one looked live at every
 * step, a growth suspect when its size rose. Raising event times to the
 * last marker's keeps what follows a marker after it; what precedes it
 * reads the coarse clock, never later than the fine one. One relaxed load
 * of a line that changes once a step. */
static inline uint64_t gs_now(void)
{
    uint64_t t = gs_mono_ns(CLOCK_MONOTONIC_COARSE);
    t = t > gs_t0_ns ? t - gs_t0_ns : 0;
    uint64_t f = atomic_load_explicit(&gs_time_floor, memory_order_relaxed);
    return t > f ? t : f;
}
static inline uint64_t gs_now_fine(void)
{
    uint64_t t = gs_mono_ns(CLOCK_MONOTONIC);
    return t > gs_t0_ns ? t - gs_t0_ns : 0;
}

/* ---- spin lock ---- */
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

/* ---- streams (the type: writer.c fills and drains them) ---- */
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

/* ---- tracing state ---- */
enum { GS_OFF = 0, GS_ON = 1, GS_STOPPED = 2 };
extern atomic_int gs_state;
static inline int gs_tracing(void)
{
    return atomic_load_explicit(&gs_state, memory_order_relaxed) == GS_ON;
}
extern pid_t gs_pid; /* the traced process (life.c sets it, again in a fork child) */
/* The thread's own id from the kernel (no libc cache: right after a fork too). */
int gs_raw_gettid(void);

/* ---- per-thread state ---- */
/* How to step from a return address to its caller (unwind.c fills them,
 * stack.c's walk reads them): the caller's CFA is sp + cfa_off (kind SP) or
 * fp + cfa_off (kind FP), its return address lies at CFA - 8, its frame
 * pointer at CFA + fp_off (0: unchanged). Kind NONE: ip is no return
 * address into executable code of a loaded module (the walk ends before
 * it); LAST: the outermost frame (the walk ends after it). */
enum { GS_UNW_NONE = 0, GS_UNW_SP, GS_UNW_FP, GS_UNW_LAST };
struct gs_unw_rule {
    uint64_t ip;
    int32_t cfa_off;
    int16_t fp_off;
    uint8_t kind;
    uint8_t std; /* kind FP, cfa_off 16, fp_off -16: the frame-pointer convention */
    /* kind NONE: cfa_off holds the map generation it was read under (unwind.h) */
};
#define GS_UNW_BITS 12
#define GS_STK_BITS 10
/* A stack hash's slot in a thread's stack cache (stack.c). */
#define gs_stk_slot(h) ((unsigned)((h) >> (64 - GS_STK_BITS)))
struct gs_thread {
    struct gs_thread *next;      /* registry list (threads.c) */
    uint32_t index;
    int tid;
    int dead;
    uintptr_t stack_lo, stack_hi;
    uint64_t allocs, frees, bytes;
    uint64_t cache_hash[1u << GS_STK_BITS]; /* stack.c: stack hash -> id cache */
    uint32_t cache_id[1u << GS_STK_BITS];
    uint64_t cache_sp[1u << GS_STK_BITS];   /* stack.c: the sp an entry holds for (0: any) */
    int py_in_step;              /* pyframes.c: last allocation was inside a step */
    uint64_t py_line_key[512];   /* pyframes.c: (code, offset) -> line cache */
    int32_t py_line[512];
    int stk_n;                   /* stack.c: the last interned stack, outermost first: */
    uint64_t stk_ip[GS_MAX_DEPTH];  /* its frames */
    uint32_t stk_id[GS_MAX_DEPTH];  /* the node of each frame (ids never change) */
    uint64_t stk_ph[GS_MAX_DEPTH];  /* the path hash of each (stack.c's node table) */
    uint64_t unw_gen;            /* unwind.h: the module map at the thread's last walk */
    uint64_t unw_subs;           /* unwind.h: the unloads unw was filled after */
    struct gs_unw_rule unw[1u << GS_UNW_BITS]; /* unwind.c: return address -> rule */
};
struct gs_tls {
    int in_hook;                 /* recursion guard: set while inside gcspy (1), or
                                  * GS_IN_CUDA: inside a CUDA hook's real call */
    int exited;                  /* thread's TSD destructors have run */
    volatile int stop_pending;   /* a stop request arrived while in_hook */
    struct gs_thread *th;
};
extern __thread struct gs_tls gs_tls __attribute__((tls_model("initial-exec")));

/* ---- the stop request, and leaving gcspy ---- */
/* A scan stopping the world (stop.c sets both): the signal it stops threads
 * with, and whether a stop is in progress. They live here, not in stop.c,
 * because every hook's way out (gs_leave) honours a request that arrived
 * while the thread was inside gcspy: that one inline helper and
 * gs_stop_check_slow are what the bottom layer knows of the scanner. */
extern int gs_stop_sig;
extern atomic_int gs_stop_active;
/* Re-raises the stop signal to the calling thread when a stop is still on. */
void gs_stop_check_slow(void);
/* Leaving gcspy: clears the recursion flag, then honours a stop request that
 * arrived while the thread was inside. The order matters: a stop signal
 * landing after the clear stops the thread directly. */
static inline void gs_leave(void)
{
    gs_tls.in_hook = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (GS_UNLIKELY(gs_tls.stop_pending))
        gs_stop_check_slow();
}
/* in_hook while a CUDA hook (cuda_hooks.c) runs the real allocation or
 * free: still inside gcspy for every other hook, the stop signal and the
 * CUPTI bridge, but the malloc family traces the CUDA library's own heap
 * blocks (their stacks name its code: cuda_owned.c); even, so that the
 * malloc hooks' "inside gcspy" test is one bit. */
#define GS_IN_CUDA 2
/* Restores the recursion flag saved on entry (gs_leave when it was clear). */
static inline void gs_restore(int saved)
{
    if (saved)
        gs_tls.in_hook = saved;
    else
        gs_leave();
}

/* ---- gcspy's own threads (the writer) ---- */
/* Never stopped by a scan (stop.c reads the tids; a fork child forgets
 * them), and their stacks are never roots (roots.c reads the hints: an
 * address inside each one's stack). */
#define GS_MAX_OWN 8
extern int gs_own_tids[GS_MAX_OWN];
extern int gs_own_ntids;
extern uintptr_t gs_own_stack_hint[GS_MAX_OWN];
void gs_own_thread_add(int tid);
void gs_own_thread_remove(int tid); /* the thread ended (writer parked) */

#endif /* GCSPY_SHIM_H */
