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
 *     Traces whose bytes are well-framed but whose content is impossible,
 *     one file each (expected in tests/integration/rel_badinput.sh):
 *       free-unknown.trace     a FREE of an address never allocated
 *       alloc-twice.trace      two ALLOCs of one address without a FREE
 *       free-first.trace       a FREE before the ALLOC of its address
 *       stack-undefined.trace  an ALLOC naming stack 99, never defined
 *       stack-late.trace       STACK 2 defined after the ALLOC that uses it
 *       thread-unknown.trace   an ALLOC by thread 7, which never started
 *       huge-size.trace        blocks of 2^63 and 2^64-1 bytes
 *       time-back.trace        a TIMEBASE earlier than the events before it
 *       no-process.trace       events without a PROCESS_START
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

static int write_case(const char *dir, const char *name, struct gs_tb *tb, uint64_t allocs,
                      uint64_t frees, uint64_t bytes, uint64_t live, uint64_t live_bytes)
{
    char path[4096];
    gs_tb_process_exit(tb, 900, 0, GS_EXIT_NORMAL);
    gs_tb_trace_end(tb, 1000, allocs, frees, bytes, live, live_bytes);
    snprintf(path, sizeof path, "%s/%s.trace", dir, name);
    int rc = gs_tb_write_file(tb, path);
    gs_tb_free(tb);
    if (rc)
        fprintf(stderr, "rel_mktraces: cannot write %s\n", path);
    return rc ? 2 : 0;
}

static int semantic(const char *dir)
{
    int rc = 0;
    struct gs_tb *tb;

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_free_rec(tb, 40, 0x9000);
    rc |= write_case(dir, "free-unknown", tb, 2, 2, 200, 1, 100);

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0x2000, 300, 1);
    rc |= write_case(dir, "alloc-twice", tb, 3, 1, 500, 1, 300);

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_free_rec(tb, 40, 0x5000);
    gs_tb_alloc(tb, 50, 1, 0x5000, 500, 1);
    rc |= write_case(dir, "free-first", tb, 3, 2, 700, 1, 100);

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0x6000, 600, 99);
    rc |= write_case(dir, "stack-undefined", tb, 3, 1, 800, 2, 700);

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0x6000, 600, 2);
    gs_tb_stack(tb, 2, 1, 0x401100);
    rc |= write_case(dir, "stack-late", tb, 3, 1, 800, 2, 700);

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 7, 0x7000, 700, 1);
    rc |= write_case(dir, "thread-unknown", tb, 3, 1, 900, 2, 800);

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_alloc(tb, 40, 1, 0x8000, 1ull << 63, 1);
    gs_tb_alloc(tb, 50, 1, 0x9000, UINT64_MAX, 1);
    rc |= write_case(dir, "huge-size", tb, 4, 1, 0, 3, 0);

    tb = gs_tb_new(); ordinary(tb, 1);
    gs_tb_timebase(tb, 5);
    gs_tb_alloc(tb, 6, 1, 0xa000, 800, 1);
    rc |= write_case(dir, "time-back", tb, 3, 1, 1000, 2, 900);

    tb = gs_tb_new(); ordinary(tb, 0);
    rc |= write_case(dir, "no-process", tb, 2, 1, 200, 1, 100);
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
