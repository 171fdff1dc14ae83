/*
 * `gcspy dump FILE`: every record of a trace as one line of text, for people
 * debugging traces and for tests that compare traces as text. The grammar is
 * stable (docs/trace-format.md, "gcspy dump"):
 *
 *   line  = name *(" " key "=" value)
 *   value = decimal | "-" (unset) | "0x" hex (addresses, ips, streams)
 *         | hex bytes (build_id, possibly empty) | a word (enum names)
 *         | '"' C-escaped string '"'
 *
 * Strings are quoted with C escapes (\\ \" \n \r \t, any other byte outside
 * 0x20..0x7e as \xHH, always two digits), so any bytes print safely and each
 * record stays on one line. Records with one time put t= first. Unknown enum
 * values print as decimal numbers.
 *
 * The first line is `trace version=MAJOR.MINOR file="..."`, the last
 * `end chunks=N records=M complete=yes|no` (complete: a TRACE_END was read).
 * On damage everything readable is printed, the end line too, then one line
 * on stderr and exit status 2.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analyze.h"
#include "commands.h"
#include "trace_reader.h"

/* One byte of a quoted string, C-escaped. */
static void put_char(FILE *f, uint8_t c)
{
    switch (c) {
    case '\\': fputs("\\\\", f); break;
    case '"': fputs("\\\"", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    default:
        if (c >= 0x20 && c < 0x7f)
            fputc(c, f);
        else
            fprintf(f, "\\x%02x", c);
    }
}

static void put_str(FILE *f, struct gs_bytes b)
{
    fputc('"', f);
    for (size_t i = 0; i < b.n; i++)
        put_char(f, b.p[i]);
    fputc('"', f);
}

/* argv is NUL-separated: printed as one string with the arguments joined by
 * spaces; a space inside an argument is written \x20 so the split stays
 * recoverable. */
static void put_argv(FILE *f, struct gs_bytes b)
{
    fputc('"', f);
    for (size_t i = 0; i < b.n; i++) {
        if (b.p[i] == '\0')
            fputc(' ', f);
        else if (b.p[i] == ' ')
            fputs("\\x20", f);
        else
            put_char(f, b.p[i]);
    }
    fputc('"', f);
}

static void put_hex(FILE *f, struct gs_bytes b)
{
    for (size_t i = 0; i < b.n; i++)
        fprintf(f, "%02x", b.p[i]);
}

/* Prints names[v], or v in decimal when it has no name. */
static void put_enum(FILE *f, uint64_t v, const char *const *names, size_t n)
{
    if (v < n && names[v])
        fputs(names[v], f);
    else
        fprintf(f, "%" PRIu64, v);
}

#define ENUM(f, v, names) put_enum(f, v, names, sizeof names / sizeof names[0])

static const char *const kind_names[] = { "host", "pinned", "managed", "device", "vmm" };
static const char *const fn_names[] = {
    [GS_FN_MALLOC] = "malloc", [GS_FN_CALLOC] = "calloc", [GS_FN_REALLOC] = "realloc",
    [GS_FN_MEMALIGN] = "memalign", [GS_FN_VALLOC] = "valloc", [GS_FN_INHERITED] = "inherited",
    [GS_FN_CUDA_RUNTIME] = "cuda_runtime", [GS_FN_CUDA_DRIVER] = "cuda_driver",
    [GS_FN_CUDA_ASYNC] = "cuda_async", [GS_FN_CUPTI] = "cupti", [GS_FN_TORCH] = "torch",
};
static const char *const class_names[] = { "definite", "indirect", "possible", "reachable" };
static const char *const trig_names[] = { "exit", "signal", "periodic", "api", "bytes" };
static const char *const pause_names[] = { "scan", "cuda_sync", "python_gc" };
static const char *const mark_names[] = { "user", "step" };
static const char *const how_names[] = { "normal", "signal", "exec" };
static const char *const unwind_names[] = { "fp", "libunwind" };

/* rank+1 style fields: 0 means unset. */
static void put_plus1(FILE *f, const char *key, uint64_t v)
{
    if (v == 0)
        fprintf(f, " %s=-", key);
    else
        fprintf(f, " %s=%" PRIu64, key, v - 1);
}

static void put_segflags(FILE *f, uint64_t fl)
{
    /* PF_R 4, PF_W 2, PF_X 1 (elf.h) */
    fputc(fl & 4 ? 'r' : '-', f);
    fputc(fl & 2 ? 'w' : '-', f);
    fputc(fl & 1 ? 'x' : '-', f);
}

static void print_record(FILE *f, const struct gs_record *r)
{
    switch (r->type) {
    case GS_REC_TIMEBASE:
        fprintf(f, "timebase t=%" PRIu64, r->t);
        break;
    case GS_REC_ALLOC:
    case GS_REC_REALLOC:
        fprintf(f, "%s t=%" PRIu64 " thread=%" PRIu64 " addr=0x%" PRIx64 " size=%" PRIu64
                " stack=%" PRIu64, r->type == GS_REC_ALLOC ? "alloc" : "realloc", r->t,
                r->u.alloc.thread, r->u.alloc.addr, r->u.alloc.size, r->u.alloc.stack);
        break;
    case GS_REC_ALLOC_EX:
        fprintf(f, "alloc_ex t=%" PRIu64 " thread=%" PRIu64 " addr=0x%" PRIx64 " size=%" PRIu64
                " stack=%" PRIu64 " kind=", r->t, r->u.alloc.thread, r->u.alloc.addr,
                r->u.alloc.size, r->u.alloc.stack);
        ENUM(f, r->u.alloc.kind, kind_names);
        fputs(" fn=", f);
        ENUM(f, r->u.alloc.fn, fn_names);
        fprintf(f, " device=%" PRIu64 " stream=0x%" PRIx64 " dur_ns=%" PRIu64,
                r->u.alloc.device, r->u.alloc.stream, r->u.alloc.dur_ns);
        break;
    case GS_REC_FREE:
        fprintf(f, "free t=%" PRIu64 " addr=0x%" PRIx64, r->t, r->u.free.addr);
        break;
    case GS_REC_FREE_EX:
        fprintf(f, "free_ex t=%" PRIu64 " thread=%" PRIu64 " addr=0x%" PRIx64 " kind=",
                r->t, r->u.free.thread, r->u.free.addr);
        ENUM(f, r->u.free.kind, kind_names);
        fputs(" fn=", f);
        ENUM(f, r->u.free.fn, fn_names);
        fprintf(f, " dur_ns=%" PRIu64, r->u.free.dur_ns);
        break;
    case GS_REC_STACK:
        fprintf(f, "stack id=%" PRIu64 " parent=%" PRIu64 " ip=0x%" PRIx64, r->u.stack.id,
                r->u.stack.parent, r->u.stack.ip);
        if (r->u.stack.ip & GS_IP_PYFRAME)
            fprintf(f, " pycode=%" PRIu64 " line=%" PRIu64,
                    (uint64_t)((r->u.stack.ip & ~GS_IP_PYFRAME) >> 32),
                    (uint64_t)(r->u.stack.ip & 0xffffffffu));
        break;
    case GS_REC_PROCESS_START: {
        const __typeof__(r->u.proc) *x = &r->u.proc;
        fprintf(f, "process pid=%" PRIu64 " ppid=%" PRIu64 " wall_ns=%" PRIu64 " exe=",
                x->pid, x->ppid, x->wall_ns);
        put_str(f, x->exe);
        fputs(" argv=", f);
        put_argv(f, x->argv);
        fputs(" host=", f);
        put_str(f, x->host);
        put_plus1(f, "rank", x->rank1);
        put_plus1(f, "local_rank", x->local_rank1);
        put_plus1(f, "world_size", x->world_size1);
        fprintf(f, " flags=0x%" PRIx64 " version=", x->flags);
        put_str(f, x->version);
        fputs(" unwinder=", f);
        ENUM(f, x->unwinder, unwind_names);
        fprintf(f, " depth=%" PRIu64 " page_size=%" PRIu64, x->depth, x->page_size);
        break;
    }
    case GS_REC_PROCESS_EXIT:
        fprintf(f, "exit t=%" PRIu64 " status=%" PRId64 " how=", r->t, r->u.exit.status);
        ENUM(f, r->u.exit.how, how_names);
        break;
    case GS_REC_MODULE: {
        const __typeof__(r->u.module) *x = &r->u.module;
        fprintf(f, "module t=%" PRIu64 " id=%" PRIu64 " base=0x%" PRIx64 " path=", r->t,
                x->id, x->base);
        put_str(f, x->path);
        fputs(" build_id=", f);
        put_hex(f, x->build_id);
        fputs(" segs=", f);
        for (uint64_t i = 0; i < x->nseg; i++) {
            fprintf(f, "%s0x%" PRIx64 "+0x%" PRIx64 ":", i ? "," : "", x->seg[i].vaddr,
                    x->seg[i].memsz);
            put_segflags(f, x->seg[i].flags);
        }
        break;
    }
    case GS_REC_MODULE_UNLOAD:
        fprintf(f, "module_unload t=%" PRIu64 " id=%" PRIu64, r->t, r->u.unload.id);
        break;
    case GS_REC_THREAD_START:
        fprintf(f, "thread_start t=%" PRIu64 " index=%" PRIu64 " tid=%" PRIu64, r->t,
                r->u.thread.index, r->u.thread.tid);
        break;
    case GS_REC_THREAD_EXIT:
        fprintf(f, "thread_exit t=%" PRIu64 " index=%" PRIu64, r->t, r->u.thread.index);
        break;
    case GS_REC_SAMPLE: {
        const __typeof__(r->u.sample) *x = &r->u.sample;
        fprintf(f, "sample t=%" PRIu64 " rss=%" PRIu64 " arena=%" PRIu64 " ordblks=%" PRIu64
                " hblks=%" PRIu64 " hblkhd=%" PRIu64 " uordblks=%" PRIu64 " fordblks=%" PRIu64
                " keepcost=%" PRIu64, r->t, x->rss, x->arena, x->ordblks, x->hblks, x->hblkhd,
                x->uordblks, x->fordblks, x->keepcost);
        break;
    }
    case GS_REC_MARKER:
        fprintf(f, "marker t=%" PRIu64 " thread=%" PRIu64 " kind=", r->t, r->u.marker.thread);
        ENUM(f, r->u.marker.kind, mark_names);
        fputs(" label=", f);
        put_str(f, r->u.marker.label);
        break;
    case GS_REC_PAUSE: {
        const __typeof__(r->u.pause) *x = &r->u.pause;
        fprintf(f, "pause t=%" PRIu64 " t_end=%" PRIu64 " kind=", r->t, x->t_end);
        ENUM(f, x->kind, pause_names);
        fprintf(f, " thread=%" PRIu64 " a=%" PRIu64 " b=%" PRIu64, x->thread, x->a, x->b);
        break;
    }
    case GS_REC_EXEC:
        fprintf(f, "exec t=%" PRIu64 " path=", r->t);
        put_str(f, r->u.exec.path);
        break;
    case GS_REC_STOPPED:
        fprintf(f, "stopped t=%" PRIu64 " dropped=%" PRIu64 " reason=", r->t,
                r->u.stopped.dropped);
        put_str(f, r->u.stopped.reason);
        break;
    case GS_REC_SCAN_BEGIN:
        fprintf(f, "scan_begin t=%" PRIu64 " id=%" PRIu64 " trigger=", r->t,
                r->u.scan_begin.scan_id);
        ENUM(f, r->u.scan_begin.trigger, trig_names);
        fprintf(f, " mode=%" PRIu64, r->u.scan_begin.mode);
        break;
    case GS_REC_SCAN_BLOCK: {
        const __typeof__(r->u.scan_block) *x = &r->u.scan_block;
        fprintf(f, "scan_block id=%" PRIu64 " addr=0x%" PRIx64 " size=%" PRIu64
                " stack=%" PRIu64 " kind=", x->scan_id, x->addr, x->size, x->stack);
        ENUM(f, x->kind, kind_names);
        fputs(" class=", f);
        ENUM(f, x->cls, class_names);
        if (x->fn) { /* minor 1; 0 (and minor-0 blocks) print as before */
            fputs(" fn=", f);
            ENUM(f, x->fn, fn_names);
        }
        break;
    }
    case GS_REC_SCAN_END: {
        const __typeof__(r->u.scan_end) *x = &r->u.scan_end;
        fprintf(f, "scan_end id=%" PRIu64 " t_start=%" PRIu64 " t_stopped=%" PRIu64
                " t_marked=%" PRIu64 " t_end=%" PRIu64 " threads=%" PRIu64
                " bytes_scanned=%" PRIu64 " blocks_visited=%" PRIu64 " live_blocks=%" PRIu64
                " live_bytes=%" PRIu64, x->scan_id, x->t_start, x->t_stopped, x->t_marked,
                x->t_end, x->threads, x->bytes_scanned, x->blocks_visited, x->live_blocks,
                x->live_bytes);
        for (int c = 0; c < GS_CLASS__N; c++)
            fprintf(f, " %s_blocks=%" PRIu64 " %s_bytes=%" PRIu64, class_names[c],
                    x->cls_blocks[c], class_names[c], x->cls_bytes[c]);
        break;
    }
    case GS_REC_PYCODE:
        fprintf(f, "pycode id=%" PRIu64 " file=", r->u.pycode.id);
        put_str(f, r->u.pycode.file);
        fputs(" function=", f);
        put_str(f, r->u.pycode.function);
        fprintf(f, " firstline=%" PRIu64, r->u.pycode.firstline);
        break;
    case GS_REC_TRACE_END: {
        const __typeof__(r->u.end) *x = &r->u.end;
        fprintf(f, "trace_end t=%" PRIu64 " allocs=%" PRIu64 " frees=%" PRIu64
                " bytes_allocated=%" PRIu64 " live_blocks=%" PRIu64 " live_bytes=%" PRIu64,
                r->t, x->allocs, x->frees, x->bytes_allocated, x->live_blocks, x->live_bytes);
        break;
    }
    case GS_REC_DEVICE_SAMPLE: {
        const __typeof__(r->u.dsample) *x = &r->u.dsample;
        fprintf(f, "device_sample t=%" PRIu64 " device=%" PRIu64 " kind=", r->t, x->device);
        ENUM(f, x->kind, kind_names);
        fprintf(f, " reserved=%" PRIu64 " in_use=%" PRIu64 " segments=%" PRIu64
                " largest_free=%" PRIu64, x->reserved, x->in_use, x->segments,
                x->largest_free);
        break;
    }
    case GS_REC_POOL_SNAPSHOT: {
        const __typeof__(r->u.pool_snap) *x = &r->u.pool_snap;
        fprintf(f, "pool_snapshot t=%" PRIu64 " id=%" PRIu64 " reason=", r->t, x->snap_id);
        ENUM(f, x->reason, gs_pool_reason_names);
        fprintf(f, " segments=%" PRIu64 " blocks=%" PRIu64 " events=%" PRIu64, x->nsegments,
                x->nblocks, x->nevents);
        break;
    }
    case GS_REC_POOL_SEGMENT: {
        const __typeof__(r->u.pool_seg) *x = &r->u.pool_seg;
        fprintf(f, "pool_segment id=%" PRIu64 " device=%" PRIu64 " addr=0x%" PRIx64
                " size=%" PRIu64 " stream=0x%" PRIx64 " pool=", x->snap_id, x->device, x->addr,
                x->size, x->stream);
        ENUM(f, x->pool, gs_pool_kind_names);
        break;
    }
    case GS_REC_POOL_BLOCK: {
        const __typeof__(r->u.pool_blk) *x = &r->u.pool_blk;
        fprintf(f, "pool_block id=%" PRIu64 " addr=0x%" PRIx64 " size=%" PRIu64
                " requested=%" PRIu64 " state=", x->snap_id, x->addr, x->size, x->requested);
        ENUM(f, x->state, gs_pool_state_names);
        fprintf(f, " stack=%" PRIu64, x->stack);
        break;
    }
    case GS_REC_POOL_EVENT: {
        const __typeof__(r->u.pool_ev) *x = &r->u.pool_ev;
        fprintf(f, "pool_event t=%" PRIu64 " id=%" PRIu64 " device=%" PRIu64 " action=", r->t,
                x->snap_id, x->device);
        ENUM(f, x->action, gs_pool_action_names);
        fprintf(f, " addr=0x%" PRIx64 " size=%" PRIu64 " stream=0x%" PRIx64 " stack=%" PRIu64,
                x->addr, x->size, x->stream, x->stack);
        break;
    }
    default:
        /* The reader only returns types it decodes; keep the line anyway. */
        fprintf(f, "unknown type=0x%02x", r->type);
    }
    fputc('\n', f);
}

static void dump_usage(FILE *f)
{
    fprintf(f, "usage: gcspy dump FILE\n\n"
               "Prints every record of the trace FILE ('-': standard input) as one line\n"
               "of key=value text; the grammar is in docs/trace-format.md. Exit status 0\n"
               "for a clean trace, 2 when it is damaged (what precedes the damage is\n"
               "printed, then the offset of the damage on stderr).\n");
}

int gs_cmd_dump(int argc, char **argv)
{
    const char *path = NULL;
    int opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && strcmp(a, "--") == 0) {
            opts = 0;
        } else if (opts && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            dump_usage(stdout);
            return 0;
        } else if (opts && a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "gcspy: dump: unknown option '%s' (see gcspy dump --help)\n", a);
            return 2;
        } else if (path) {
            fprintf(stderr, "gcspy: dump: one trace file at a time ('%s' is extra)\n", a);
            return 2;
        } else {
            path = a;
        }
    }
    if (!path) {
        fprintf(stderr, "gcspy: dump: missing trace file (usage: gcspy dump FILE)\n");
        return 2;
    }

    char err[512];
    int stdin_ = strcmp(path, "-") == 0;
    const char *name = stdin_ ? "<stdin>" : path;
    struct gs_reader *r = stdin_ ? gs_reader_open_fd(STDIN_FILENO, name, err, sizeof err)
                                 : gs_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "gcspy: %s\n", err);
        return 2;
    }

    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    printf("trace version=%u.%u file=", gs_reader_major(r), gs_reader_minor(r));
    put_str(stdout, (struct gs_bytes){ (const uint8_t *)name, strlen(name) });
    putchar('\n');

    struct gs_record rec;
    uint64_t records = 0;
    int complete = 0, rc;
    while ((rc = gs_reader_next(r, &rec)) == GS_READ_OK) {
        print_record(stdout, &rec);
        records++;
        if (rec.type == GS_REC_TRACE_END)
            complete = 1;
    }
    printf("end chunks=%" PRIu64 " records=%" PRIu64 " complete=%s\n", gs_reader_chunks(r),
           records, complete ? "yes" : "no");
    int status = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gcspy: dump: write error on standard output\n");
        status = 2;
    }
    if (rc == GS_READ_DAMAGED) {
        fprintf(stderr, "gcspy: %s: %s\n", name, gs_reader_error(r));
        status = 2;
    }
    gs_reader_close(r);
    return status;
}
