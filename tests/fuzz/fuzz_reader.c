/*
 * libFuzzer target: the streaming trace reader (analyzer/trace_reader.c),
 * from memory and from a file descriptor, on each input three ways (see
 * fuzz_common.h). Besides the sanitizers' findings it checks the reader's
 * own promises and aborts when one breaks:
 *   - it stops with GS_READ_EOF or GS_READ_DAMAGED, never loops;
 *   - damage is sticky and its message names a byte offset;
 *   - no record claims a file offset past the input, and every string a
 *     record hands out lies inside the reader's current chunk (ASan checks
 *     the bytes are readable: they are summed);
 *   - the memory and descriptor paths return the same records and status.
 *
 * Build and run: `make fuzz` (tests/mk/reliability.mk); a regression input
 * is replayed with `build/tests/fuzz/fuzz_reader FILE`.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "trace_reader.h"

static volatile uint64_t sink;

static void touch(struct gs_bytes b)
{
    uint64_t s = 0;
    for (size_t i = 0; i < b.n; i++)
        s += b.p[i];
    sink += s;
}

static void touch_rec(const struct gs_record *r)
{
    switch (r->type) {
    case GS_REC_PROCESS_START:
        touch(r->u.proc.exe); touch(r->u.proc.argv); touch(r->u.proc.host);
        touch(r->u.proc.version);
        break;
    case GS_REC_MODULE:
        touch(r->u.module.path); touch(r->u.module.build_id);
        if (r->u.module.nseg > GS_MAX_SEGS)
            abort();
        break;
    case GS_REC_MARKER: touch(r->u.marker.label); break;
    case GS_REC_EXEC: touch(r->u.exec.path); break;
    case GS_REC_STOPPED: touch(r->u.stopped.reason); break;
    case GS_REC_PYCODE: touch(r->u.pycode.file); touch(r->u.pycode.function); break;
    default: break;
    }
}

/* Reads everything; returns a digest of the records and the final status. */
static uint64_t read_all(struct gs_reader *r, size_t input_len)
{
    struct gs_record rec;
    uint64_t digest = 1469598103934665603ull, n = 0;
    int rc;
    while ((rc = gs_reader_next(r, &rec)) == GS_READ_OK) {
        if (rec.file_offset >= input_len)
            abort();
        touch_rec(&rec);
        digest = (digest ^ rec.type ^ rec.t ^ rec.payload_offset) * 1099511628211ull;
        if (++n > 100000000)
            abort(); /* more records than bytes could ever hold */
    }
    if (rc != GS_READ_EOF && rc != GS_READ_DAMAGED)
        abort();
    if (rc == GS_READ_DAMAGED) {
        const char *e = gs_reader_error(r);
        if (!e || !strstr(e, "offset "))
            abort();
        if (gs_reader_next(r, &rec) != GS_READ_DAMAGED)
            abort(); /* sticky */
    }
    if (gs_reader_offset(r) > input_len)
        abort();
    return digest ^ (uint64_t)rc << 60 ^ n;
}

static void one(const uint8_t *d, size_t n)
{
    char err[256];
    struct gs_reader *r = gs_reader_open_mem(d, n, err, sizeof err);
    uint64_t from_mem = r ? read_all(r, n) : 0;
    if (r)
        gs_reader_close(r);
    else if (!strstr(err, "offset") && !strstr(err, "version"))
        abort(); /* a refused header names where it is wrong, or the version */

    int fd = memfd_create("fuzz", 0);
    if (fd < 0)
        return;
    if (n && write(fd, d, n) != (ssize_t)n) {
        close(fd);
        return;
    }
    lseek(fd, 0, SEEK_SET);
    struct gs_reader *f = gs_reader_open_fd(fd, "fuzz", err, sizeof err);
    if (!f != !r)
        abort(); /* memory and descriptor disagree on the header */
    if (f) {
        if (read_all(f, n) != from_mem)
            abort(); /* ... or on the records */
        gs_reader_close(f);
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size);
    uint8_t *b = fz_reseal(data, size);
    if (b) {
        one(b, size);
        free(b);
    }
    size_t len;
    b = fz_wrap(data, size, &len);
    if (b) {
        one(b, len);
        free(b);
    }
    return 0;
}
