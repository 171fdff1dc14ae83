/*
 * Unit tests of the shim's core (libgcspy_core.a: everything but the
 * interposed libc functions), driven directly with fake addresses and fake
 * instruction pointers, then read back with the analyzer's trace reader.
 *
 * What is pinned here: the exact records each core call produces (ALLOC vs
 * ALLOC_EX, FREE, REALLOC, STACK nodes of the interning tree), that a free or
 * realloc of an untracked address records nothing, the live-block table past
 * thousands of blocks in one shard, per-thread start/exit records and totals,
 * the TRACE_END counters, the process record's options, never overwriting an
 * existing trace, exec flushing, and fork: the child's trace stands alone and
 * a child may fork again; PyTorch-aware mode's weak bits over the stack tree
 * and the symbol lookup that finds functions in RTLD_LOCAL modules.
 *
 * The core is process-global state that initialises once, so each test runs
 * in its own process (Criterion's default) and starts the core itself. The
 * test binary has no hooks: its own mallocs are invisible to the core.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "gcspy.h"
#include "core.h"
#include "elfsym.h"
#include "life.h"
#include "mem.h"
#include "rank.h"
#include "stack.h"
#include "table.h"
#include "threads.h"
#include "writer.h"
#include "trace_reader.h"

/* Fault injection: the writer's next compression fails when fail_compress
 * is set (this definition, in the executable, is the one the core's
 * writer calls). zstd cannot be made to fail otherwise: the writer takes
 * all the memory compression needs when it opens the trace. */
static int fail_compress;
size_t ZSTD_compressStream2(ZSTD_CCtx *c, ZSTD_outBuffer *out, ZSTD_inBuffer *in,
                            ZSTD_EndDirective end)
{
    static size_t (*real)(ZSTD_CCtx *, ZSTD_outBuffer *, ZSTD_inBuffer *, ZSTD_EndDirective);
    if (fail_compress) {
        fail_compress = 0;
        return (size_t)-ZSTD_error_memory_allocation;
    }
    if (!real)
        real = (size_t (*)(ZSTD_CCtx *, ZSTD_outBuffer *, ZSTD_inBuffer *,
                           ZSTD_EndDirective))dlsym(RTLD_NEXT, "ZSTD_compressStream2");
    return real(c, out, in, end);
}

/* ---- starting the core with a fake environment ---- */

static char dir[64];
static char outvar[256];
static char *envp[16];

/* The record arrays of the traces a test read (read_trace), freed when the
 * test ends whatever assertion ended it, so LeakSanitizer (make asan) has
 * nothing to report. */
static void *read_bufs[32];
static int nread_bufs;

static void remove_dir(void)
{
    while (nread_bufs > 0)
        free(read_bufs[--nread_bufs]);
    if (!dir[0])
        return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(dir);
}

/* Sets up envp: GCSPY_OUTPUT=<fresh dir>/<pattern>, quiet, no exit scan (the
 * scanner would read the fake addresses), then the extra NULL-terminated
 * settings. Does not start the core. */
static void make_env(const char *pattern, const char *const *extra)
{
    strcpy(dir, "/tmp/gcspy-core.XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    snprintf(outvar, sizeof outvar, "GCSPY_OUTPUT=%s/%s", dir, pattern);
    int n = 0;
    envp[n++] = outvar;
    /* extra first: the first of two settings of a variable is the one used */
    for (; extra && *extra && n < 13; extra++)
        envp[n++] = (char *)*extra;
    envp[n++] = "GCSPY_QUIET=1";
    envp[n++] = "GCSPY_SCAN_AT_EXIT=0";
    envp[n] = NULL;
}

/* Starts the core and registers the calling thread; returns its index. */
static uint32_t start_core(const char *pattern, const char *const *extra)
{
    make_env(pattern, extra);
    cr_assert_eq(gs_core_early_init(envp), 0);
    cr_assert_eq(gs_core_start(), 0);
    struct gs_thread *th = gs_thread_get();
    cr_assert_not_null(th);
    return th->index;
}

static uint32_t start(void)
{
    return start_core("core-%p.trace", NULL);
}

/* ---- reading a trace back ---- */

struct rec {
    struct gs_record r;
    char str[512]; /* exe, exec path, module path or marker label, NUL-terminated */
};

struct trace {
    struct rec *v;
    size_t n;
    int complete; /* ended with TRACE_END and a clean EOF */
};

static void copy_str(struct rec *x, struct gs_bytes b)
{
    size_t n = b.n < sizeof x->str - 1 ? b.n : sizeof x->str - 1;
    memcpy(x->str, b.p, n);
    x->str[n] = 0;
}

static struct trace read_trace(const char *path)
{
    char err[512];
    struct gs_reader *r = gs_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct trace t = {0};
    size_t cap = 0;
    struct gs_record rec;
    int rc;
    while ((rc = gs_reader_next(r, &rec)) == GS_READ_OK) {
        if (t.n == cap) {
            cap = cap ? cap * 2 : 1024;
            t.v = realloc(t.v, cap * sizeof *t.v);
            cr_assert_not_null(t.v);
        }
        struct rec *x = &t.v[t.n++];
        x->r = rec;
        x->str[0] = 0;
        switch (rec.type) {
        case GS_REC_PROCESS_START: copy_str(x, rec.u.proc.exe); break;
        case GS_REC_EXEC: copy_str(x, rec.u.exec.path); break;
        case GS_REC_MODULE: copy_str(x, rec.u.module.path); break;
        case GS_REC_MARKER: copy_str(x, rec.u.marker.label); break;
        case GS_REC_STOPPED: copy_str(x, rec.u.stopped.reason); break;
        default: break;
        }
    }
    cr_assert_neq(rc, GS_READ_DAMAGED, "%s: %s", path, gs_reader_error(r));
    cr_assert_lt(nread_bufs, 32);
    read_bufs[nread_bufs++] = t.v;
    t.complete = t.n > 0 && t.v[t.n - 1].r.type == GS_REC_TRACE_END;
    gs_reader_close(r);
    return t;
}

/* Stops the core with `status` and reads the trace it wrote. */
static struct trace finish(int status)
{
    gs_core_exit(status, 1);
    cr_assert_eq(atomic_load(&gs_state), GS_STOPPED);
    struct trace t = read_trace(gs_writer_path());
    cr_assert(t.complete, "trace %s does not end with TRACE_END", gs_writer_path());
    return t;
}

static size_t count(const struct trace *t, uint8_t type)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->v[i].r.type == type;
    return n;
}

/* The i-th record of `type` (file order). */
static const struct gs_record *nth(const struct trace *t, uint8_t type, size_t i)
{
    for (size_t j = 0; j < t->n; j++)
        if (t->v[j].r.type == type && i-- == 0)
            return &t->v[j].r;
    cr_assert_fail("no record #%zu of type 0x%02x", i, type);
    return NULL;
}

static const struct gs_record *only(const struct trace *t, uint8_t type)
{
    cr_assert_eq(count(t, type), 1, "%zu records of type 0x%02x, expected 1", count(t, type),
                 type);
    return nth(t, type, 0);
}

/* The one allocation record (ALLOC, ALLOC_EX or REALLOC of `type`) at addr. */
static const struct gs_record *alloc_at(const struct trace *t, uint8_t type, uint64_t addr)
{
    const struct gs_record *found = NULL;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].r.type == type && t->v[i].r.u.alloc.addr == addr) {
            cr_assert_null(found, "two records of type 0x%02x at 0x%lx", type, (unsigned long)addr);
            found = &t->v[i].r;
        }
    cr_assert_not_null(found, "no record of type 0x%02x at 0x%lx", type, (unsigned long)addr);
    return found;
}

