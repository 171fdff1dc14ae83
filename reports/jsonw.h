/*
 * A small streaming JSON writer for the JSON reporter and the HTML page's
 * extra data (html_extra.c): strings escaped (control characters, quotes,
 * invalid UTF-8 replaced by U+FFFD so the output always parses), doubles
 * printed round-trippable and non-finite values as null, pretty-printed
 * with two-space indents except inside containers opened "compact" (long
 * numeric series stay one line each).
 */
#ifndef GCSPY_JSONW_H
#define GCSPY_JSONW_H

#include <stdint.h>
#include <stdio.h>

#define GS_JW_DEPTH 32

struct gs_jw {
    FILE *f;
    int depth;
    uint8_t first[GS_JW_DEPTH];
    uint8_t compact[GS_JW_DEPTH];
};

void gs_jw_init(struct gs_jw *w, FILE *f);
/* key is NULL inside arrays and at the top. */
void gs_jw_obj(struct gs_jw *w, const char *key);
void gs_jw_obj_compact(struct gs_jw *w, const char *key);
void gs_jw_end_obj(struct gs_jw *w);
void gs_jw_arr(struct gs_jw *w, const char *key, int compact);
void gs_jw_end_arr(struct gs_jw *w);
void gs_jw_str(struct gs_jw *w, const char *key, const char *v);   /* NULL: null */
void gs_jw_strn(struct gs_jw *w, const char *key, const char *v, size_t n);
void gs_jw_u64(struct gs_jw *w, const char *key, uint64_t v);
void gs_jw_i64(struct gs_jw *w, const char *key, int64_t v);
void gs_jw_dbl(struct gs_jw *w, const char *key, double v);
void gs_jw_bool(struct gs_jw *w, const char *key, int v);
void gs_jw_null(struct gs_jw *w, const char *key);
/* A hex string "0x..." (addresses do not fit JSON's safe integers). */
void gs_jw_hex(struct gs_jw *w, const char *key, uint64_t v);
/* A frame's "function", "file", "line" (null when unknown) and "module"
 * keys, as every frame object of the report and the page's data has them. */
struct gs_frame;
void gs_jw_frame_where(struct gs_jw *w, const struct gs_frame *f);

#endif /* GCSPY_JSONW_H */
