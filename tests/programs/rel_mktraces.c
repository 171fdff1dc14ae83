/*
 * rel_mktraces: writes the hand-made traces of the reliability tests with the
 * trace builder (tests/support/trace_builder.h), so every byte is known. It
 * is a generator, not a program run under the shim.
 *
 *   rel_mktraces weird OUT
 *     A valid, complete trace whose every string field (exe, argv, host,
 *     version, module path, Python file and function names, marker labels,
 *     STOPPED reason, EXEC path) holds hostile bytes: all of 0x01..0xff,
 *     invalid UTF-8 (lone continuation bytes, overlong forms, surrogates,
 *     5-byte forms), quotes, backslashes, control characters, U+2028, and
 *     "</script><script>alert(1)</script>". Three blocks stay live from
 *     stacks whose frames are in that module and in that Python function, so
 *     reports print those names. Expected: JSON output that is valid UTF-8
 *     and valid JSON, HTML that never closes its script element early.
 *
 *   rel_mktraces semantic DIR
 *     Traces whose bytes are well-framed but whose content breaks, or
 *     merely stretches, the format's promises (docs/trace-format.md, "What
 *     a valid trace promises"), one file each, and DIR/cases, a line per
 *     trace: "NAME 0" for one the analyzer must accept, "NAME 2 OFFSET
 *     CHUNK PAYLOAD_OFFSET MESSAGE" for a malformed one, where OFFSET,
 *     CHUNK and PAYLOAD_OFFSET locate its first bad record (as the builder
 *     wrote it) and MESSAGE is what the analyzer must say of it
 *     (tests/integration/rel_badinput.sh holds it to that). Malformed:
 *     frees and reallocs of addresses that are not live (never allocated,
 *     freed before their allocation, freed twice in a later chunk, freed
 *     as another kind of memory), stacks undefined, defined late, out of
 *     sequence, twice, or under an undefined parent, threads never
 *     started, impossible sizes (2^63, a block wrapping the address
 *     space, address 0), records before PROCESS_START or after TRACE_END,
 *     a second PROCESS_START, scan records outside their scan, the unload
 *     of a module never loaded. Accepted: an allocation over a live block,
 *     a TIMEBASE going back in time, a thread's events after its exit.
 *     Each also holds 2 ordinary blocks of 100 bytes, one freed.
 *
 *   rel_mktraces big OUT MIB
 *     About MIB MiB of trace file: alloc/free pairs of random sizes and
 *     addresses (so they compress poorly) with 1,000 blocks live at the end,
 *     chunks of 1 MiB raw, complete. Prints "events=N live=1000".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_builder.h"

static char hostile[1024];
static size_t hostile_len;

static void make_hostile(void)
{
    static const char extra[] =
        "\"quote\" \\back\\slash \x1b[31mred\x1b[0m \t\r\n"
        "\xe2\x80\xa8 \xe2\x80\xa9 " /* U+2028, U+2029 */
        "\x80 \xbf \xc0\xaf \xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80 \xff\xfe "
        "</script><script>alert(1)</script> <!-- & &amp; ]]> ";
    size_t n = 0;
    for (int c = 1; c < 256; c++)
        hostile[n++] = (char)c;
    memcpy(hostile + n, extra, sizeof extra - 1);
    n += sizeof extra - 1;
    hostile[n] = 0;
    hostile_len = n;
}

static void proc(struct gs_tb *tb, uint64_t pid, const char *exe, const char *argv,
                 size_t argv_len, const char *host, const char *version)
{
    gs_tb_process_start(tb, &(struct gs_tb_proc){
        .pid = pid, .ppid = 1, .wall_ns = 1700000000000000000ull, .exe = exe,
        .argv = argv, .argv_len = argv_len, .host = host, .version = version,
        .depth = 64, .page_size = 4096 });
}