static size_t frees_at(const struct trace *t, uint64_t addr)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->v[i].r.type == GS_REC_FREE && t->v[i].r.u.free.addr == addr;
    return n;
}

static void check_alloc(const struct gs_record *r, uint64_t thread, uint64_t size, uint64_t stack)
{
    cr_assert_eq(r->u.alloc.thread, thread, "thread %lu, expected %lu",
                 (unsigned long)r->u.alloc.thread, (unsigned long)thread);
    cr_assert_eq(r->u.alloc.size, size, "size %lu, expected %lu", (unsigned long)r->u.alloc.size,
                 (unsigned long)size);
    cr_assert_eq(r->u.alloc.stack, stack, "stack %lu, expected %lu",
                 (unsigned long)r->u.alloc.stack, (unsigned long)stack);
}

static void check_end(const struct trace *t, uint64_t allocs, uint64_t frees, uint64_t bytes,
                      uint64_t live_blocks, uint64_t live_bytes)
{
    const struct gs_record *e = only(t, GS_REC_TRACE_END);
    cr_assert_eq(e->u.end.allocs, allocs, "allocs %lu, expected %lu",
                 (unsigned long)e->u.end.allocs, (unsigned long)allocs);
    cr_assert_eq(e->u.end.frees, frees, "frees %lu, expected %lu", (unsigned long)e->u.end.frees,
                 (unsigned long)frees);
    cr_assert_eq(e->u.end.bytes_allocated, bytes, "bytes %lu, expected %lu",
                 (unsigned long)e->u.end.bytes_allocated, (unsigned long)bytes);
    cr_assert_eq(e->u.end.live_blocks, live_blocks, "live_blocks %lu, expected %lu",
                 (unsigned long)e->u.end.live_blocks, (unsigned long)live_blocks);
    cr_assert_eq(e->u.end.live_bytes, live_bytes, "live_bytes %lu, expected %lu",
                 (unsigned long)e->u.end.live_bytes, (unsigned long)live_bytes);
}

/* Every STACK node is defined once, after its parent, before any event that
 * names it; returns the number of nodes. */
static size_t check_stack_order(const struct trace *t)
{
    static uint8_t defined[1 << 16];
    memset(defined, 0, sizeof defined);
    size_t nodes = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct gs_record *r = &t->v[i].r;
        if (r->type == GS_REC_STACK) {
            cr_assert_lt(r->u.stack.id, sizeof defined);
            cr_assert_not(defined[r->u.stack.id], "stack node %lu defined twice",
                          (unsigned long)r->u.stack.id);
            cr_assert(r->u.stack.parent == 0 || defined[r->u.stack.parent],
                      "node %lu before its parent %lu", (unsigned long)r->u.stack.id,
                      (unsigned long)r->u.stack.parent);
            defined[r->u.stack.id] = 1;
            nodes++;
        } else if (r->type == GS_REC_ALLOC || r->type == GS_REC_ALLOC_EX ||
                   r->type == GS_REC_REALLOC) {
            cr_assert(r->u.alloc.stack == 0 || defined[r->u.alloc.stack],
                      "event uses stack %lu before its definition", (unsigned long)r->u.alloc.stack);
        }
    }
    return nodes;
}

/* The frames of stack `id`, innermost first, from the trace's STACK records. */
static int frames(const struct trace *t, uint64_t id, uint64_t *out, int max)
{
    int n = 0;
    while (id && n < max) {
        const struct gs_record *node = NULL;
        for (size_t i = 0; i < t->n && !node; i++)
            if (t->v[i].r.type == GS_REC_STACK && t->v[i].r.u.stack.id == id)
                node = &t->v[i].r;
        cr_assert_not_null(node, "stack node %lu not defined", (unsigned long)id);
        out[n++] = node->u.stack.ip;
        id = node->u.stack.parent;
    }
    return n;
}

TestSuite(core, .fini = remove_dir, .timeout = 30);

/* ---- events ---- */

Test(core, alloc_free_exact_records)
{
    uint32_t me = start();
    uintptr_t ips[] = {0x401234, 0x401100, 0x400f00};
    uint32_t s = gs_stack_intern(ips, 3);
    cr_assert_neq(s, 0);

    gs_on_alloc(0x10000, 100, s, GS_MEM_HOST, GS_FN_MALLOC);
    gs_on_alloc(0x10040, 200, s, GS_MEM_HOST, GS_FN_CALLOC);
    gs_on_alloc(0x7f0000020000, 4096, 0, GS_MEM_HOST, GS_FN_MEMALIGN);
    gs_on_alloc(0x7f0000030000, 8192, s, GS_MEM_HOST, GS_FN_VALLOC);
    cr_assert_eq(gs_on_free(0x10000), 1);
    cr_assert_eq(gs_on_free(0x10000), 0, "second free of one block recorded");
    cr_assert_eq(gs_on_free(0x99990), 0, "free of an address never allocated recorded");
    cr_assert_eq(gs_on_free(0x10041), 0, "free of an interior pointer recorded");
    cr_assert_eq(gs_on_free(0x7f0000030000), 1);

    struct trace t = finish(7);

    const struct gs_record *p = only(&t, GS_REC_PROCESS_START);
    cr_assert_eq(p->u.proc.pid, (uint64_t)getpid());
    cr_assert_eq(p->u.proc.ppid, (uint64_t)getppid());
    cr_assert_eq(p->u.proc.flags, 0);
    cr_assert_eq(p->u.proc.unwinder, GS_UNWIND_FP);
    cr_assert_eq(p->u.proc.depth, 64);
    cr_assert_eq(p->u.proc.page_size, (uint64_t)sysconf(_SC_PAGESIZE));
    cr_assert_gt(count(&t, GS_REC_MODULE), 0, "no module map");

    const struct gs_record *ts = only(&t, GS_REC_THREAD_START);
    cr_assert_eq(ts->u.thread.index, me);
    cr_assert_eq(ts->u.thread.tid, (uint64_t)gettid());

    cr_assert_eq(count(&t, GS_REC_ALLOC), 1);
    check_alloc(alloc_at(&t, GS_REC_ALLOC, 0x10000), me, 100, s);
    cr_assert_eq(count(&t, GS_REC_ALLOC_EX), 3);
    const struct gs_record *c = alloc_at(&t, GS_REC_ALLOC_EX, 0x10040);
    check_alloc(c, me, 200, s);
    cr_assert_eq(c->u.alloc.kind, GS_MEM_HOST);
    cr_assert_eq(c->u.alloc.fn, GS_FN_CALLOC);
    c = alloc_at(&t, GS_REC_ALLOC_EX, 0x7f0000020000);
    check_alloc(c, me, 4096, 0);
    cr_assert_eq(c->u.alloc.fn, GS_FN_MEMALIGN);
    c = alloc_at(&t, GS_REC_ALLOC_EX, 0x7f0000030000);
    check_alloc(c, me, 8192, s);
    cr_assert_eq(c->u.alloc.fn, GS_FN_VALLOC);

    cr_assert_eq(count(&t, GS_REC_FREE), 2);
    cr_assert_eq(count(&t, GS_REC_FREE_EX), 0);
    cr_assert_eq(frees_at(&t, 0x10000), 1);
    cr_assert_eq(frees_at(&t, 0x7f0000030000), 1);
    cr_assert_eq(count(&t, GS_REC_REALLOC), 0);

    /* The tail: PROCESS_EXIT, then TRACE_END as the very last record. */
    const struct gs_record *x = only(&t, GS_REC_PROCESS_EXIT);
    cr_assert_eq(x->u.exit.status, 7);
    cr_assert_eq(x->u.exit.how, GS_EXIT_NORMAL);
    cr_assert_eq(t.v[t.n - 2].r.type, GS_REC_PROCESS_EXIT);
    check_end(&t, 4, 2, 100 + 200 + 4096 + 8192, 2, 200 + 4096);
    cr_assert_eq(check_stack_order(&t), 3);
}

