/*
 * Writing per-process summaries (summary_json.c) as JSON.
 */
#ifndef GCSPY_SUMMARY_JSON_H
#define GCSPY_SUMMARY_JSON_H

#include <stdio.h>

#include "summary.h"

/* As a JSON document (one object) on f. */
void gs_psum_write(FILE *f, const struct gs_psum *p);
/* The same object as an element of an array the writer has open. */
struct gs_jw;
void gs_psum_json(struct gs_jw *w, const struct gs_psum *p);

#endif /* GCSPY_SUMMARY_JSON_H */
