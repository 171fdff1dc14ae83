/*
 * The JSON writer (jsonw.h). Separators and indentation are decided when an
 * element starts: a comma unless it is the container's first, then a newline
 * and indent unless the container is compact.
 */
#include "jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "../analyzer/utf8.h"
#include "../analyzer/result.h"

void gs_jw_init(struct gs_jw *w, FILE *f)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    w->first[0] = 1;
}

static void esc(struct gs_jw *w, const char *s, size_t n)
{
    FILE *f = w->f;
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    fputc('"', f);
    while (p < e) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': fputs("\\n", f); break;
            case '\t': fputs("\\t", f); break;
            case '\r': fputs("\\r", f); break;
            default: fprintf(f, "\\u%04x", c);
            }
            p++;
        } else if (c < 0x80) {
            fputc(c, f);
            p++;
        } else {
            /* a well-formed UTF-8 sequence passes; anything else is U+FFFD */
            uint32_t cp;
            size_t len = gs_utf8_seq(p, (size_t)(e - p), &cp);
            if (len) {
                fwrite(p, 1, len, f);
                p += len;
            } else {
                fputs("\\ufffd", f);
                p++;
            }
        }
    }
    fputc('"', f);
}

static void elem(struct gs_jw *w, const char *key)
{
    int d = w->depth;
    if (!w->first[d])
        fputc(',', w->f);
    w->first[d] = 0;
    if (d > 0 && !w->compact[d]) {
        fputc('\n', w->f);
        for (int i = 0; i < d; i++)
            fputs("  ", w->f);
    }
    if (key) {
        esc(w, key, strlen(key));
        fputs(w->compact[d] ? ":" : ": ", w->f);
    }
}

static void open_c(struct gs_jw *w, const char *key, char ch, int compact)
{
    elem(w, key);
    fputc(ch, w->f);
    if (w->depth + 1 < GS_JW_DEPTH) {
        w->depth++;
        w->first[w->depth] = 1;
        w->compact[w->depth] = (uint8_t)(compact || w->compact[w->depth - 1]);
    }
}

static void close_c(struct gs_jw *w, char ch)
{
    int d = w->depth;
    int empty = w->first[d];
    if (d > 0)
        w->depth--;
    if (!empty && !w->compact[d]) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    fputc(ch, w->f);
    if (w->depth == 0)
        fputc('\n', w->f);
}

void gs_jw_obj(struct gs_jw *w, const char *key) { open_c(w, key, '{', 0); }
void gs_jw_obj_compact(struct gs_jw *w, const char *key) { open_c(w, key, '{', 1); }
void gs_jw_end_obj(struct gs_jw *w) { close_c(w, '}'); }
void gs_jw_arr(struct gs_jw *w, const char *key, int compact) { open_c(w, key, '[', compact); }
void gs_jw_end_arr(struct gs_jw *w) { close_c(w, ']'); }

void gs_jw_str(struct gs_jw *w, const char *key, const char *v)
{
    if (!v) {
        gs_jw_null(w, key);
        return;
    }
    elem(w, key);
    esc(w, v, strlen(v));
}

void gs_jw_strn(struct gs_jw *w, const char *key, const char *v, size_t n)
{
    elem(w, key);
    esc(w, v, n);
}

void gs_jw_u64(struct gs_jw *w, const char *key, uint64_t v)
{
    elem(w, key);
    fprintf(w->f, "%" PRIu64, v);
}

void gs_jw_i64(struct gs_jw *w, const char *key, int64_t v)
{
    elem(w, key);
    fprintf(w->f, "%" PRId64, v);
}

void gs_jw_dbl(struct gs_jw *w, const char *key, double v)
{
    if (!isfinite(v)) {
        gs_jw_null(w, key);
        return;
    }
    elem(w, key);
    if (v == (double)(int64_t)v && fabs(v) < 1e15)
        fprintf(w->f, "%" PRId64, (int64_t)v);
    else
        fprintf(w->f, "%.6g", v);
}

void gs_jw_bool(struct gs_jw *w, const char *key, int v)
{
    elem(w, key);
    fputs(v ? "true" : "false", w->f);
}

void gs_jw_null(struct gs_jw *w, const char *key)
{
    elem(w, key);
    fputs("null", w->f);
}

void gs_jw_hex(struct gs_jw *w, const char *key, uint64_t v)
{
    elem(w, key);
    fprintf(w->f, "\"0x%" PRIx64 "\"", v);
}

void gs_jw_frame_where(struct gs_jw *w, const struct gs_frame *f)
{
    gs_jw_str(w, "function", f->function);
    gs_jw_str(w, "file", f->file);
    if (f->line)
        gs_jw_u64(w, "line", f->line);
    else
        gs_jw_null(w, "line");
    gs_jw_str(w, "module", f->module);
}