Test(core, same_address_twice_counts_once)
{
    /* An ALLOC at an address already live means a free was missed: the
     * table replaces the block; the live totals count it once. */
    uint32_t me = start();
    gs_on_alloc(0x50000, 10, 0, GS_MEM_HOST, GS_FN_MALLOC);
    gs_on_alloc(0x50000, 30, 0, GS_MEM_HOST, GS_FN_MALLOC);
    struct trace t = finish(0);
    cr_assert_eq(count(&t, GS_REC_ALLOC), 2);
    cr_assert_eq(nth(&t, GS_REC_ALLOC, 1)->u.alloc.thread, me);
    check_end(&t, 2, 0, 40, 1, 30);
}

/* ---- stacks ---- */

Test(core, stack_interning_tree)
{
    start();
    uintptr_t a[] = {0x1003, 0x1002, 0x1001};
    uintptr_t a2[] = {0x1003, 0x1002, 0x1001};
    uintptr_t b[] = {0x2003, 0x1002, 0x1001}; /* shares the two outer frames */
    uintptr_t c[] = {0x1002, 0x1001};         /* a prefix of a: an existing node */
    uintptr_t d[] = {0x1001, 0x1002, 0x1003}; /* a's frames, other order: all new */
    uint32_t ia = gs_stack_intern(a, 3);
    cr_assert_eq(ia, 3, "first stack's innermost node is id 3, got %u", ia);
    cr_assert_eq(gs_stack_intern(a, 3), ia, "same array, other id");
    cr_assert_eq(gs_stack_intern(a2, 3), ia, "equal stack, other id");
    uint32_t ib = gs_stack_intern(b, 3);
    cr_assert_eq(ib, 4);
    uint32_t ic = gs_stack_intern(c, 2);
    cr_assert_eq(ic, 2, "prefix must reuse the tree node, got %u", ic);
    uint32_t id = gs_stack_intern(d, 3);
    cr_assert_eq(id, 7);
    cr_assert_eq(gs_stack_intern(a, 0), 0, "an empty stack is id 0");

    /* The deepest stack the shim takes; sharing the outer 255 frames with a
     * second one makes exactly one more node. */
    uintptr_t deep[GS_MAX_DEPTH];
    for (int i = 0; i < GS_MAX_DEPTH; i++)
        deep[i] = 0x500000 + 16 * (uintptr_t)(GS_MAX_DEPTH - i);
    uint32_t idp = gs_stack_intern(deep, GS_MAX_DEPTH);
    cr_assert_eq(idp, 7 + GS_MAX_DEPTH);
    deep[0] = 0x600000;
    cr_assert_eq(gs_stack_intern(deep, GS_MAX_DEPTH), idp + 1);

    gs_on_alloc(0x20000, 1, ia, GS_MEM_HOST, GS_FN_MALLOC);
    gs_on_alloc(0x20010, 2, ib, GS_MEM_HOST, GS_FN_MALLOC);
    gs_on_alloc(0x20020, 3, idp + 1, GS_MEM_HOST, GS_FN_MALLOC);
    struct trace t = finish(0);

    cr_assert_eq(check_stack_order(&t), 7 + GS_MAX_DEPTH + 1);
    struct { uint64_t id, parent, ip; } want[] = {
        {1, 0, 0x1001}, {2, 1, 0x1002}, {3, 2, 0x1003}, {4, 2, 0x2003},
        {5, 0, 0x1003}, {6, 5, 0x1002}, {7, 6, 0x1001},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct gs_record *r = nth(&t, GS_REC_STACK, i);
        cr_assert_eq(r->u.stack.id, want[i].id);
        cr_assert_eq(r->u.stack.parent, want[i].parent, "node %lu parent %lu",
                     (unsigned long)want[i].id, (unsigned long)r->u.stack.parent);
        cr_assert_eq(r->u.stack.ip, want[i].ip);
    }
    uint64_t f[GS_MAX_DEPTH + 1];
    cr_assert_eq(frames(&t, ib, f, 8), 3);
    cr_assert_eq(f[0], 0x2003);
    cr_assert_eq(f[1], 0x1002);
    cr_assert_eq(f[2], 0x1001);
    cr_assert_eq(frames(&t, idp + 1, f, GS_MAX_DEPTH + 1), GS_MAX_DEPTH);
    cr_assert_eq(f[0], 0x600000);
    for (int i = 1; i < GS_MAX_DEPTH; i++)
        cr_assert_eq(f[i], 0x500000 + 16 * (uint64_t)(GS_MAX_DEPTH - i));
    check_alloc(alloc_at(&t, GS_REC_ALLOC, 0x20000), 1, 1, ia);
}

Test(core, stack_interning_without_thread_struct)
{
    /* A thread without its struct (after its TSD destructors ran) has no
     * cache: interning still finds existing nodes. */
    start();
    uintptr_t a[] = {0x3002, 0x3001};
    uint32_t id = gs_stack_intern(a, 2);
    struct gs_thread *saved = gs_tls.th;
    gs_tls.th = NULL;
    cr_assert_eq(gs_stack_intern(a, 2), id);
    uintptr_t b[] = {0x3003, 0x3001};
    cr_assert_eq(gs_stack_intern(b, 2), 3);
    gs_tls.th = saved;
    struct trace t = finish(0);
    cr_assert_eq(check_stack_order(&t), 3);
}

/* ---- realloc ---- */

