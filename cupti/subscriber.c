/*
 * libgcspy_cupti.so's entry points and its CUPTI subscription: API callbacks
 * for the allocation and free calls (records.c's list, enabled one by one so
 * that kernel launches and copies never call us), and MEMORY2 / MEMORY_POOL
 * activity records.
 *
 * Entry points:
 *   gcspy_cupti_attach()   the shim calls it (writer thread) once the CUDA
 *                          driver is loaded; 0 or -1, silent;
 *   InitializeInjection()  the CUDA driver calls it during cuInit when
 *                          CUDA_INJECTION64_PATH names this library; 1 or 0,
 *                          a failure says why on stderr (unless GCSPY_QUIET=1);
 *   gcspy_cupti_flush()    delivers and handles every buffered activity
 *                          record (also run at exit); not while the world
 *                          is stopped: CUPTI takes its own locks;
 *   gcspy_cupti_error()    why the last attach failed.
 * Attaching twice (the shim and the driver both loading us) attaches once.
 *
 * Activity buffers are MAP_SHARED anonymous memory: leak scanners skip
 * shared mappings, and a buffer holds the address of every block it speaks
 * of. Completed buffers are handed to our own thread: CUPTI may complete a
 * buffer on a program thread inside a CUDA call, where the shim's hook would
 * make the bridge drop everything, and a record may have to wait for the
 * exit callback of the call that made it (records.c). The thread blocks the
 * program's signals (not the real-time ones: the shim's leak scans stop
 * threads with one) and holds no lock while it calls the bridge.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "load.h"
#include "records.h"

#define GS_EXPORT __attribute__((visibility("default")))
#define GS_CUPTI_BUF (1u << 20)
#define GS_CUPTI_QUEUE 64

enum { ST_IDLE = 0, ST_BUSY, ST_ON, ST_FAILED };

static atomic_int state;
static char last_error[256];
static struct gs_cupti_lib lib;
static struct gs_cupti_core core;
static struct gs_cupti_ops ops;
static struct gs_cupti c;
static CUpti_SubscriberHandle subscriber;
static atomic_int ready; /* c is set up: callbacks may use it */

/* Completed buffers waiting for the buffer thread. qlock guards all of it. */
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;  /* work or drained */
static struct {
    uint8_t *buf;
    size_t valid;
} queue[GS_CUPTI_QUEUE];
static int qhead, qlen, qbusy;
static pid_t worker_pid; /* 0: no buffer thread in this process */

/* ---- the API callback ---- */

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *cbdata)
{
    (void)userdata;
    if (!atomic_load_explicit(&ready, memory_order_acquire))
        return;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API)
        gs_cupti_on_api(&c, domain, cbid, cbdata);
}

/* ---- activity buffers ---- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *p = mmap(NULL, GS_CUPTI_BUF, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    *buffer = p == MAP_FAILED ? NULL : p;
    *size = p == MAP_FAILED ? 0 : GS_CUPTI_BUF;
    *max_records = 0;
}

static void handle_buffer(uint8_t *buf, size_t valid)
{
    if (atomic_load(&ready))
        gs_cupti_on_buffer(&c, buf, valid);
    munmap(buf, GS_CUPTI_BUF);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid)
{
    (void)size;
    size_t dropped = 0;
    if (lib.ActivityGetNumDroppedRecords &&
        lib.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        atomic_fetch_add(&c.st.dropped, dropped);
    if (!buf)
        return;
    pthread_mutex_lock(&qlock);
    if (worker_pid == getpid() && qlen < GS_CUPTI_QUEUE) {
        queue[(qhead + qlen) % GS_CUPTI_QUEUE].buf = buf;
        queue[(qhead + qlen) % GS_CUPTI_QUEUE].valid = valid;
        qlen++;
        pthread_cond_broadcast(&qcond);
        pthread_mutex_unlock(&qlock);
        return;
    }
    pthread_mutex_unlock(&qlock);
    handle_buffer(buf, valid); /* no thread, or it is far behind */
}

/* Records of a buffer that is not full would wait for the next flush
 * (exit, at worst) while the pending entries of their calls age: ask for
 * every completed record twice a second. */
#define GS_CUPTI_FLUSH_NS 500000000ull

static int quiet(void)
{
    const char *q = getenv("GCSPY_QUIET");
    return q && q[0] == '1';
}

