/*
 * The shim's core: what happens on each allocation event, per-thread state,
 * and the process's life (start, fork, exec, exit).
 *
 * This is the narrow API under the hooks (gs_on_alloc, gs_on_free,
 * gs_on_realloc_*): it works on plain addresses, so unit tests drive it with
 * fake pointers and no LD_PRELOAD.
 *
 * Event order for one address (what the trace promises, see writer.c): a
 * FREE is recorded before the real free() runs, an ALLOC after the real
 * malloc() returns, both under the address's shard lock; so whatever thread
 * gets an address next, its ALLOC is recorded after our FREE. realloc holds
 * the old block's shard lock across the real call for the same reason.
 *
 * fork: the child writes its own trace (pattern expanded with its pid). It
 * starts with the parent's module map, stack tree and every block live at the
 * fork (ALLOC_EX, fn GS_FN_INHERITED), so the child's trace stands alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "gcspy.h"
#include "shim.h"

atomic_int gs_state;
uint64_t gs_t0_ns;
__thread struct gs_tls gs_tls __attribute__((tls_model("initial-exec")));

extern void *__libc_stack_end;

static pid_t gs_pid;
static uint64_t wall0_ns;
static pthread_key_t thread_key;
static int thread_key_ok;
static atomic_uint next_thread = 1;
static atomic_int threads_lock;
static struct gs_thread *threads;          /* every thread struct, live or dead */
static uint64_t dead_allocs, dead_frees, dead_bytes;
/* Events of a thread without its struct (after its TSD destructor ran: a
 * later key's destructor, a signal handler) carry thread 0; they are counted
 * here, so TRACE_END matches the records. */
static atomic_uint_fast64_t anon_allocs, anon_frees, anon_bytes;
static int started;
static int forked_child;

/* ---- threads ---- */

static void thread_bounds(struct gs_thread *th)
{
    if (th->tid == gs_pid) {
        /* Frames of the main thread lie below __libc_stack_end. */
        th->stack_hi = ((uintptr_t)__libc_stack_end + 4095) & ~(uintptr_t)4095;
        return;
    }
    pthread_attr_t a;
    void *lo;
    size_t sz;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &lo, &sz) == 0) {
            th->stack_lo = (uintptr_t)lo;
            th->stack_hi = (uintptr_t)lo + sz;
        }
        pthread_attr_destroy(&a);
    }
}

static void emit_thread(uint8_t type, struct gs_thread *th)
{
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, 48);
    if (p) {
        uint8_t *e = type == GS_REC_THREAD_START
                         ? gs_rec_thread_start(p, th->index, (uint64_t)th->tid, gs_now())
                         : gs_rec_thread_exit(p, th->index, gs_now());
        gs_stream_commit(&gs_meta, e);
    }
    gs_spin_unlock(&gs_meta.lock);
}

static void thread_exit(void *arg)
{
    struct gs_thread *th = arg;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    if (gs_tracing())
        emit_thread(GS_REC_THREAD_EXIT, th);
    gs_spin_lock(&threads_lock);
    dead_allocs += th->allocs;
    dead_frees += th->frees;
    dead_bytes += th->bytes;
    th->allocs = th->frees = th->bytes = 0;
    th->dead = 1;
    gs_spin_unlock(&threads_lock);
    gs_tls.th = NULL;
    gs_tls.exited = 1; /* later events of this thread carry thread 0 */
    gs_restore(saved);
}

struct gs_thread *gs_thread_get(void)
{
    if (gs_tls.th || gs_tls.exited)
        return gs_tls.th;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    struct gs_thread *th = NULL;
    gs_spin_lock(&threads_lock);
    /* A dead struct is claimed (cleared, so no longer dead) under the lock:
     * two threads starting at once must not both take it. */
    for (struct gs_thread *t = threads; t; t = t->next)
        if (t->dead) {
            th = t;
            struct gs_thread *next = th->next;
            memset(th, 0, sizeof *th);
            th->next = next;
            break;
        }
    gs_spin_unlock(&threads_lock);
    if (!th) {
        th = gs_pages_alloc(sizeof *th);
        if (!th) {
            gs_restore(saved);
            return NULL;
        }
        gs_spin_lock(&threads_lock);
        th->next = threads;
        threads = th;
        gs_spin_unlock(&threads_lock);
    }
    th->index = atomic_fetch_add(&next_thread, 1);
    th->tid = gs_raw_gettid();
    thread_bounds(th);
    gs_tls.th = th;
    if (thread_key_ok)
        pthread_setspecific(thread_key, th);
    emit_thread(GS_REC_THREAD_START, th);
    gs_restore(saved);
    return th;
}