Test(core, realloc_cases)
{
    uint32_t me = start();
    uintptr_t ips[] = {0x7001};
    uint32_t s = gs_stack_intern(ips, 1);

    /* grows in place: one REALLOC with the new size and stack */
    gs_on_alloc(0x20000, 10, 0, GS_MEM_HOST, GS_FN_MALLOC);
    struct gs_shard *sh = gs_on_realloc_begin(0x20000);
    cr_assert_eq(sh, gs_shard_of(0x20000));
    gs_on_realloc_end(sh, 0x20000, 0x20000, 50, s);
    /* moves: FREE of the old address, ALLOC_EX fn=realloc at the new one */
    sh = gs_on_realloc_begin(0x20000);
    gs_on_realloc_end(sh, 0x20000, 0x30000, 80, s);
    /* fails (NULL, size > 0): nothing recorded, the block stays */
    sh = gs_on_realloc_begin(0x30000);
    gs_on_realloc_end(sh, 0x30000, 0, 1000, s);
    /* realloc(p, 0) that frees: one FREE */
    gs_on_alloc(0x40000, 16, 0, GS_MEM_HOST, GS_FN_MALLOC);
    sh = gs_on_realloc_begin(0x40000);
    gs_on_realloc_end(sh, 0x40000, 0, 0, 0);
    /* an untracked block kept in place, and one moved: new ALLOC_EX only */
    sh = gs_on_realloc_begin(0x60000);
    gs_on_realloc_end(sh, 0x60000, 0x60000, 64, s);
    sh = gs_on_realloc_begin(0x70000);
    gs_on_realloc_end(sh, 0x70000, 0x80000, 32, s);
    /* Every path released the shard lock: these would spin forever. */
    cr_assert_eq(gs_on_free(0x20000), 0);
    cr_assert_eq(gs_on_free(0x40000), 0);
    cr_assert_eq(gs_on_free(0x70000), 0);

    struct trace t = finish(0);
    const struct gs_record *r = only(&t, GS_REC_REALLOC);
    cr_assert_eq(r->u.alloc.addr, 0x20000);
    check_alloc(r, me, 50, s);
    cr_assert_eq(count(&t, GS_REC_ALLOC), 2);
    check_alloc(alloc_at(&t, GS_REC_ALLOC, 0x20000), me, 10, 0);
    check_alloc(alloc_at(&t, GS_REC_ALLOC, 0x40000), me, 16, 0);
    cr_assert_eq(count(&t, GS_REC_ALLOC_EX), 3);
    const uint64_t ex[][2] = {{0x30000, 80}, {0x60000, 64}, {0x80000, 32}};
    for (int i = 0; i < 3; i++) {
        const struct gs_record *a = alloc_at(&t, GS_REC_ALLOC_EX, ex[i][0]);
        check_alloc(a, me, ex[i][1], s);
        cr_assert_eq(a->u.alloc.fn, GS_FN_REALLOC);
    }
    cr_assert_eq(count(&t, GS_REC_FREE), 2);
    cr_assert_eq(frees_at(&t, 0x20000), 1);
    cr_assert_eq(frees_at(&t, 0x40000), 1);
    /* same shard, so file order is event order: ALLOC, REALLOC, FREE */
    size_t ia = 0, ir = 0, ifr = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct gs_record *x = &t.v[i].r;
        if (x->type == GS_REC_ALLOC && x->u.alloc.addr == 0x20000) ia = i;
        if (x->type == GS_REC_REALLOC) ir = i;
        if (x->type == GS_REC_FREE && x->u.free.addr == 0x20000) ifr = i;
    }
    cr_assert(ia < ir && ir < ifr, "records of 0x20000 out of order: %zu %zu %zu", ia, ir, ifr);
    /* allocs: 2 mallocs + 3 realloc allocations; the in-place growth is not
     * an allocation and does not add to bytes_allocated. */
    check_end(&t, 5, 2, 10 + 16 + 80 + 64 + 32, 3, 80 + 64 + 32);
}

/* ---- the live-block table ---- */

#define REGION 0x200000ull /* one 64 KiB region: one shard */
#define NDENSE 5000
#define NSPREAD 3000

static uint64_t dense(int i) { return REGION + 8 * (uint64_t)i; }
static uint64_t spread(int i) { return 0x10000000ull + 0x10000ull * (uint64_t)i + 16 * (uint64_t)(i % 7); }

Test(core, table_growth_and_deletion)
{
    uint32_t me = start();
    struct gs_shard *sh = gs_shard_of(REGION);
    for (int i = 0; i < NDENSE; i++)
        cr_assert_eq(gs_shard_of(dense(i)), sh);
    uint64_t cap0 = sh->cap;
    for (int i = 0; i < NDENSE; i++)
        gs_on_alloc(dense(i), 1 + (uint64_t)i % 100, 0, GS_MEM_HOST, GS_FN_MALLOC);
    for (int i = 0; i < NSPREAD; i++)
        gs_on_alloc(spread(i), 1000 + (uint64_t)i, 0, GS_MEM_HOST, GS_FN_MALLOC);
    cr_assert_geq(sh->count, NDENSE);
    cr_assert_gt(sh->cap, cap0, "the dense shard never grew (cap %lu)", (unsigned long)sh->cap);
    cr_assert_geq(sh->cap * 3, sh->count * 4, "load factor above 3/4");

    /* Free the odd dense blocks in a scrambled order (7919 is prime, so
     * i -> i*7919 mod NDENSE visits every index once) and every third spread
     * block; each is found exactly once. */
    uint64_t live_blocks = NDENSE + NSPREAD, live_bytes = 0, bytes = 0;
    for (int i = 0; i < NDENSE; i++)
        bytes += 1 + (uint64_t)i % 100;
    for (int i = 0; i < NSPREAD; i++)
        bytes += 1000 + (uint64_t)i;
    live_bytes = bytes;
    uint64_t nfree = 0;
    for (int k = 0; k < NDENSE; k++) {
        int i = (int)(((uint64_t)k * 7919) % NDENSE);
        if (i % 2 == 0)
            continue;
        cr_assert_eq(gs_on_free(dense(i)), 1, "dense block %d not found", i);
        cr_assert_eq(gs_on_free(dense(i)), 0, "dense block %d found twice", i);
        live_blocks--, live_bytes -= 1 + (uint64_t)i % 100, nfree++;
    }
    for (int i = 0; i < NSPREAD; i += 3) {
        cr_assert_eq(gs_on_free(spread(i)), 1, "spread block %d not found", i);
        live_blocks--, live_bytes -= 1000 + (uint64_t)i, nfree++;
    }
    /* Backward-shift deletion kept every survivor reachable. */
    for (int i = 0; i < NDENSE; i += 2) {
        struct gs_block *b = gs_table_find(gs_shard_of(dense(i)), dense(i));
        cr_assert_not_null(b, "dense block %d lost after deletions", i);
        cr_assert_eq(b->size, 1 + (uint64_t)i % 100);
    }
    for (int i = 1; i < NSPREAD; i++)
        if (i % 3)
            cr_assert_not_null(gs_table_find(gs_shard_of(spread(i)), spread(i)));

    struct trace t = finish(0);
    cr_assert_eq(count(&t, GS_REC_ALLOC), NDENSE + NSPREAD);
    cr_assert_eq(count(&t, GS_REC_FREE), nfree);
    check_end(&t, NDENSE + NSPREAD, nfree, bytes, live_blocks, live_bytes);
    /* Every record decodes to an address we made, with its size. */
    for (size_t i = 0; i < t.n; i++) {
        const struct gs_record *r = &t.v[i].r;
        if (r->type != GS_REC_ALLOC)
            continue;
        uint64_t a = r->u.alloc.addr;
        cr_assert_eq(r->u.alloc.thread, me);
        if (a < 0x10000000ull) {
            cr_assert((a - REGION) % 8 == 0 && (a - REGION) / 8 < NDENSE);
            cr_assert_eq(r->u.alloc.size, 1 + (a - REGION) / 8 % 100);
        } else {
            uint64_t j = (a - 0x10000000ull) >> 16;
            cr_assert_eq(a, spread((int)j));
            cr_assert_eq(r->u.alloc.size, 1000 + j);
        }
    }
}

/* ---- threads ---- */

#define NTHREADS 4
#define PER_THREAD 100

struct worker {
    int k;
    uint32_t index;
    int tid;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct gs_thread *th = gs_thread_get();
    if (!th)
        return NULL;
    w->index = th->index;
    w->tid = gs_raw_gettid();
    uint64_t base = 0x40000000ull + 0x1000000ull * (uint64_t)w->k;
    for (int i = 0; i < PER_THREAD; i++)
        gs_on_alloc(base + 32 * (uint64_t)i, 10 + (uint64_t)w->k, 0, GS_MEM_HOST, GS_FN_MALLOC);
    for (int i = 0; i < PER_THREAD; i += 2)
        gs_on_free(base + 32 * (uint64_t)i);
    return NULL;
}