/* gs_cupti_taken_over said so: once, on the buffer thread. */
static void say_taken_over(void)
{
    if (!quiet())
        fprintf(stderr,
                "gcspy: cupti: activity records stopped while %lu allocation calls went unmatched: "
                "another CUPTI client (a profiler, torch.profiler) has taken the activity buffers; "
                "memory only CUPTI's records show (CUDA graph memory nodes) is no longer traced\n",
                atomic_load(&c.st.pending_stale));
}

static void *buffer_thread(void *arg)
{
    (void)arg;
    uint64_t next_flush = core.now_ns() + GS_CUPTI_FLUSH_NS;
    pthread_mutex_lock(&qlock);
    for (;;) {
        while (!qlen) {
            uint64_t now = core.now_ns();
            if (now >= next_flush && atomic_load(&state) == ST_ON) {
                /* FlushAll hands completed buffers to buffer_completed,
                 * which queues them for us: drop the lock meanwhile. */
                pthread_mutex_unlock(&qlock);
                int ok = lib.ActivityFlushAll(0) == CUPTI_SUCCESS;
                pthread_mutex_lock(&qlock);
                while (qlen) {
                    uint8_t *b = queue[qhead].buf;
                    size_t v = queue[qhead].valid;
                    qhead = (qhead + 1) % GS_CUPTI_QUEUE;
                    qlen--;
                    qbusy = 1;
                    pthread_mutex_unlock(&qlock);
                    handle_buffer(b, v);
                    pthread_mutex_lock(&qlock);
                    qbusy = 0;
                }
                pthread_cond_broadcast(&qcond);
                if (ok)
                    gs_cupti_flushed(&c, now);
                if (gs_cupti_taken_over(&c))
                    say_taken_over();
                next_flush = core.now_ns() + GS_CUPTI_FLUSH_NS;
                continue;
            }
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 100 * 1000 * 1000;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&qcond, &qlock, &until);
        }
        uint8_t *buf = queue[qhead].buf;
        size_t valid = queue[qhead].valid;
        qhead = (qhead + 1) % GS_CUPTI_QUEUE;
        qlen--;
        qbusy = 1;
        pthread_mutex_unlock(&qlock);
        handle_buffer(buf, valid);
        pthread_mutex_lock(&qlock);
        qbusy = 0;
        pthread_cond_broadcast(&qcond);
    }
    return NULL;
}

static int start_buffer_thread(void)
{
    /* The program's signals go to the program's threads; real-time signals
     * stay open: the shim stops every thread with one for its leak scans,
     * and a thread that blocks it makes every scan fail. */
    sigset_t mask, old;
    sigfillset(&mask);
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        sigdelset(&mask, s);
    pthread_sigmask(SIG_SETMASK, &mask, &old); /* inherited by the thread */
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = pthread_create(&t, &at, buffer_thread, NULL);
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        pthread_setname_np(t, "gcspy-cupti");
        pthread_mutex_lock(&qlock);
        worker_pid = getpid();
        pthread_mutex_unlock(&qlock);
    }
    return rc ? -1 : 0;
}

/* A child of fork has no buffer thread, and a lock the thread held stays
 * held: start over with fresh locks and handle buffers inline. */
static void atfork_child(void)
{
    pthread_mutex_init(&qlock, NULL);
    pthread_cond_init(&qcond, NULL);
    pthread_mutex_init(&c.lock, NULL);
    worker_pid = 0;
    qlen = qbusy = 0;
}

GS_EXPORT int gcspy_cupti_flush(void)
{
    if (atomic_load(&state) != ST_ON)
        return -1;
    CUptiResult r = lib.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&qlock);
    while ((qlen || qbusy) && worker_pid == getpid())
        if (pthread_cond_timedwait(&qcond, &qlock, &until) == ETIMEDOUT)
            break;
    int left = qlen || qbusy;
    pthread_mutex_unlock(&qlock);
    return r == CUPTI_SUCCESS && !left ? 0 : -1;
}

static void print_summary(void)
{
    if (quiet())
        return;
    uint32_t api = 0;
    if (!lib.GetVersion || lib.GetVersion(&api) != CUPTI_SUCCESS)
        api = 0;
    fprintf(stderr,
            "gcspy: cupti: %lu API events (%lu nested, %lu failed calls), %lu activity records "
            "(%lu repeats, %lu new, %lu not used), %lu dropped by CUPTI; %s (CUDA %d, CUPTI API %u)%s\n",
            atomic_load(&c.st.api_events), atomic_load(&c.st.api_nested),
            atomic_load(&c.st.api_failed), atomic_load(&c.st.records), atomic_load(&c.st.repeats),
            atomic_load(&c.st.sent), atomic_load(&c.st.ignored), atomic_load(&c.st.dropped),
            lib.path, lib.cuda_major, api, !c.activity ? " (MEMORY2 records off: callbacks only)"
                      : c.taken   ? " (activity buffers taken by another CUPTI client)"
                                  : "");
}