/* ---- events ---- */

void gs_on_alloc(uint64_t addr, uint64_t size, uint32_t stack, unsigned kind, unsigned fn)
{
    gs_on_alloc_ex(addr, size, stack, kind, fn, 0, 0, 0);
}

void gs_on_alloc_ex(uint64_t addr, uint64_t size, uint32_t stack, unsigned kind, unsigned fn,
                    unsigned device, uint64_t stream, uint64_t dur_ns)
{
    struct gs_thread *th = gs_tls.th;
    struct gs_shard *sh = gs_shard_of(addr);
    struct gs_block b = {addr, size, stack, (uint8_t)kind, (uint8_t)fn, 0, 0};
    if (kind == GS_MEM_DEVICE)
        gs_torch_note_device();
    uint64_t t = gs_now();
    uint64_t ti = th ? th->index : 0;
    gs_spin_lock(&sh->s.lock);
    if (GS_UNLIKELY(!gs_tracing())) { /* the exit has taken its totals */
        gs_spin_unlock(&sh->s.lock);
        return;
    }
    /* Room first: reserve may let the lock go (backpressure), and the block
     * must not be in the table meanwhile, or a context teardown
     * (gs_drop_device_blocks) could record its FREE ahead of its ALLOC.
     * The table changes only with the record written, both under the lock. */
    uint8_t *p = gs_stream_reserve(&sh->s, GS_REC_HOT_MAX);
    if (GS_LIKELY(p) && GS_UNLIKELY(gs_table_insert(sh, &b))) {
        gs_spin_unlock(&sh->s.lock);
        gs_fail("out of memory for the block table", ENOMEM);
        return;
    }
    if (GS_LIKELY(p)) {
        struct gs_enc_state *st = &sh->s.cur->st;
        if (GS_LIKELY(kind == GS_MEM_HOST && fn == GS_FN_MALLOC))
            p = gs_rec_alloc(p, st, t, ti, addr, size, stack);
        else
            p = gs_rec_alloc_ex(p, st, t, ti, addr, size, stack, kind, fn, device, stream,
                                dur_ns);
        gs_stream_commit(&sh->s, p);
        /* Counted when written, under the shard lock: once the exit has
         * passed every shard lock, every recorded event is counted. */
        if (th) {
            th->allocs++;
            th->bytes += size;
        } else {
            atomic_fetch_add_explicit(&anon_allocs, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&anon_bytes, size, memory_order_relaxed);
        }
    }
    gs_spin_unlock(&sh->s.lock);
    if (GS_UNLIKELY(gs_opt.scan_bytes))
        gs_scan_note_bytes(size);
}

/* Removes addr's block and writes its FREE, both or neither: the table and
 * the trace must agree (TRACE_END's live counts come from the table). The
 * room is reserved first; reserve may let the lock go, so the block is
 * looked up after. Caller holds the shard lock. Returns 1 when done. */
static int take_and_record_free(struct gs_shard *sh, uint64_t addr, struct gs_block *out)
{
    if (!gs_tracing() || !gs_table_find(sh, addr))
        return 0;
    uint8_t *p = gs_stream_reserve(&sh->s, GS_REC_HOT_MAX);
    if (!p || !gs_table_remove(sh, addr, out))
        return 0;
    struct gs_enc_state *st = &sh->s.cur->st;
    if (GS_LIKELY(out->kind == GS_MEM_HOST))
        p = gs_rec_free(p, st, gs_now(), out->addr);
    else
        p = gs_rec_free_ex(p, st, gs_now(), gs_tls.th ? gs_tls.th->index : 0, out->addr,
                           out->kind, out->fn, 0);
    gs_stream_commit(&sh->s, p);
    /* Counted when written, so TRACE_END matches the records. */
    if (gs_tls.th)
        gs_tls.th->frees++;
    else
        atomic_fetch_add_explicit(&anon_frees, 1, memory_order_relaxed);
    return 1;
}

int gs_on_free_block(uint64_t addr, struct gs_block *out)
{
    if (GS_UNLIKELY(!gs_tls.th) && !gs_tls.exited)
        gs_thread_get(); /* a thread that only frees is still counted */
    struct gs_shard *sh = gs_shard_of(addr);
    gs_spin_lock(&sh->s.lock);
    int found = take_and_record_free(sh, addr, out);
    gs_spin_unlock(&sh->s.lock);
    return found;
}