static int weird(const char *out)
{
    make_hostile();
    struct gs_tb *tb = gs_tb_new();
    if (!tb)
        return 2;
    char argv[2100];
    memcpy(argv, hostile, hostile_len);
    argv[hostile_len] = 0;
    memcpy(argv + hostile_len + 1, "--flag=</script>", 16);
    proc(tb, 4242, hostile, argv, hostile_len + 17, hostile, hostile);
    struct gs_tb_seg seg = { 0, 0x10000, 5 };
    static const unsigned char bid[] = { 0xde, 0xad };
    gs_tb_module(tb, 1, 1, 0x400000, hostile, bid, sizeof bid, 1, &seg);
    gs_tb_thread_start(tb, 1, 4242, 2);
    gs_tb_pycode(tb, 5, hostile, hostile, 7);
    gs_tb_stack(tb, 1, 0, 0x401234);
    gs_tb_stack(tb, 2, 1, (1ull << 63) | (5ull << 32) | 9);
    gs_tb_stack(tb, 3, 2, 0x401300);
    gs_tb_marker(tb, 10, 1, 0, hostile);
    gs_tb_alloc(tb, 100, 1, 0x10000, 1000, 1);
    gs_tb_alloc(tb, 110, 1, 0x20000, 2000, 2);
    gs_tb_alloc(tb, 120, 1, 0x30000, 3000, 3);
    gs_tb_alloc(tb, 130, 1, 0x40000, 4000, 3);
    gs_tb_free_rec(tb, 140, 0x40000);
    gs_tb_marker(tb, 150, 1, 1, hostile);
    gs_tb_stopped(tb, 160, 0, hostile);
    gs_tb_exec(tb, 170, hostile);
    gs_tb_process_exit(tb, 180, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 190, 4, 1, 10000, 3, 6000);
    int rc = gs_tb_write_file(tb, out);
    gs_tb_free(tb);
    return rc ? 2 : 0;
}

/* The ordinary part every semantic case shares: 2 blocks of 100, one freed. */
static void ordinary(struct gs_tb *tb, int with_proc)
{
    if (with_proc)
        proc(tb, 77, "/bin/semantic", "semantic", 8, "h", "0.1.0");
    gs_tb_thread_start(tb, 1, 77, 1);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_alloc(tb, 10, 1, 0x1000, 100, 1);
    gs_tb_alloc(tb, 20, 1, 0x2000, 100, 1);
    gs_tb_free_rec(tb, 30, 0x1000);
}

/* A semantic case being written: the record to be named (marked right after
 * it is appended) and what the analyzer must say of it. */
struct sem_case {
    FILE *manifest;
    const char *dir;
    int marked;
    uint32_t chunk;
    size_t at;
};

static void mark(struct sem_case *c, struct gs_tb *tb)
{
    gs_tb_last_record(tb, &c->chunk, &c->at);
    c->marked = 1;
}

/* Ends the trace (PROCESS_EXIT, TRACE_END unless end is 0), writes it and
 * its manifest line: "NAME STATUS" and, for a malformed case, "OFFSET
 * CHUNK PAYLOAD_OFFSET MESSAGE", where the reader's location of the marked
 * record comes from the builder, which wrote it. */
static int write_case(struct sem_case *c, const char *name, struct gs_tb *tb, int end,
                      const char *msg)
{
    char path[4096];
    if (end) {
        gs_tb_process_exit(tb, 900, 0, GS_EXIT_NORMAL);
        gs_tb_trace_end(tb, 1000, 0, 0, 0, 0, 0);
    }
    snprintf(path, sizeof path, "%s/%s.trace", c->dir, name);
    int rc = gs_tb_write_file(tb, path);
    if (rc)
        fprintf(stderr, "rel_mktraces: cannot write %s\n", path);
    else if (msg && c->marked)
        fprintf(c->manifest, "%s 2 %ld %" PRIu32 " %zu %s\n", name,
                gs_tb_chunk_offset(tb, c->chunk), c->chunk, c->at, msg);
    else
        fprintf(c->manifest, "%s 0\n", name);
    gs_tb_free(tb);
    c->marked = 0;
    return rc ? 2 : 0;
}

