/*
 * The job report (job.c): one row per process of a job (ranks, launchers,
 * workers) from their summaries, the ranks that differ from the others,
 * and job totals; in text or as one JSON document (docs/jobs.md).
 */
#ifndef GCSPY_JOB_H
#define GCSPY_JOB_H

#include <stddef.h>
#include <stdio.h>

#include "summary.h"

/* Sorts ps (ranks in order, then the rest by pid) and writes the report;
 * 0, or -1 when out of memory. */
int gs_job_write(FILE *f, struct gs_psum *ps, size_t n, int json);

#endif /* GCSPY_JOB_H */