int gs_on_free(uint64_t addr)
{
    struct gs_block b;
    return gs_on_free_block(addr, &b);
}

/* A CUDA context went away and the driver freed all of its memory. */
void gs_drop_device_blocks(void)
{
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        gs_spin_lock(&sh->s.lock);
        for (uint64_t j = 0; j < sh->cap; j++) {
            /* Removal shifts later entries into slot j: look at it again. */
            for (;;) {
                struct gs_block *b = &sh->slots[j], was;
                if (!b->addr || b->kind == GS_MEM_HOST)
                    break;
                if (!take_and_record_free(sh, b->addr, &was))
                    break;
            }
        }
        gs_spin_unlock(&sh->s.lock);
    }
}

struct gs_shard *gs_on_realloc_begin(uint64_t old)
{
    struct gs_shard *sh = gs_shard_of(old);
    gs_spin_lock(&sh->s.lock);
    return sh;
}

void gs_on_realloc_end(struct gs_shard *sh, uint64_t old, uint64_t neu, uint64_t size,
                       uint32_t stack)
{
    if ((!neu && size) || !gs_tracing()) { /* failed (the old block is untouched), or stopped */
        gs_spin_unlock(&sh->s.lock);
        return;
    }
    if (neu == old) {
        struct gs_block *b = gs_table_find(sh, old);
        if (b) {
            /* Reserve first (it may let the lock go and the table move), and
             * change the table only with a record written, so TRACE_END's
             * live bytes match the records. */
            uint8_t *p = gs_stream_reserve(&sh->s, GS_REC_HOT_MAX);
            b = gs_table_find(sh, old);
            if (p && b) {
                sh->bytes += size - b->size;
                b->size = size;
                b->stack = stack;
                struct gs_thread *th = gs_tls.th;
                p = gs_rec_realloc(p, &sh->s.cur->st, gs_now(), th ? th->index : 0, old, size,
                                   stack);
                gs_stream_commit(&sh->s, p);
            }
        }
        gs_spin_unlock(&sh->s.lock);
        if (!b)
            gs_on_alloc(neu, size, stack, GS_MEM_HOST, GS_FN_REALLOC);
        return;
    }
    struct gs_block b;
    take_and_record_free(sh, old, &b);
    gs_spin_unlock(&sh->s.lock);
    if (neu)
        gs_on_alloc(neu, size, stack, GS_MEM_HOST, GS_FN_REALLOC);
}

/* ---- process start ---- */

static const char *env_in(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static uint64_t env_num1(char **envp, const char *name)
{
    const char *v = env_in(envp, name);
    if (!v || !*v)
        return 0;
    uint64_t x = 0;
    for (; *v >= '0' && *v <= '9'; v++)
        x = x * 10 + (uint64_t)(*v - '0');
    return *v ? 0 : x + 1;
}

static char **saved_envp;

static void emit_process_start(uint64_t flags)
{
    static char cmdline[16384];
    static char exe[4096];
    ssize_t n = gs_read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
    if (n < 0)
        n = 0;
    while (n > 0 && cmdline[n - 1] == 0)
        n--; /* keep the separators between arguments, not the last NUL */
    ssize_t e = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[e > 0 ? e : 0] = 0;
    struct utsname u;
    if (uname(&u))
        u.nodename[0] = 0;
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, (size_t)n + strlen(exe) + sizeof u.nodename + 128);
    if (p) {
        uint8_t *q = gs_rec_process_start(
            p, (uint64_t)getpid(), (uint64_t)getppid(), wall0_ns, exe, strlen(exe), cmdline,
            (size_t)n, u.nodename, strlen(u.nodename), env_num1(saved_envp, "RANK"),
            env_num1(saved_envp, "LOCAL_RANK"), env_num1(saved_envp, "WORLD_SIZE"), flags,
            GCSPY_VERSION, strlen(GCSPY_VERSION), (uint64_t)gs_opt.unwind, gs_opt.depth,
            (uint64_t)sysconf(_SC_PAGESIZE));
        gs_stream_commit(&gs_meta, q);
    }
    gs_spin_unlock(&gs_meta.lock);
}

static void set_clock(void)
{
    gs_t0_ns = gs_mono_ns(CLOCK_MONOTONIC);
    wall0_ns = gs_mono_ns(CLOCK_REALTIME);
}

/* Tracking starts at the first hook call that finds the environment, so
 * blocks allocated by other libraries' constructors are seen; the file and
 * the writer wait for our constructor (gs_core_start). */