Test(core, threads_start_exit_and_totals)
{
    uint32_t me = start();
    struct worker w[NTHREADS + 1];
    pthread_t pt[NTHREADS + 1];
    for (int k = 0; k < NTHREADS; k++) {
        w[k] = (struct worker){.k = k};
        cr_assert_eq(pthread_create(&pt[k], NULL, worker_main, &w[k]), 0);
    }
    for (int k = 0; k < NTHREADS; k++)
        cr_assert_eq(pthread_join(pt[k], NULL), 0);
    /* A thread started after the others died reuses a dead struct but gets
     * a new index. */
    w[NTHREADS] = (struct worker){.k = NTHREADS};
    cr_assert_eq(pthread_create(&pt[NTHREADS], NULL, worker_main, &w[NTHREADS]), 0);
    cr_assert_eq(pthread_join(pt[NTHREADS], NULL), 0);
    gs_on_alloc(0x90000, 5, 0, GS_MEM_HOST, GS_FN_MALLOC);

    struct trace t = finish(0);
    cr_assert_eq(count(&t, GS_REC_THREAD_START), NTHREADS + 2);
    cr_assert_eq(count(&t, GS_REC_THREAD_EXIT), NTHREADS + 1);
    for (int k = 0; k <= NTHREADS; k++) {
        cr_assert_neq(w[k].index, 0, "worker %d got no thread struct", k);
        cr_assert_neq(w[k].index, me);
        for (int j = 0; j < k; j++)
            cr_assert_neq(w[k].index, w[j].index, "workers %d and %d share index %u", j, k,
                          w[k].index);
        int started = 0, exited = 0;
        for (size_t i = 0; i < t.n; i++) {
            const struct gs_record *r = &t.v[i].r;
            if (r->type == GS_REC_THREAD_START && r->u.thread.index == w[k].index) {
                cr_assert_eq(r->u.thread.tid, (uint64_t)w[k].tid);
                cr_assert_not(exited, "thread %u exits before it starts", w[k].index);
                started++;
            }
            if (r->type == GS_REC_THREAD_EXIT && r->u.thread.index == w[k].index)
                exited++;
        }
        cr_assert_eq(started, 1, "thread %u: %d starts", w[k].index, started);
        cr_assert_eq(exited, 1, "thread %u: %d exits", w[k].index, exited);
        size_t n = 0;
        for (size_t i = 0; i < t.n; i++) {
            const struct gs_record *r = &t.v[i].r;
            if (r->type == GS_REC_ALLOC && r->u.alloc.thread == w[k].index) {
                cr_assert_eq(r->u.alloc.size, 10 + (uint64_t)k);
                n++;
            }
        }
        cr_assert_eq(n, PER_THREAD, "thread %u: %zu allocs", w[k].index, n);
    }
    cr_assert_eq(w[NTHREADS].index, me + NTHREADS + 1);
    uint64_t bytes = 5, live = 5;
    for (int k = 0; k <= NTHREADS; k++) {
        bytes += PER_THREAD * (10 + (uint64_t)k);
        live += PER_THREAD / 2 * (10 + (uint64_t)k);
    }
    /* Totals include the dead threads' counts. */
    uint64_t n = (NTHREADS + 1) * PER_THREAD;
    check_end(&t, n + 1, n / 2, bytes, n / 2 + 1, live);
}

/* A thread that only frees blocks others allocated: its FREE records are in
 * the trace, so TRACE_END must count them too. */
static void *free_only(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++)
        gs_on_free(0xA0000 + 16 * (uint64_t)i);
    return NULL;
}

Test(core, frees_of_a_thread_that_never_allocated_are_counted)
{
    start();
    for (int i = 0; i < 10; i++)
        gs_on_alloc(0xA0000 + 16 * (uint64_t)i, 8, 0, GS_MEM_HOST, GS_FN_MALLOC);
    pthread_t pt;
    cr_assert_eq(pthread_create(&pt, NULL, free_only, NULL), 0);
    cr_assert_eq(pthread_join(pt, NULL), 0);
    struct trace t = finish(0);
    cr_assert_eq(count(&t, GS_REC_FREE), 10);
    check_end(&t, 10, 10, 80, 0, 0);
}

/* ---- options, output file, exec, marker ---- */

Test(core, options_reach_the_process_record)
{
    static const char *const extra[] = {"GCSPY_DEPTH=7", "GCSPY_UNWIND=libunwind", NULL};
    start_core("opt.trace", extra);
    cr_assert_eq(gs_opt.depth, 7);
    struct trace t = finish(0);
    const struct gs_record *p = only(&t, GS_REC_PROCESS_START);
    cr_assert_eq(p->u.proc.depth, 7);
    cr_assert_eq(p->u.proc.unwinder, GS_UNWIND_LIBUNWIND);
}

/* stderr sent to a file in the test directory, between these two calls. */
struct captured {
    char path[128];
    int fd, saved;
};

static void stderr_capture(struct captured *c)
{
    snprintf(c->path, sizeof c->path, "%s/stderr", dir);
    c->fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(c->fd, 0);
    c->saved = dup(2);
    dup2(c->fd, 2);
    gs_log_bind(); /* gcspy writes only to the stderr it was given */
}

/* Restores stderr; what was written is in buf (NUL-ended); returns its length. */
static ssize_t stderr_release(struct captured *c, char *buf, size_t len)
{
    dup2(c->saved, 2);
    close(c->saved);
    gs_log_bind();
    ssize_t n = pread(c->fd, buf, len - 1, 0);
    close(c->fd);
    unlink(c->path);
    buf[n > 0 ? n : 0] = 0;
    return n;
}

/* Runs gs_core_early_init with stderr captured into buf. */
static int early_init_captured(char *buf, size_t len)
{
    struct captured c;
    stderr_capture(&c);
    int rc = gs_core_early_init(envp);
    stderr_release(&c, buf, len);
    return rc;
}

Test(core, bad_option_values_keep_defaults)
{
    static const char *const extra[] = {"GCSPY_DEPTH=lots", "GCSPY_UNWIND=magic",
                                        "GCSPY_FLUSH_MS=1", "GCSPY_QUIET=0", NULL};
    make_env("opt.trace", extra);
    char err[1024];
    cr_assert_eq(early_init_captured(err, sizeof err), 0);
    /* one line per bad value, in options.def order, then one per value
     * outside its range (GS_OPT_RANGE) */
    cr_assert_str_eq(err, "gcspy: ignoring GCSPY_UNWIND=magic: not a valid value (default fp)\n"
                          "gcspy: ignoring GCSPY_DEPTH=lots: not a valid value (default 64)\n"
                          "gcspy: ignoring GCSPY_FLUSH_MS=1: not a valid value (10 to 3600000; "
                          "default 100)\n");
    cr_assert_eq(gs_core_start(), 0);
    gs_opt.quiet = 1; /* no exit summary on the test's stderr */
    cr_assert_eq(gs_opt.depth, 64);
    cr_assert_eq(gs_opt.unwind, GS_UNWIND_FP);
    cr_assert_eq(gs_opt.flush_ms, 100, "flush interval below the 10 ms floor: the default");
    struct trace t = finish(0);
    cr_assert_eq(only(&t, GS_REC_PROCESS_START)->u.proc.depth, 64);
}