static int semantic(const char *dir)
{
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s/cases", dir);
    struct sem_case c = { fopen(mpath, "w"), dir, 0, 0, 0 };
    if (!c.manifest)
        return 2;
    int rc = 0;
    struct gs_tb *tb;

    /* ---- malformed: the first problem, named at its record ---- */
    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_free_rec(tb, 40, 0x9000); mark(&c, tb);
    rc |= write_case(&c, "free-unknown", tb, 1, "FREE of 0x9000 that is not live");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_free_rec(tb, 40, 0x5000); mark(&c, tb);
    gs_tb_alloc(tb, 50, 1, 0x5000, 500, 1);
    rc |= write_case(&c, "free-first", tb, 1, "FREE of 0x5000 that is not live");

    /* the same in a later chunk, among other records */
    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_flush_chunk(tb);
    gs_tb_alloc(tb, 40, 1, 0x3000, 30, 1);
    gs_tb_free_rec(tb, 41, 0x3000);
    gs_tb_free_rec(tb, 42, 0x3000); mark(&c, tb);
    rc |= write_case(&c, "free-twice-chunk1", tb, 1, "FREE of 0x3000 that is not live");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_realloc(tb, 40, 1, 0xb000, 64, 1); mark(&c, tb);
    rc |= write_case(&c, "realloc-unknown", tb, 1, "REALLOC of 0xb000 that is not live");

    /* a device free of a host block's address: another block (domain) */
    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_free_ex(tb, 40, 1, 0x2000, GS_MEM_DEVICE, GS_FN_CUDA_RUNTIME, 0); mark(&c, tb);
    rc |= write_case(&c, "free-ex-other-kind", tb, 1, "FREE_EX of 0x2000 that is not live");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0x6000, 600, 99); mark(&c, tb);
    rc |= write_case(&c, "stack-undefined", tb, 1,
                     "ALLOC names stack 99, which no STACK record before it defines");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0x6000, 600, 2); mark(&c, tb);
    gs_tb_stack(tb, 2, 1, 0x401100);
    rc |= write_case(&c, "stack-late", tb, 1,
                     "ALLOC names stack 2, which no STACK record before it defines");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_stack(tb, 5, 1, 0x401100); mark(&c, tb);
    rc |= write_case(&c, "stack-gap", tb, 1, "STACK 5 out of sequence (the next id is 2)");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_stack(tb, 1, 0, 0x402000); mark(&c, tb);
    rc |= write_case(&c, "stack-twice", tb, 1, "STACK 1 defined again");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_stack(tb, 2, 7, 0x402000); mark(&c, tb);
    rc |= write_case(&c, "stack-parent", tb, 1,
                     "STACK 2 names parent 7, which is not defined before it");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 7, 0x7000, 700, 1); mark(&c, tb);
    rc |= write_case(&c, "thread-unknown", tb, 1,
                     "ALLOC by thread 7, which has no THREAD_START before it");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_thread_exit(tb, 9, 40); mark(&c, tb);
    rc |= write_case(&c, "thread-exit-unknown", tb, 1, "THREAD_EXIT of thread 9, which never started");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0x8000, 1ull << 63, 1); mark(&c, tb);
    gs_tb_alloc(tb, 50, 1, 0x9000, UINT64_MAX, 1);
    rc |= write_case(&c, "huge-size", tb, 1,
                     "ALLOC of 0x8000 with impossible size 9223372036854775808 (2^63 or more) "
                     "(and 1 more problem)");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc_ex(tb, 40, 1, 0xfffffffffffff000ull, 8192, 1, GS_MEM_DEVICE,
                   GS_FN_CUDA_RUNTIME, 0, 0, 0); mark(&c, tb);
    rc |= write_case(&c, "size-wraps", tb, 1,
                     "ALLOC_EX of 0xfffffffffffff000 with size 8192 runs past the end of the "
                     "address space");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0, 16, 1); mark(&c, tb);
    rc |= write_case(&c, "addr-zero", tb, 1, "ALLOC of address 0");

    tb = gs_tb_new();
    gs_tb_thread_start(tb, 1, 77, 1); mark(&c, tb);
    gs_tb_stack(tb, 1, 0, 0x401000);
    gs_tb_alloc(tb, 10, 1, 0x1000, 100, 1);
    rc |= write_case(&c, "no-process", tb, 1, "THREAD_START record before PROCESS_START");

    tb = gs_tb_new(); ordinary(tb, 1);
    proc(tb, 78, "/bin/semantic", "semantic", 8, "h", "0.1.0"); mark(&c, tb);
    rc |= write_case(&c, "process-twice", tb, 1, "a second PROCESS_START");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_scan_block(tb, 3, 0x2000, 100, 1, GS_MEM_HOST, GS_CLASS_DEFINITE); mark(&c, tb);
    rc |= write_case(&c, "scan-block-outside", tb, 1, "SCAN_BLOCK of scan 3 outside that scan");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_scan_begin(tb, 1, 40, GS_SCAN_TRIG_API, 0);
    gs_tb_scan_begin(tb, 2, 41, GS_SCAN_TRIG_API, 0); mark(&c, tb);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = 2, .t_start = 41, .t_end = 42 });
    rc |= write_case(&c, "scan-nested", tb, 1, "SCAN_BEGIN of scan 2 while scan 1 is open");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_scan_end(tb, &(struct gs_tb_scan_end){ .scan_id = 4, .t_start = 41, .t_end = 42 });
    mark(&c, tb);
    rc |= write_case(&c, "scan-end-outside", tb, 1, "SCAN_END of scan 4 outside that scan");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_module_unload(tb, 5, 40); mark(&c, tb);
    rc |= write_case(&c, "unload-unknown", tb, 1, "MODULE_UNLOAD of module 5, which is not loaded");

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_process_exit(tb, 900, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 1000, 2, 1, 200, 1, 100);
    gs_tb_alloc(tb, 1001, 1, 0x4000, 40, 1); mark(&c, tb);
    rc |= write_case(&c, "after-end", tb, 0, "ALLOC record after TRACE_END");

    /* ---- valid, though odd: exit 0 ---- */
    /* an allocation over a live block: the shim missed the earlier block's
     * free (freed where it does not see it); the replay ends it there */
    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0x2000, 300, 1);
    rc |= write_case(&c, "alloc-twice", tb, 1, NULL);

    /* a new buffer's TIMEBASE earlier than the records before it: buffers
     * of different streams are out of time order by up to a flush interval */
    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_timebase(tb, 5);
    gs_tb_alloc(tb, 6, 1, 0xa000, 800, 1);
    rc |= write_case(&c, "time-back", tb, 1, NULL);

    /* a thread's events after its THREAD_EXIT (a definition, written ahead
     * of the thread's last events) */
    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_thread_exit(tb, 1, 35);
    gs_tb_alloc(tb, 40, 1, 0xc000, 50, 1);
    rc |= write_case(&c, "thread-after-exit", tb, 1, NULL);
    fclose(c.manifest);
    return rc;
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int big(const char *out, long mib)
{
    struct gs_tb *tb = gs_tb_new();
    if (!tb)
        return 2;
    gs_tb_set_chunk_limit(tb, 1 << 20);
    proc(tb, 99, "/bin/big", "big", 3, "h", "0.1.0");
    gs_tb_thread_start(tb, 1, 99, 1);
    for (uint64_t s = 1; s <= 64; s++)
        gs_tb_stack(tb, s, 0, 0x401000 + s * 16);
    uint64_t seed = 88172645463325252ull, t = 100, events = 0, allocs = 0, bytes = 0;
    uint64_t target = (uint64_t)mib << 20;
    static uint64_t live[1000];
    uint64_t live_bytes = 0;
    for (int i = 0; i < 1000; i++) {
        live[i] = 0x7f0000000000ull + (uint64_t)i * 4096;
        gs_tb_alloc(tb, t++, 1, live[i], 64, 1 + (uint64_t)i % 64);
        allocs++;
        bytes += 64;
        live_bytes += 64;
        events++;
    }
    size_t len = 0;
    for (uint64_t k = 0;; k++) {
        uint64_t a = 0x100000000ull + (rng(&seed) & 0xffffffff0ull);
        uint64_t sz = 1 + rng(&seed) % 100000;
        t += rng(&seed) % 1000;
        gs_tb_alloc(tb, t, 1, a, sz, 1 + rng(&seed) % 64);
        gs_tb_free_rec(tb, t + 1, a);
        allocs++;
        bytes += sz;
        events += 2;
        /* the file image grows as chunks close: check it now and then */
        if ((k & 0xffff) == 0) {
            if (!gs_tb_data(tb, &len))
                return 2;
            if (len >= target)
                break;
        }
    }
    gs_tb_process_exit(tb, t + 10, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, t + 20, allocs, allocs - 1000, bytes, 1000, live_bytes);
    int rc = gs_tb_write_file(tb, out);
    gs_tb_free(tb);
    printf("events=%" PRIu64 " live=1000\n", events);
    return rc ? 2 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "weird"))
        return weird(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "semantic")) {
        mkdir(argv[2], 0755);
        return semantic(argv[2]);
    }
    if (argc == 4 && !strcmp(argv[1], "big"))
        return big(argv[2], atol(argv[3]));
    fprintf(stderr, "usage: rel_mktraces weird OUT | semantic DIR | big OUT MIB\n");
    return 2;
}