int gs_core_early_init(char **envp)
{
    static atomic_int once;
    if (atomic_exchange(&once, 1))
        return gs_tracing() ? 0 : -1;
    saved_envp = envp;
    gs_options_load(envp);
    if (gs_opt.disable)
        return -1;
    set_clock();
    gs_pid = getpid();
    if (gs_table_init()) {
        gs_fail("allocating the block table", ENOMEM);
        return -1;
    }
    gs_stack_init();
    if (pthread_key_create(&thread_key, thread_exit) == 0)
        thread_key_ok = 1;
    /* PROCESS_START is the trace's first record: written before tracing
     * starts, so no other thread's definition (THREAD_START) or event can
     * come first (the meta stream is written ahead of the shards). */
    emit_process_start(getauxval(AT_SECURE) ? GS_PROC_F_SETUID : 0);
    int off = GS_OFF; /* not ON when the record's buffer failed (gs_fail stopped us) */
    if (!atomic_compare_exchange_strong(&gs_state, &off, GS_ON))
        return -1;
    gs_modules_sync();
    return 0;
}

/* CUPTI sees what PLT hooks cannot (cuGetProcAddress pointers, a static
 * cudart, pool allocations). Once the CUDA driver is loaded (modules.c sets
 * gs_cuda_loaded), the writer thread loads libgcspy_cupti.so from beside us
 * and calls its entry point. The writer does it because it holds no gcspy
 * lock and no program lock; the environment is left alone, so a program
 * without CUDA sees no difference at all. */
atomic_int gs_cuda_loaded;
static int (*cupti_flush)(void);

void gs_cupti_maybe_load(void)
{
    static int done;
    if (done || !atomic_load(&gs_cuda_loaded) || !gs_opt.cupti)
        return;
    done = 1;
    Dl_info info;
    if (!dladdr((void *)&gs_cupti_maybe_load, &info) || !info.dli_fname)
        return;
    char path[4096];
    const char *slash = strrchr(info.dli_fname, '/');
    int dir = slash ? (int)(slash - info.dli_fname) : 0;
    gs_fmt(path, sizeof path, "%s", info.dli_fname);
    path[dir] = 0;
    gs_fmt(path + dir, sizeof path - (size_t)dir, "%slibgcspy_cupti.so", dir ? "/" : "");
    if (access(path, R_OK))
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "gcspy_cupti_attach") : NULL;
    const char *(*why)(void) = h ? (const char *(*)(void))dlsym(h, "gcspy_cupti_error") : NULL;
    if (h && !init) /* the driver's injection entry point does the same */
        init = (int (*)(void))dlsym(h, "InitializeInjection");
    if (!init || init() < 0) {
        const char *w = !h ? dlerror() : why && why() ? why() : "its start-up failed";
        gs_log("CUPTI subscriber not attached (%s); device events come from the hooks only", w);
        return;
    }
    cupti_flush = (int (*)(void))dlsym(h, "gcspy_cupti_flush");
}

/* Before a scan (never while the world is stopped): deliver what CUPTI has
 * buffered, so allocations only it saw are in the table. */
void gs_cupti_flush(void)
{
    if (cupti_flush)
        cupti_flush();
}

static void on_exit_cb(int status, void *arg)
{
    (void)arg;
    gs_core_exit(status, 1);
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

int gs_core_start(void)
{
    if (started || !gs_tracing())
        return -1;
    started = 1;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    int rc = gs_writer_open();
    if (rc == 0)
        rc = gs_writer_start();
    static int registered; /* a forked child inherits the registrations */
    if (rc == 0 && !registered) {
        registered = 1;
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        on_exit(on_exit_cb, NULL);
        if (gs_scan_init())
            gs_log("leak scans are off: no free real-time signal to stop threads with");
        gs_py_init();
        gs_torch_init();
    }
    gs_restore(saved);
    return rc;
}

/* ---- exit ---- */

void (*gs_exit_scan_hook)(void); /* set by gs_scan_init */
int gs_exit_scan_done;

static void human(char *buf, size_t len, uint64_t b)
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    uint64_t whole = b, frac = 0;
    while (whole >= 1024 && i < 4) {
        frac = (whole % 1024) * 10 / 1024;
        whole /= 1024;
        i++;
    }
    if (i)
        gs_fmt(buf, len, "%llu.%llu %s", (unsigned long long)whole, (unsigned long long)frac, u[i]);
    else
        gs_fmt(buf, len, "%llu B", (unsigned long long)whole);
}

