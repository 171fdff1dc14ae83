/*
 * The CI gate's judgement (`gcspy check`) and its verdict type, which the
 * JUnit and JSON reporters print; separate from its option parsing
 * (analyzer/cli/check_cmd.c) so unit tests can judge results directly.
 *
 * What counts: allocation sites (result.h's sites) whose worst class is in
 * fail_on, not suppressed, not inherited from a parent process (the
 * parent's own trace counts those), with all their lost bytes (definite,
 * indirect and possible) and their bytes of any other class in fail_on:
 * one site's blocks split between classes by chance (a stale pointer-like
 * number makes a block "possible"), and the site is what leaks. per_class
 * counts leak groups by their own class instead (the old view).
 * Host-side memory (host, pinned, managed) is held to max_bytes and
 * max_blocks, device memory to max_device_bytes. "growth" in fail_on fails
 * a trace with any growth suspect that is not suppressed. A trace with no
 * leak scan (result.h's GS_LS_NO_SCAN: killed, _exit, the scan skipped or
 * off) fails unless allow_no_scan: nothing in it rules a leak out. A trace
 * that ended by exec is a clean end and needs none. A malformed trace
 * (result.h) is an error whatever its leaks.
 */
#ifndef GCSPY_CHECK_H
#define GCSPY_CHECK_H

#include <stdint.h>

#include "result.h"

/* The judgement of one trace, which the JUnit and JSON reporters print. */
struct gs_verdict {
    int status;             /* 0 within limits, 1 a limit exceeded, 2 error */
    char line[1024];        /* the one-line verdict printed per trace */
    char detail[8192];      /* every exceeded limit and the leaks behind it */
    uint64_t leak_bytes, leak_blocks, device_bytes, suspects;
    int no_scan;            /* failed for want of a leak scan */
};

#define GS_CHECK_GROWTH (1u << GS_RC__N)   /* in fail_on: growth suspects */

struct gs_check_limits {
    uint64_t max_bytes, max_blocks, max_device_bytes;  /* UINT64_MAX: no limit */
    uint32_t fail_on;           /* 1 << class, | GS_CHECK_GROWTH */
    int require_complete;       /* an incomplete trace is an error */
    int allow_no_scan;          /* a trace with no leak scan may pass */
    int per_class;              /* count groups by their own class, not sites */
};

void gs_check_defaults(struct gs_check_limits *l);
/* "definite,indirect,growth" -> mask; -1 naming nothing valid. */
int gs_check_parse_fail_on(const char *s, uint32_t *mask, char *bad, size_t badlen);
/* Judges one loaded trace (r NULL: error is why it could not be read). */
void gs_check_eval(const struct gs_check_limits *l, const char *trace,
                   const struct gs_result *r, const char *error, struct gs_verdict *v);

#endif /* GCSPY_CHECK_H */
