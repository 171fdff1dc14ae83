/*
 * rel_tracecount: the reliability tests' trace checker, in C so that traces
 * of 100 million events are checked exactly in seconds (the Python checker
 * of tests/lib.sh reads `gcspy dump` text, fine for thousands of events).
 * It is not run under the shim; it reads one trace with the analyzer's
 * reader and replays it.
 *
 *   rel_tracecount [--incomplete] [--size LO HI] TRACE
 *
 * Checks, each failure printed as one "error: ..." line (first 20):
 *   - the trace is complete (TRACE_END read) unless --incomplete;
 *   - PROCESS_START first and once; nothing after TRACE_END;
 *   - every STACK node defined once, its parent before it; every event's
 *     stack defined before the event;
 *   - every FREE/REALLOC of a live address, no ALLOC over a live address;
 *   - thread indexes start once, exit at most once, after their start, and
 *     every event's thread (other than 0) has started;
 *   - TRACE_END's totals equal the replay (inherited blocks live, not
 *     counted as allocations, as the shim counts them).
 * Then it prints the figures, one "key=value" a line, for the scripts:
 *   records chunks complete damage allocs frees reallocs bytes live_blocks
 *   live_bytes threads_started threads_exited stacks scans scan_blocks
 *   last_scan_{definite,indirect,possible,reachable} (SCAN_BLOCKs of the
 *   last scan that has any, by class)
 *   sel_allocs sel_frees sel_live sel_bytes   (blocks with LO <= size <= HI)
 *   end_allocs end_frees end_live_blocks end_live_bytes (TRACE_END; -1 absent)
 *   t_last (time of the last event, ns) stopped (STOPPED records)
 * Exit status: 0 consistent, 1 inconsistent, 2 unreadable or bad usage.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"

struct slot {
    uint64_t addr, size;
};

static struct slot *tab;
static uint64_t cap, used;
static uint8_t *stack_def;
static uint64_t stack_cap;
static uint8_t *thr;        /* 1 started, 2 exited */
static uint64_t thr_cap;
static int nerr;