void gs_totals(uint64_t *allocs, uint64_t *frees, uint64_t *bytes, uint64_t *live_blocks,
               uint64_t *live_bytes)
{
    gs_spin_lock(&threads_lock);
    *allocs = dead_allocs + atomic_load(&anon_allocs);
    *frees = dead_frees + atomic_load(&anon_frees);
    *bytes = dead_bytes + atomic_load(&anon_bytes);
    for (struct gs_thread *t = threads; t; t = t->next) {
        *allocs += t->allocs;
        *frees += t->frees;
        *bytes += t->bytes;
    }
    gs_spin_unlock(&threads_lock);
    *live_blocks = *live_bytes = 0;
    for (int i = 0; i < GS_SHARDS; i++) {
        gs_spin_lock(&gs_shards[i].s.lock);
        *live_blocks += gs_shards[i].count;
        *live_bytes += gs_shards[i].bytes;
        gs_spin_unlock(&gs_shards[i].s.lock);
    }
}

void gs_core_exit(int status, int scan)
{
    if (!gs_tracing() || getpid() != gs_pid)
        return;
    gs_tls.in_hook = 1;
    if (scan && gs_opt.scan_at_exit && gs_exit_scan_hook && !gs_exit_scan_done)
        gs_exit_scan_hook();
    /* Stop recording, then pass every shard lock once: an event in flight
     * either was recorded and counted before, or sees the stop under its
     * lock and records nothing. TRACE_END then describes exactly the
     * records in the trace, whatever other threads still do. */
    atomic_store(&gs_state, GS_STOPPED);
    gs_writer_release_waiters();
    for (int i = 0; i < GS_SHARDS; i++) {
        gs_spin_lock(&gs_shards[i].s.lock);
        gs_spin_unlock(&gs_shards[i].s.lock);
    }
    uint64_t allocs, frees, bytes, live_blocks, live_bytes;
    gs_totals(&allocs, &frees, &bytes, &live_blocks, &live_bytes);
    uint64_t t = gs_now_fine();
    uint8_t tail[GS_REC_PROCESS_EXIT_MAX + GS_REC_TRACE_END_MAX];
    uint8_t *e = gs_rec_process_exit(tail, t, status, GS_EXIT_NORMAL);
    e = gs_rec_trace_end(e, t, allocs, frees, bytes, live_blocks, live_bytes);
    int ok = gs_writer_close(tail, (size_t)(e - tail)) == 0;
    char h1[32], h2[32];
    human(h1, sizeof h1, bytes);
    human(h2, sizeof h2, live_bytes);
    if (!ok)
        return; /* the write failure has had its one line on stderr */
    gs_log("pid %d: %llu allocations (%s), %llu blocks (%s) not freed at exit", (int)gs_pid,
           (unsigned long long)allocs, h1, (unsigned long long)live_blocks, h2);
    if (gs_writer_path()[0])
        gs_log("trace: %s  (report: gcspy report %s)", gs_writer_path(), gs_writer_path());
}

/* ---- exec ---- */

void gs_on_exec(const char *path)
{
    if (!gs_tracing() || getpid() != gs_pid || !started)
        return; /* a vfork child shares our memory: leave it alone */
    size_t n = path ? strnlen(path, 4096) : 0;
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, n + 32);
    if (p) {
        gs_stream_commit(&gs_meta, gs_rec_exec(p, gs_now_fine(), path, n));
    }
    gs_spin_unlock(&gs_meta.lock);
    gs_writer_flush();
}

/* ---- fork ---- */

static void fork_prepare(void)
{
    gs_tls.in_hook = 1;
    if (!gs_tracing())
        return;
    gs_writer_atfork_lock(0);
    gs_stack_lock();
    gs_spin_lock(&gs_meta.lock);
    for (int i = 0; i < GS_SHARDS; i++)
        gs_spin_lock(&gs_shards[i].s.lock);
    gs_spin_lock(&threads_lock);
    gs_writer_atfork_lock(1);
}

static void fork_parent(void)
{
    if (gs_tracing()) {
        gs_writer_atfork_unlock(1);
        gs_spin_unlock(&threads_lock);
        for (int i = 0; i < GS_SHARDS; i++)
            gs_spin_unlock(&gs_shards[i].s.lock);
        gs_spin_unlock(&gs_meta.lock);
        gs_stack_unlock();
        gs_writer_atfork_unlock(0);
    }
    gs_tls.in_hook = 0;
}