Test(core, quiet_silences_option_warnings)
{
    /* GCSPY_QUIET=1: "print nothing on stderr", bad values included, wherever
     * the options sit in options.def. */
    static const char *const extra[] = {"GCSPY_DEPTH=lots", "GCSPY_SAMPLE_MS=x", NULL};
    make_env("opt.trace", extra);
    char err[1024];
    cr_assert_eq(early_init_captured(err, sizeof err), 0);
    cr_assert_str_eq(err, "", "stderr with GCSPY_QUIET=1: %s", err);
    cr_assert_eq(gs_opt.depth, 64);
}

Test(core, disabled_writes_nothing)
{
    static const char *const extra[] = {"GCSPY_DISABLE=1", NULL};
    make_env("off.trace", extra);
    cr_assert_eq(gs_core_early_init(envp), -1);
    cr_assert_eq(gs_core_start(), -1);
    cr_assert_eq(atomic_load(&gs_state), GS_OFF);
    char p[128];
    snprintf(p, sizeof p, "%s/off.trace", dir);
    cr_assert_eq(access(p, F_OK), -1, "a disabled core created %s", p);
}

Test(core, existing_trace_is_never_overwritten)
{
    char p[128];
    make_env("fixed.trace", NULL);
    snprintf(p, sizeof p, "%s/fixed.trace", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "keep", 4), 4);
    close(fd);
    cr_assert_eq(gs_core_early_init(envp), 0);
    cr_assert_eq(gs_core_start(), 0);
    char want[140];
    snprintf(want, sizeof want, "%s.1", p);
    cr_assert_str_eq(gs_writer_path(), want);
    struct trace t = finish(0);
    cr_assert_eq(count(&t, GS_REC_PROCESS_START), 1);
    char buf[16] = {0};
    fd = open(p, O_RDONLY);
    cr_assert_eq(read(fd, buf, sizeof buf), 4);
    close(fd);
    cr_assert_str_eq(buf, "keep");
}

Test(core, pattern_expands_pid)
{
    make_env("x-%p-%%.trace", NULL);
    cr_assert_eq(gs_core_early_init(envp), 0);
    cr_assert_eq(gs_core_start(), 0);
    char want[128];
    snprintf(want, sizeof want, "%s/x-%d-%%.trace", dir, (int)getpid());
    cr_assert_str_eq(gs_writer_path(), want);
    finish(0);
}

Test(core, exec_record_is_flushed_before_exec)
{
    start();
    gs_on_alloc(0x10000, 77, 0, GS_MEM_HOST, GS_FN_MALLOC);
    gs_on_exec("/bin/echo");
    /* What exec would leave: everything up to the EXEC record is in the file
     * now, without TRACE_END. */
    struct trace t = read_trace(gs_writer_path());
    cr_assert_not(t.complete);
    size_t i;
    for (i = 0; i < t.n && t.v[i].r.type != GS_REC_EXEC; i++)
        ;
    cr_assert_lt(i, t.n, "no EXEC record flushed");
    cr_assert_str_eq(t.v[i].str, "/bin/echo");
    check_alloc(alloc_at(&t, GS_REC_ALLOC, 0x10000), 1, 77, 0);
    t = finish(0);
    cr_assert_eq(count(&t, GS_REC_EXEC), 1);
}

Test(core, marker)
{
    uint32_t me = start();
    gcspy_mark("epoch 3");
    struct trace t = finish(0);
    size_t i;
    for (i = 0; i < t.n && t.v[i].r.type != GS_REC_MARKER; i++)
        ;
    cr_assert_lt(i, t.n);
    cr_assert_str_eq(t.v[i].str, "epoch 3");
    cr_assert_eq(t.v[i].r.u.marker.thread, me);
    cr_assert_eq(t.v[i].r.u.marker.kind, GS_MARK_USER);
}

/* ---- fork ---- */

static void trace_path_of(pid_t pid, char *out, size_t len)
{
    snprintf(out, len, "%s/core-%d.trace", dir, (int)pid);
}

/* PROCESS_START is a trace's first record (after its TIMEBASE): written
 * before tracing starts, so no other thread's record can precede it. */
static void check_process_first(const struct trace *t, uint64_t flags)
{
    size_t i = 0;
    while (i < t->n && t->v[i].r.type == GS_REC_TIMEBASE)
        i++;
    cr_assert_lt(i, t->n);
    cr_assert_eq(t->v[i].r.type, GS_REC_PROCESS_START, "first record 0x%02x", t->v[i].r.type);
    cr_assert_eq(t->v[i].r.u.proc.flags, flags, "process flags 0x%llx",
                 (unsigned long long)t->v[i].r.u.proc.flags);
}

Test(core, fork_child_trace_stands_alone)
{
    uint32_t me = start();
    uintptr_t ips[] = {0x8002, 0x8001};
    uint32_t s = gs_stack_intern(ips, 2);
    gs_on_alloc(0x10000, 100, s, GS_MEM_HOST, GS_FN_MALLOC);
    gs_on_alloc(0x20000, 200, s, GS_MEM_HOST, GS_FN_CALLOC);
    gs_on_alloc(0x30000, 300, 0, GS_MEM_HOST, GS_FN_MALLOC);
    pid_t parent = getpid();
    pid_t c = fork();
    cr_assert_geq(c, 0);
    if (c == 0) {
        /* Child: no Criterion asserts here (they would report from the
         * wrong process); the exit status says what went wrong. */
        int rc = 0;
        if (gs_on_free(0x10000) != 1)
            rc = 10;
        gs_on_alloc(0x40000, 400, s, GS_MEM_HOST, GS_FN_MALLOC);
        if (strcmp(gs_writer_path(), "") == 0)
            rc = 11;
        gs_core_exit(3, 1);
        _exit(rc);
    }
    int st;
    cr_assert_eq(waitpid(c, &st, 0), c);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
    cr_assert_eq(gs_on_free(0x20000), 1);
    gs_on_alloc(0x50000, 500, 0, GS_MEM_HOST, GS_FN_MALLOC);
    struct trace t = finish(0);

    /* The parent's trace: its own events only. */
    cr_assert_eq(count(&t, GS_REC_ALLOC), 3);
    cr_assert_eq(count(&t, GS_REC_ALLOC_EX), 1);
    cr_assert_eq(count(&t, GS_REC_FREE), 1);
    cr_assert_eq(frees_at(&t, 0x20000), 1);
    alloc_at(&t, GS_REC_ALLOC, 0x50000);
    for (size_t i = 0; i < t.n; i++)
        cr_assert(t.v[i].r.type != GS_REC_ALLOC || t.v[i].r.u.alloc.addr != 0x40000,
                  "the child's allocation is in the parent's trace");
    check_end(&t, 4, 1, 1100, 3, 900);

    /* The child's trace. */
    char p[128];
    trace_path_of(c, p, sizeof p);
    struct trace k = read_trace(p);
    cr_assert(k.complete, "child trace %s incomplete", p);
    check_process_first(&t, 0); /* not set-user-ID: no GS_PROC_F_SETUID */
    check_process_first(&k, GS_PROC_F_FORKED);
    const struct gs_record *pr = only(&k, GS_REC_PROCESS_START);
    cr_assert_eq(pr->u.proc.pid, (uint64_t)c);
    cr_assert_eq(pr->u.proc.ppid, (uint64_t)parent);
    cr_assert_eq(pr->u.proc.flags, GS_PROC_F_FORKED);
    cr_assert_gt(count(&k, GS_REC_MODULE), 0, "child trace has no module map");
    cr_assert_eq(check_stack_order(&k), 2, "child trace must re-define the stack tree");
    const struct gs_record *ts = only(&k, GS_REC_THREAD_START);
    cr_assert_eq(ts->u.thread.index, me);
    cr_assert_eq(ts->u.thread.tid, (uint64_t)c);
    cr_assert_eq(count(&k, GS_REC_ALLOC_EX), 3, "inherited blocks");
    const uint64_t inh[][3] = {{0x10000, 100, 0}, {0x20000, 200, 0}, {0x30000, 300, 0}};
    for (int i = 0; i < 3; i++) {
        const struct gs_record *a = alloc_at(&k, GS_REC_ALLOC_EX, inh[i][0]);
        cr_assert_eq(a->u.alloc.fn, GS_FN_INHERITED);
        cr_assert_eq(a->u.alloc.kind, GS_MEM_HOST);
        cr_assert_eq(a->u.alloc.size, inh[i][1]);
        cr_assert_eq(a->u.alloc.stack, i < 2 ? s : 0);
    }
    check_alloc(only(&k, GS_REC_ALLOC), me, 400, s);
    cr_assert_eq(only(&k, GS_REC_FREE)->u.free.addr, 0x10000);
    cr_assert_eq(only(&k, GS_REC_PROCESS_EXIT)->u.exit.status, 3);
    /* Counters are the child's own; live blocks include the inherited. */
    check_end(&k, 1, 1, 400, 3, 900);
}