/* Runs before the shim's exit scan: atexit handlers run in reverse order of
 * registration, and the shim registered its own before loading us. */
static void at_exit(void)
{
    gcspy_cupti_flush();
    print_summary();
}

/* ---- attaching ---- */

static uint64_t core_now(void)
{
    return core.now_ns();
}

static int fail(const char *fmt, const char *a, const char *b)
{
    snprintf(last_error, sizeof last_error, fmt, a, b);
    return -1;
}

static int attach(void)
{
    char err[256];
    int driver_version = 0;
    if (gs_cupti_driver_check(&driver_version, err, sizeof err) ||
        gs_cupti_lib_load(&lib, driver_version, err, sizeof err))
        return fail("%s%s", err, "");
    CUptiResult r = lib.Subscribe(&subscriber, on_callback, NULL);
    if (r != CUPTI_SUCCESS)
        return fail("cuptiSubscribe: %s%s", gs_cupti_result(&lib, r),
                    r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                        ? " (another CUPTI client, such as a profiler, is attached)"
                        : "");
    if (gs_cupti_core_find(&core, err, sizeof err)) {
        lib.Unsubscribe(subscriber);
        return fail("%s%s", err, "");
    }
    ops.device_alloc = core.device_alloc;
    ops.device_free = core.device_free;
    ops.pause = core.pause;
    ops.device_sample = core.device_sample;
    ops.now_ns = core_now;
    ops.next_record = lib.ActivityGetNextRecord;
    ops.device_id = lib.GetDeviceId;
    /* With the shim preloaded its hooks write the VMM figures. */
    gs_cupti_init(&c, &ops, 0, core.ours);
    uint64_t t0 = core.now_ns(), tc = 0;
    if (lib.GetTimestamp(&tc) == CUPTI_SUCCESS)
        gs_cupti_calibrate(&c, tc, t0 / 2 + core.now_ns() / 2);
    atomic_store_explicit(&ready, 1, memory_order_release);

    unsigned on = 0;
    for (unsigned i = 0; i < gs_cupti_ncbids; i++)
        if (lib.EnableCallback(1, subscriber, gs_cupti_cbids[i].domain, gs_cupti_cbids[i].cbid) ==
            CUPTI_SUCCESS)
            on++;
    if (!on) {
        atomic_store(&ready, 0);
        lib.Unsubscribe(subscriber);
        return fail("cuptiEnableCallback failed for every allocation call%s%s", "", "");
    }

    /* Activity records: global buffers (records of one address stay in
     * event order), then MEMORY2 with callbacks already leaving pending
     * entries, so that no record of a call they saw passes for new. */
    if (start_buffer_thread() == 0)
        pthread_atfork(NULL, NULL, atfork_child);
    uint8_t per_thread = 0;
    size_t sz = sizeof per_thread;
    lib.ActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &sz, &per_thread);
    if (lib.ActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS) {
        c.activity = 1;
        if (lib.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) != CUPTI_SUCCESS)
            c.activity = 0; /* callbacks alone, then */
        lib.ActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
    }
    atexit(at_exit);
    return 0;
}

/* standalone: loaded by the driver, not by the shim: say why on failure. */
static int attach_once(int standalone)
{
    int expect = ST_IDLE;
    if (!atomic_compare_exchange_strong(&state, &expect, ST_BUSY))
        return expect == ST_FAILED ? -1 : 0; /* attached, or attaching elsewhere */
    int rc = attach();
    atomic_store(&state, rc ? ST_FAILED : ST_ON);
    if (rc && standalone) {
        if (!quiet())
            fprintf(stderr, "gcspy: CUPTI subscriber not attached: %s\n", last_error);
    }
    return rc;
}

GS_EXPORT int gcspy_cupti_attach(void)
{
    return attach_once(0);
}

GS_EXPORT int InitializeInjection(void)
{
    return attach_once(1) == 0 ? 1 : 0;
}

GS_EXPORT const char *gcspy_cupti_error(void)
{
    return last_error[0] ? last_error : NULL;
}