/* The child's writer already runs: each shard is written under its lock. */
static void emit_inherited(void)
{
    for (int i = 0; i < GS_SHARDS; i++) {
        struct gs_shard *sh = &gs_shards[i];
        gs_spin_lock(&sh->s.lock);
        for (uint64_t j = 0; j < sh->cap; j++) {
            const struct gs_block *b = &sh->slots[j];
            if (!b->addr)
                continue;
            uint8_t *p = gs_stream_reserve(&sh->s, GS_REC_HOT_MAX);
            if (!p)
                break;
            p = gs_rec_alloc_ex(p, &sh->s.cur->st, 0, 0, b->addr, b->size, b->stack, b->kind,
                                GS_FN_INHERITED, 0, 0, 0);
            gs_stream_commit(&sh->s, p);
        }
        gs_spin_unlock(&sh->s.lock);
    }
}

static void fork_child(void)
{
    if (!gs_tracing()) {
        gs_tls.in_hook = 0;
        return;
    }
    /* Only this thread exists now: every lock the prepare handler took is
     * ours; the other threads' structs are dead. */
    for (int i = 0; i < GS_SHARDS; i++)
        atomic_store(&gs_shards[i].s.lock, 0);
    gs_stack_unlock();
    atomic_store(&threads_lock, 0);
    gs_writer_atfork_child();
    forked_child = 1;
    gs_pid = getpid();
    set_clock();
    dead_allocs = dead_frees = dead_bytes = 0;
    atomic_store(&anon_allocs, 0);
    atomic_store(&anon_frees, 0);
    atomic_store(&anon_bytes, 0);
    for (struct gs_thread *t = threads; t; t = t->next)
        if (t != gs_tls.th)
            t->dead = 1;
    struct gs_thread *th = gs_tls.th;
    if (th) {
        th->allocs = th->frees = th->bytes = 0;
        th->tid = gs_raw_gettid();
    }
    started = 0;
    gs_scan_atfork_child();
    /* First in the child's trace, before its writer thread runs (it writes
     * SAMPLE records of its own). */
    emit_process_start(GS_PROC_F_FORKED | (getauxval(AT_SECURE) ? GS_PROC_F_SETUID : 0));
    if (gs_core_start() == 0) {
        gs_modules_reemit();
        gs_stack_lock();
        gs_spin_lock(&gs_meta.lock);
        gs_stack_reemit();
        gs_spin_unlock(&gs_meta.lock);
        gs_stack_unlock();
        if (th)
            emit_thread(GS_REC_THREAD_START, th);
        emit_inherited();
    }
    gs_tls.in_hook = 0;
}

/* ---- other records ---- */

/* One record, encoded by the caller, into the meta stream. */
void gs_emit_meta(const uint8_t *rec, const uint8_t *end)
{
    size_t n = (size_t)(end - rec);
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, n);
    if (p) {
        memcpy(p, rec, n);
        gs_stream_commit(&gs_meta, p + n);
    }
    gs_spin_unlock(&gs_meta.lock);
}

void gs_record_pause(uint64_t t0, uint64_t t1, unsigned kind, uint64_t a, uint64_t b)
{
    struct gs_thread *th = gs_tls.th;
    uint8_t rec[GS_REC_PAUSE_MAX];
    gs_emit_meta(rec, gs_rec_pause(rec, t0, t1, kind, th ? th->index : 0, a, b));
}

void gs_record_device_sample(unsigned device, unsigned kind, uint64_t reserved, uint64_t in_use,
                             uint64_t segments, uint64_t largest_free)
{
    uint8_t rec[GS_REC_DEVICE_SAMPLE_MAX];
    gs_emit_meta(rec, gs_rec_device_sample(rec, gs_now_fine(), device, kind, reserved, in_use,
                                           segments, largest_free));
}

/* ---- public API that lives in the core ---- */

__attribute__((visibility("default"))) void gcspy_mark(const char *label)
{
    if (!gs_tracing())
        return;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1;
    gs_record_marker(GS_MARK_USER, label);
    gs_restore(saved);
}

void gs_record_marker(unsigned kind, const char *label)
{
    struct gs_thread *th = gs_thread_get();
    size_t n = label ? strnlen(label, 4096) : 0;
    gs_spin_lock(&gs_meta.lock);
    uint8_t *p = gs_stream_reserve(&gs_meta, n + 48);
    if (p) {
        gs_stream_commit(&gs_meta,
                         gs_rec_marker(p, gs_now_fine(), th ? th->index : 0, kind, label, n));
    }
    gs_spin_unlock(&gs_meta.lock);
}