Test(core, fork_from_a_forked_child)
{
    /* A forked child that forks again (a shell running a pipeline does):
     * every generation writes a complete trace. alarm() bounds a deadlock in
     * the atfork handlers so the failure is an exit status, not a hang. */
    start();
    gs_on_alloc(0x10000, 100, 0, GS_MEM_HOST, GS_FN_MALLOC);
    pid_t c = fork();
    cr_assert_geq(c, 0);
    if (c == 0) {
        alarm(5);
        gs_on_alloc(0x20000, 200, 0, GS_MEM_HOST, GS_FN_MALLOC);
        pid_t g = fork();
        if (g < 0)
            _exit(20);
        if (g == 0) {
            gs_on_alloc(0x30000, 300, 0, GS_MEM_HOST, GS_FN_MALLOC);
            gs_core_exit(0, 1);
            _exit(0);
        }
        int st;
        if (waitpid(g, &st, 0) != g)
            _exit(21);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            _exit(22);
        /* the grandchild's pid, for the parent to find its trace */
        char p[128];
        snprintf(p, sizeof p, "%s/grandchild", dir);
        FILE *f = fopen(p, "w");
        if (!f)
            _exit(23);
        fprintf(f, "%d\n", (int)g);
        fclose(f);
        gs_core_exit(0, 1);
        _exit(0);
    }
    int st;
    cr_assert_eq(waitpid(c, &st, 0), c);
    cr_assert(!WIFSIGNALED(st) || WTERMSIG(st) != SIGALRM,
              "the forked child deadlocked in fork() (killed by SIGALRM)");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
    struct trace t = finish(0);
    check_end(&t, 1, 0, 100, 1, 100);

    char p[128];
    trace_path_of(c, p, sizeof p);
    struct trace k = read_trace(p);
    cr_assert(k.complete);
    cr_assert_eq(count(&k, GS_REC_ALLOC_EX), 1);
    check_end(&k, 1, 0, 200, 2, 300);

    snprintf(p, sizeof p, "%s/grandchild", dir);
    FILE *f = fopen(p, "r");
    cr_assert_not_null(f);
    int g = 0;
    cr_assert_eq(fscanf(f, "%d", &g), 1);
    fclose(f);
    trace_path_of(g, p, sizeof p);
    struct trace gt = read_trace(p);
    cr_assert(gt.complete);
    cr_assert_eq(only(&gt, GS_REC_PROCESS_START)->u.proc.flags, GS_PROC_F_FORKED);
    cr_assert_eq(count(&gt, GS_REC_ALLOC_EX), 2, "grandchild inherits both blocks");
    check_end(&gt, 1, 0, 300, 3, 600);
}

/* ---- internal failures ---- */

Test(core, compression_failure_ends_the_trace_with_stopped)
{
    /* no periodic flush: the test decides which round compresses what */
    static const char *const extra[] = {"GCSPY_FLUSH_MS=600000", "GCSPY_SAMPLE_MS=0", NULL};
    start_core("zfail.trace", extra);
    gs_on_alloc(0x10000, 100, 0, GS_MEM_HOST, GS_FN_MALLOC);
    gs_writer_flush(); /* chunk 0: the process, the first block */
    gs_on_alloc(0x20000, 200, 0, GS_MEM_HOST, GS_FN_MALLOC);
    gs_on_free(0x10000);

    struct captured c;
    stderr_capture(&c);
    gs_opt.quiet = 0;
    fail_compress = 1;
    gs_writer_flush(); /* this round's chunk cannot be made */
    cr_assert_not(gs_tracing(), "tracing goes on after a failed compression");
    /* the writer thread ends the trace; closing joins it */
    cr_assert_eq(gs_writer_close(NULL, 0), -1);
    char err[512];
    ssize_t n = stderr_release(&c, err, sizeof err);
    const char *want = "compressing a chunk: zstd error: Allocation error : not enough memory";
    char line[512];
    snprintf(line, sizeof line, "gcspy: %s (", want);
    cr_assert(strncmp(err, line, strlen(line)) == 0, "stderr: %s", err);
    cr_assert(strstr(err, " bytes of records lost); tracing stopped, the program runs on\n"),
              "stderr: %s", err);
    cr_assert_eq(strchr(err, '\n') - err + 1, n, "more than one line: %s", err);

    /* chunk 0, then nothing of the lost chunk (later records could need
     * what it held), then STOPPED naming the failure, then nothing */
    char p[128];
    snprintf(p, sizeof p, "%s/zfail.trace", dir);
    struct trace t = read_trace(p);
    cr_assert_not(t.complete);
    cr_assert_not_null(alloc_at(&t, GS_REC_ALLOC, 0x10000));
    cr_assert_eq(count(&t, GS_REC_FREE), 0);
    for (size_t i = 0; i < t.n; i++)
        cr_assert(t.v[i].r.type != GS_REC_ALLOC || t.v[i].r.u.alloc.addr != 0x20000,
                  "a record of the lost chunk was written");
    const struct gs_record *st = &t.v[t.n - 1].r;
    cr_assert_eq(st->type, GS_REC_STOPPED, "last record 0x%02x", st->type);
    cr_assert_eq(count(&t, GS_REC_STOPPED), 1);
    cr_assert_eq(st->u.stopped.dropped, 0);
    cr_assert_eq(strncmp(t.v[t.n - 1].str, want, strlen(want)), 0, "reason: %s", t.v[t.n - 1].str);
}

/* ---- PyTorch-aware mode's pieces that need no Python (torch.c, elfsym.c) ---- */

/* 0x5xxx: allocator code (weak); 0x7xxx: a tensor allocator (data) */
static uint8_t bits_5w_7d(uint64_t ip)
{
    return ip >= 0x5000 && ip < 0x6000 ? GS_SB_WEAK : ip >= 0x7000 && ip < 0x8000 ? GS_SB_DATA : 0;
}

