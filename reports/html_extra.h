/*
 * What the HTML page draws that the JSON report does not hold: address-space
 * maps over time (host heaps, each device's segments and the PyTorch blocks
 * inside them), the heap's fragmentation over time, each growth suspect's
 * live bytes per step, and every pause. It comes from a second pass over the
 * trace with the analyzer's replay model, written as one JSON object per
 * process into the page's gcspy-extra slot (html.c); html_extra.c documents
 * the keys, reports/web/src reads them.
 */
#ifndef GCSPY_HTML_EXTRA_H
#define GCSPY_HTML_EXTRA_H

#include <stddef.h>

#include "../analyzer/result.h"
#include "jsonw.h"

/* Shared by the traces of one report (the symbolizer naming sites). */
struct gs_html_extra_ctx;

/* NULL when out of memory. */
struct gs_html_extra_ctx *gs_html_extra_new(void);
void gs_html_extra_free(struct gs_html_extra_ctx *x);

/* Writes the keys of trace's extra object (r: its result) into the object w
 * has open. Returns 0, or -1 with a one-line reason in err, having written
 * nothing, when the trace cannot be read again (standard input, removed
 * since) or memory runs out. */
int gs_html_extra_write(struct gs_html_extra_ctx *x, struct gs_jw *w, const char *trace,
                        const struct gs_result *r, char *err, size_t errlen);

#endif /* GCSPY_HTML_EXTRA_H */
