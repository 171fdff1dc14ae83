/*
 * Unit tests of per-process summaries (analyzer/summary.c) and the job
 * report's outlier rule (reports/job.c): a summary written and read back
 * is the same struct; unknown keys are skipped, a cut document, another
 * format or version refused; outliers against the others' median: the one
 * leaking rank of two, one of 1,000, none among equals, never a launcher.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "summary.h"
#include "../reports/job.h"
#include "../reports/summary_json.h"

static struct gs_psum sample(int64_t rank, uint64_t leaked)
{
    struct gs_psum p;
    memset(&p, 0, sizeof p);
    snprintf(p.trace, sizeof p.trace, "/x/rank%lld.trace", (long long)rank);
    snprintf(p.host, sizeof p.host, "node\"1\"\n");
    p.pid = 1000 + (uint64_t)(rank < 0 ? 99 : rank);
    p.rank = rank;
    p.local_rank = rank < 0 ? -1 : rank % 4;
    p.world_size = rank < 0 ? -1 : 8;
    p.launcher = rank < 0;
    p.complete = 1;
    p.leaked_bytes[0] = leaked;
    p.leaked_blocks[0] = leaked / 4096;
    if (leaked) {
        p.nsites = 1;
        strcpy(p.sites[0].cls, "definite");
        p.sites[0].bytes = leaked;
        p.sites[0].blocks = leaked / 4096;
        strcpy(p.sites[0].where, "f (a.c:3) \xc3\xa9");
    }
    p.ngrowth = 1;
    strcpy(p.growth[0].axis, "step");
    p.growth[0].rate = 1234.5;
    p.growth[0].confidence = 0.97;
    p.pause_count = 3;
    p.pause_total_ns = 5000000;
    p.heap_ratio = 0.25;
    return p;
}

static char *tmpfile_with(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/gcspy-unit-sum.XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

Test(summary, round_trip)
{
    struct gs_psum a = sample(5, 3 * 4096), b;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gs_psum_write(f, &a);
    fclose(f);
    char *path = tmpfile_with(buf);
    char err[256];
    cr_assert_eq(gs_psum_is_summary(path), 1);
    cr_assert_eq(gs_psum_read(path, &b, err, sizeof err), 0, "%s", err);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "the summary read back differs:\n%s", buf);
    unlink(path);
    free(buf);
}

Test(summary, unknown_keys_and_refusals)
{
    char err[256];
    struct gs_psum p;
    char *path = tmpfile_with("{\"format\": \"gcspy-summary\", \"version\": 1, \"later\": "
                              "{\"x\": [1, 2, {\"y\": null}], \"z\": \"w\"}, \"rank\": 3, "
                              "\"world_size\": null, \"pauses\": {\"count\": 2, \"new\": true}}");
    cr_assert_eq(gs_psum_read(path, &p, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.rank, 3);
    cr_assert_eq(p.world_size, -1);
    cr_assert_eq(p.pause_count, 2);
    unlink(path);
    path = tmpfile_with("{\"format\": \"gcspy-summary\", \"version\": 1, \"rank\": ");
    cr_assert_eq(gs_psum_read(path, &p, err, sizeof err), -1);
    cr_assert(strstr(err, "not a gcspy summary: malformed JSON number at byte"), "%s", err);
    unlink(path);
    path = tmpfile_with("{\"format\": \"gcspy-job\", \"version\": 1}");
    cr_assert_eq(gs_psum_read(path, &p, err, sizeof err), -1);
    cr_assert(strstr(err, "not a gcspy summary (format 'gcspy-job')"), "%s", err);
    unlink(path);
    path = tmpfile_with("{\"format\": \"gcspy-summary\", \"version\": 2}");
    cr_assert_eq(gs_psum_read(path, &p, err, sizeof err), -1);
    cr_assert(strstr(err, "summary version 2, this gcspy reads version 1"), "%s", err);
    unlink(path);
    path = tmpfile_with("GCSPYTRC");
    cr_assert_eq(gs_psum_is_summary(path), 0);
    unlink(path);
}

/* The JSON job report's outliers as "rank:metric;" pairs. */
static char *outliers_of(struct gs_psum *ps, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(gs_job_write(f, ps, n, 1), 0);
    fclose(f);
    static char out[4096];
    out[0] = 0;
    for (char *p = strstr(buf, "\"outliers\""); p && (p = strstr(p, "\"rank\":"));) {
        long r;
        char m[32];
        p += 7;
        if (sscanf(p, " %ld,\"metric\":\"%31[^\"]", &r, m) == 2 ||
            sscanf(p, "%ld,\"metric\":\"%31[^\"]", &r, m) == 2)
            snprintf(out + strlen(out), sizeof out - strlen(out), "%ld:%s;", r, m);
    }
    free(buf);
    return out;
}

Test(job, outliers_against_the_others)
{
    /* two ranks, one leaking: the median of all (half the leak) would hide it */
    struct gs_psum two[2] = {sample(1, 1 << 20), sample(0, 0)};
    cr_assert_str_eq(outliers_of(two, 2), "1:leaked bytes;");
    /* equal values: nobody; a launcher leaking: never an outlier */
    struct gs_psum eq[3] = {sample(0, 1 << 20), sample(1, 1 << 20), sample(-1, 64 << 20)};
    cr_assert_str_eq(outliers_of(eq, 3), "");
    /* below the floor (64 KiB above the median): nobody */
    struct gs_psum small[2] = {sample(0, 0), sample(1, 60 << 10)};
    cr_assert_str_eq(outliers_of(small, 2), "");
    /* 1,000 ranks, small varied leaks, one large */
    struct gs_psum *many = calloc(1000, sizeof *many);
    for (int r = 0; r < 1000; r++)
        many[r] = sample(r, (uint64_t)(r % 7) * 4096 + (r == 777 ? 16u << 20 : 0));
    cr_assert_str_eq(outliers_of(many, 1000), "777:leaked bytes;");
    free(many);
}