Test(core, scanner_bits_follow_the_stack_tree)
{
    start();
    uintptr_t a[] = {0x1010, 0x2010, 0x3010};
    uintptr_t b[] = {0x1020, 0x5010, 0x3010}; /* a weak frame in the middle */
    uintptr_t c[] = {0x5020, 0x3010};         /* a weak innermost frame */
    uintptr_t d[] = {0x3010};                 /* the shared outer frame */
    uintptr_t f[] = {0x7010, 0x2010, 0x3010}; /* data: innermost frame */
    uintptr_t g[] = {0x1040, 0x7020, 0x3010}; /* data frame not innermost */
    uint32_t ia = gs_stack_intern(a, 3), ib = gs_stack_intern(b, 3);
    uint32_t ic = gs_stack_intern(c, 2), id = gs_stack_intern(d, 1);
    uint32_t i_f = gs_stack_intern(f, 3), ig = gs_stack_intern(g, 3);
    uint8_t *bits = NULL;
    uint64_t cap = 0;
    uint32_t n = gs_stack_bits_fill(&bits, &cap, 0, bits_5w_7d);
    cr_assert_eq(n, 10, "10 nodes (9 ids + the root slot), got %u", n);
    cr_assert_geq(cap, n);
    cr_assert_eq(bits[ia], 0);
    cr_assert_eq(bits[ib], GS_SB_WEAK, "a weak frame anywhere makes the stack weak");
    cr_assert_eq(bits[ic], GS_SB_WEAK);
    cr_assert_eq(bits[id], 0);
    cr_assert_eq(bits[i_f], GS_SB_DATA, "data: the allocating frame itself");
    cr_assert_eq(bits[ig], 0, "a data frame further out says nothing of the block");
    cr_assert_eq(bits[0], 0, "stack id 0 (no stack) has no bit");
    /* Incremental: only the new nodes are computed, from their parents' bits;
     * weak is inherited, data is not. */
    uintptr_t e[] = {0x1030, 0x5010, 0x3010};
    uintptr_t h[] = {0x1050, 0x7010, 0x2010, 0x3010};
    uint32_t ie = gs_stack_intern(e, 3), ih = gs_stack_intern(h, 4);
    cr_assert_eq(ie, n, "one new node");
    cr_assert_eq(ih, n + 1, "and another under f");
    uint32_t n2 = gs_stack_bits_fill(&bits, &cap, n, bits_5w_7d);
    cr_assert_eq(n2, n + 2);
    cr_assert_eq(bits[ie], GS_SB_WEAK, "inherits its parent's weak frame");
    cr_assert_eq(bits[ih], 0, "does not inherit its parent's data bit");
    cr_assert_eq(bits[ia], 0);
    cr_assert_eq(bits[ib], GS_SB_WEAK);
}

Test(core, elf_find_sees_global_and_local_modules)
{
    /* a symbol of the global scope: the one the loader resolves */
    cr_assert_eq(gs_elf_find("malloc"), dlsym(RTLD_DEFAULT, "malloc"));
    /* one only an RTLD_LOCAL module defines (dlsym(RTLD_NEXT) from a
     * preloaded library cannot see those) */
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "libz.so.1: %s", dlerror());
    void *want = dlsym(h, "zlibVersion");
    cr_assert_not_null(want);
    cr_assert_eq(gs_elf_find("zlibVersion"), want);
    cr_assert_null(gs_elf_find("gcspy_no_such_function_anywhere"));
    dlclose(h);
}

/* ---- the rank from each launcher's variables (rank.c) ---- */

static void detect(const char *exe, const char *argv, size_t len, const char **env)
{
    gs_rank_detect((char **)env, exe, argv, len);
}
#define ARGV(s) s, sizeof s - 1

static void want_rank(int64_t rank, int64_t local, int64_t size)
{
    cr_assert_eq(gs_rank.launcher, 0);
    cr_assert_eq((int64_t)gs_rank.rank1 - 1, rank);
    cr_assert_eq((int64_t)gs_rank.local_rank1 - 1, local);
    cr_assert_eq((int64_t)gs_rank.world_size1 - 1, size);
}

Test(rank, each_launcher)
{
    char b[24];
    const char *torch[] = {"RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8", "TORCHELASTIC_RUN_ID=x", NULL};
    detect("/usr/bin/python3.11", ARGV("python3\0train.py"), torch);
    want_rank(3, 1, 8);
    cr_assert_str_eq(gs_rank_text(b, sizeof b), "3");
    const char *slurm[] = {"SLURM_PROCID=17", "SLURM_LOCALID=5", "SLURM_NTASKS=64", NULL};
    detect("/opt/bin/train", ARGV("train"), slurm);
    want_rank(17, 5, 64);
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_LOCAL_RANK=0",
                          "OMPI_COMM_WORLD_SIZE=4", NULL};
    detect("/opt/bin/train", ARGV("train"), ompi);
    want_rank(2, 0, 4);
    const char *pmi[] = {"PMI_RANK=9", "PMI_SIZE=10", NULL};
    detect("/opt/bin/train", ARGV("train"), pmi);
    want_rank(9, -1, 10);
    /* torchrun under srun: the worker's RANK, not the node's SLURM_PROCID */
    const char *both[] = {"SLURM_PROCID=1", "SLURM_NTASKS=2", "RANK=6", "WORLD_SIZE=8", NULL};
    detect("/usr/bin/python3", ARGV("python3\0train.py"), both);
    want_rank(6, -1, 8);
    /* a value that is not a number is no rank */
    const char *bad[] = {"RANK=", "SLURM_PROCID=x1", NULL};
    detect("/opt/bin/train", ARGV("train"), bad);
    want_rank(-1, -1, -1);
    cr_assert_str_eq(gs_rank_text(b, sizeof b), "none", "%%r without a rank is not 0");
}

Test(rank, launchers_have_no_rank)
{
    char b[24];
    const char *slurm[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", NULL};
    const char *none[] = {NULL};
    struct {
        const char *exe, *argv;
        size_t len;
        const char **env;
    } l[] = {
        {"/usr/bin/python3.11", ARGV("/usr/bin/python3\0-m\0torch.distributed.run\0--nproc_per_node=2\0t.py"), slurm},
        {"/usr/bin/python3.11", ARGV("python3\0-u\0-m\0torch.distributed.launch\0t.py"), none},
        {"/usr/bin/python3.11", ARGV("python3\0/usr/local/bin/torchrun\0--standalone\0t.py"), slurm},
        {"/usr/bin/srun", ARGV("srun\0-n2\0train"), slurm},
        {"/usr/bin/orterun", ARGV("mpirun\0-np\0002\0train"), none},
        {"/usr/bin/mpiexec.hydra", ARGV("mpiexec\0-n\0002\0train"), none},
    };
    for (size_t i = 0; i < sizeof l / sizeof *l; i++) {
        detect(l[i].exe, l[i].argv, l[i].len, l[i].env);
        cr_assert_eq(gs_rank.launcher, 1, "%s %s", l[i].exe, l[i].argv + strlen(l[i].argv) + 1);
        cr_assert_eq(gs_rank.rank1, 0, "a launcher is never rank 0");
        cr_assert_str_eq(gs_rank_text(b, sizeof b), "launcher");
    }
    /* a script that only mentions torchrun, or python -m of another module */
    detect("/usr/bin/python3.11", ARGV("python3\0train.py\0torchrun"), slurm);
    want_rank(0, -1, 2);
    detect("/usr/bin/python3.11", ARGV("python3\0-m\0torch.utils.bottleneck"), slurm);
    want_rank(0, -1, 2);
}
