/*
 * What the HTML page draws that the JSON report does not hold, written from
 * the result's history (analyzer/history.h: address-space maps over time,
 * the host heap's free space at each snapshot, each device's allocator
 * state, each growth suspect's live bytes at its fit's checkpoints, every
 * pause) as one JSON object per process into the page's gcspy-extra slot
 * (html.c). html_extra.c documents the keys, reports/web/src reads them.
 */
#ifndef GCSPY_HTML_EXTRA_H
#define GCSPY_HTML_EXTRA_H

#include "../analyzer/history.h"
#include "jsonw.h"

/* Writes h's keys into the object w has open. 0, or -1 when out of memory
 * (some keys may be written then). */
int gs_html_extra_write(struct gs_jw *w, const struct gs_history *h);

#endif /* GCSPY_HTML_EXTRA_H */