__attribute__((format(printf, 1, 2))) static void err(const char *fmt, ...)
{
    nerr++;
    if (nerr > 20)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

static uint64_t hash(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdull;
    a ^= a >> 33;
    return a;
}

static int grow_bytes(uint8_t **p, uint64_t *c, uint64_t need)
{
    if (need < *c)
        return 0;
    uint64_t n = *c ? *c : 4096;
    while (n <= need)
        n *= 2;
    if (n > (1ull << 32))
        return -1;
    uint8_t *q = realloc(*p, n);
    if (!q)
        return -1;
    memset(q + *c, 0, n - *c);
    *p = q;
    *c = n;
    return 0;
}

static struct slot *find(uint64_t addr)
{
    uint64_t m = cap - 1, i = hash(addr) & m;
    while (tab[i].addr && tab[i].addr != addr)
        i = (i + 1) & m;
    return &tab[i];
}

static int rehash(void)
{
    struct slot *old = tab;
    uint64_t oc = cap;
    cap = cap ? cap * 2 : 1 << 16;
    tab = calloc(cap, sizeof *tab);
    if (!tab)
        return -1;
    for (uint64_t i = 0; i < oc; i++)
        if (old[i].addr)
            *find(old[i].addr) = old[i];
    free(old);
    return 0;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void del(struct slot *s)
{
    uint64_t m = cap - 1, i = (uint64_t)(s - tab), j = i;
    for (;;) {
        j = (j + 1) & m;
        if (!tab[j].addr)
            break;
        uint64_t k = hash(tab[j].addr) & m;
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            tab[i] = tab[j];
            i = j;
        }
    }
    tab[i].addr = 0;
    used--;
}

int main(int argc, char **argv)
{
    int incomplete_ok = 0;
    uint64_t lo = 1, hi = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--incomplete"))
            incomplete_ok = 1;
        else if (!strcmp(argv[i], "--size") && i + 2 < argc) {
            lo = strtoull(argv[i + 1], NULL, 0);
            hi = strtoull(argv[i + 2], NULL, 0);
            i += 2;
        } else if (!path && argv[i][0] != '-')
            path = argv[i];
        else {
            fprintf(stderr, "usage: rel_tracecount [--incomplete] [--size LO HI] TRACE\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: rel_tracecount [--incomplete] [--size LO HI] TRACE\n");
        return 2;
    }
    char e[512];
    struct gs_reader *r = gs_reader_open(path, e, sizeof e);
    if (!r) {
        fprintf(stderr, "rel_tracecount: %s\n", e);
        return 2;
    }
    if (rehash())
        return 2;
    uint64_t records = 0, allocs = 0, frees = 0, reallocs = 0, bytes = 0, live_bytes = 0;
    uint64_t ts = 0, tx = 0, stacks = 0, scans = 0, scan_blocks = 0, stopped = 0, t_last = 0;
    uint64_t sel_allocs = 0, sel_frees = 0, sel_live = 0, sel_bytes = 0;
    uint64_t cls[GS_CLASS__N] = {0}, cls_scan = 0;
    int64_t end_allocs = -1, end_frees = -1, end_live = -1, end_live_bytes = -1;
    int have_proc = 0, have_end = 0, rc;
    struct gs_record rec;
#define SEL(sz) ((sz) >= lo && (sz) <= hi)
    while ((rc = gs_reader_next(r, &rec)) == GS_READ_OK) {
        records++;
        if (have_end)
            err("record type 0x%02x after TRACE_END", rec.type);
        switch (rec.type) {
        case GS_REC_PROCESS_START:
            if (have_proc)
                err("second PROCESS_START");
            have_proc = 1;
            break;
        case GS_REC_STACK:
            if (grow_bytes(&stack_def, &stack_cap, rec.u.stack.id))
                return 2;
            if (stack_def[rec.u.stack.id])
                err("stack node %" PRIu64 " defined twice", rec.u.stack.id);
            if (rec.u.stack.parent &&
                (rec.u.stack.parent >= stack_cap || !stack_def[rec.u.stack.parent]))
                err("stack node %" PRIu64 " before its parent %" PRIu64, rec.u.stack.id,
                    rec.u.stack.parent);
            stack_def[rec.u.stack.id] = 1;
            stacks++;
            break;
        case GS_REC_THREAD_START:
            if (grow_bytes(&thr, &thr_cap, rec.u.thread.index))
                return 2;
            if (thr[rec.u.thread.index])
                err("thread %" PRIu64 " started twice", rec.u.thread.index);
            thr[rec.u.thread.index] = 1;
            ts++;
            break;
        case GS_REC_THREAD_EXIT:
            if (rec.u.thread.index >= thr_cap || thr[rec.u.thread.index] != 1)
                err("thread %" PRIu64 " exits without a start or twice", rec.u.thread.index);
            else
                thr[rec.u.thread.index] = 2;
            tx++;
            break;
        case GS_REC_ALLOC:
        case GS_REC_ALLOC_EX:
        case GS_REC_REALLOC: {
            uint64_t a = rec.u.alloc.addr, sz = rec.u.alloc.size;
            t_last = rec.t > t_last ? rec.t : t_last;
            if (!have_proc)
                err("event before PROCESS_START");
            if (rec.u.alloc.stack &&
                (rec.u.alloc.stack >= stack_cap || !stack_def[rec.u.alloc.stack]))
                err("event uses stack %" PRIu64 " before its definition", rec.u.alloc.stack);
            if (rec.u.alloc.thread &&
                (rec.u.alloc.thread >= thr_cap || !thr[rec.u.alloc.thread]))
                err("event of thread %" PRIu64 " before its THREAD_START", rec.u.alloc.thread);
            if ((used + 1) * 2 > cap && rehash())
                return 2;
            struct slot *s = find(a);
            if (rec.type == GS_REC_REALLOC) {
                if (!s->addr) {
                    err("realloc of 0x%" PRIx64 ", not live", a);
                    break;
                }
                reallocs++;
                live_bytes += sz - s->size;
                if (SEL(s->size)) {
                    sel_live--;
                    sel_bytes -= s->size;
                }
                if (SEL(sz)) {
                    sel_live++;
                    sel_bytes += sz;
                }
                s->size = sz;
                break;
            }
            if (s->addr) {
                err("alloc of 0x%" PRIx64 ", already live", a);
                break;
            }
            s->addr = a;
            s->size = sz;
            used++;
            live_bytes += sz;
            if (rec.type != GS_REC_ALLOC_EX || rec.u.alloc.fn != GS_FN_INHERITED) {
                allocs++;
                bytes += sz;
                if (SEL(sz))
                    sel_allocs++;
            }
            if (SEL(sz)) {
                sel_live++;
                sel_bytes += sz;
            }
            break;
        }
        case GS_REC_FREE:
        case GS_REC_FREE_EX: {
            t_last = rec.t > t_last ? rec.t : t_last;
            struct slot *s = find(rec.u.free.addr);
            if (!s->addr) {
                err("free of 0x%" PRIx64 ", not live", rec.u.free.addr);
                break;
            }
            frees++;
            live_bytes -= s->size;
            if (SEL(s->size)) {
                sel_frees++;
                sel_live--;
                sel_bytes -= s->size;
            }
            del(s);
            break;
        }
        case GS_REC_SCAN_END:
            scans++;
            break;
        case GS_REC_SCAN_BLOCK:
            scan_blocks++;
            if (rec.u.scan_block.scan_id != cls_scan) {
                memset(cls, 0, sizeof cls);
                cls_scan = rec.u.scan_block.scan_id;
            }
            if (rec.u.scan_block.cls < GS_CLASS__N)
                cls[rec.u.scan_block.cls]++;
            break;
        case GS_REC_STOPPED:
            stopped++;
            break;
        case GS_REC_TRACE_END:
            have_end = 1;
            end_allocs = (int64_t)rec.u.end.allocs;
            end_frees = (int64_t)rec.u.end.frees;
            end_live = (int64_t)rec.u.end.live_blocks;
            end_live_bytes = (int64_t)rec.u.end.live_bytes;
            if (rec.u.end.allocs != allocs || rec.u.end.frees != frees ||
                rec.u.end.bytes_allocated != bytes || rec.u.end.live_blocks != used ||
                rec.u.end.live_bytes != live_bytes)
                err("TRACE_END allocs=%" PRIu64 " frees=%" PRIu64 " bytes=%" PRIu64
                    " live=%" PRIu64 "/%" PRIu64 "; replay gives %" PRIu64 " %" PRIu64
                    " %" PRIu64 " %" PRIu64 "/%" PRIu64,
                    rec.u.end.allocs, rec.u.end.frees, rec.u.end.bytes_allocated,
                    rec.u.end.live_blocks, rec.u.end.live_bytes, allocs, frees, bytes, used,
                    live_bytes);
            break;
        default:
            break;
        }
    }
    if (!have_proc)
        err("no PROCESS_START");
    if (!have_end && !incomplete_ok)
        err("incomplete trace (no TRACE_END)");
    printf("records=%" PRIu64 "\nchunks=%" PRIu64 "\ncomplete=%s\n", records,
           gs_reader_chunks(r), have_end ? "yes" : "no");
    printf("damage=%s\n", rc == GS_READ_DAMAGED ? gs_reader_error(r) : "");
    printf("allocs=%" PRIu64 "\nfrees=%" PRIu64 "\nreallocs=%" PRIu64 "\nbytes=%" PRIu64 "\n",
           allocs, frees, reallocs, bytes);
    printf("live_blocks=%" PRIu64 "\nlive_bytes=%" PRIu64 "\n", used, live_bytes);
    printf("threads_started=%" PRIu64 "\nthreads_exited=%" PRIu64 "\nstacks=%" PRIu64 "\n", ts,
           tx, stacks);
    printf("scans=%" PRIu64 "\nscan_blocks=%" PRIu64 "\nstopped=%" PRIu64 "\n", scans,
           scan_blocks, stopped);
    printf("last_scan_definite=%" PRIu64 "\nlast_scan_indirect=%" PRIu64
           "\nlast_scan_possible=%" PRIu64 "\nlast_scan_reachable=%" PRIu64 "\n",
           cls[GS_CLASS_DEFINITE], cls[GS_CLASS_INDIRECT], cls[GS_CLASS_POSSIBLE],
           cls[GS_CLASS_REACHABLE]);
    printf("sel_allocs=%" PRIu64 "\nsel_frees=%" PRIu64 "\nsel_live=%" PRIu64
           "\nsel_bytes=%" PRIu64 "\n", sel_allocs, sel_frees, sel_live, sel_bytes);
    printf("end_allocs=%" PRId64 "\nend_frees=%" PRId64 "\nend_live_blocks=%" PRId64
           "\nend_live_bytes=%" PRId64 "\n", end_allocs, end_frees, end_live, end_live_bytes);
    printf("t_last=%" PRIu64 "\nerrors=%d\n", t_last, nerr);
    gs_reader_close(r);
    return nerr ? 1 : 0;
}
