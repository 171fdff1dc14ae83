/*
 * Human units (fmt.h): binary units from 10 KiB up (below that the exact
 * count of bytes reads better), three significant digits or so.
 */
#include "fmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#include "result.h"
#include "utf8.h"

const char *gs_fmt_bytes(char *buf, uint64_t n)
{
    static const char *const u[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
    if (n < 10240) {
        snprintf(buf, 32, "%" PRIu64 " byte%s", n, n == 1 ? "" : "s");
        return buf;
    }
    double v = (double)n / 1024;
    int k = 0;
    while (v >= 1024 && k < 4) {
        v /= 1024;
        k++;
    }
    snprintf(buf, 32, v < 100 ? "%.1f %s" : "%.0f %s", v, u[k]);
    return buf;
}

const char *gs_fmt_ns(char *buf, uint64_t ns)
{
    if (ns >= 1000000000ull)
        snprintf(buf, 32, "%.3f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, 32, "%.1f ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, 32, "%.1f us", (double)ns / 1e3);
    else
        snprintf(buf, 32, "%" PRIu64 " ns", ns);
    return buf;
}

char *gs_fmt_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = gs_utf8_seq(p + i, n - i, &cp);
        if (len && gs_utf8_printable(cp)) {
            i += len;
        } else {
            p[i++] = '?';
        }
    }
    return s;
}

const char *gs_frame_label(const struct gs_frame *f, char *buf, size_t n, int no_line)
{
    const char *mod = f->module ? strrchr(f->module, '/') : NULL;
    mod = mod ? mod + 1 : f->module;
    if (f->function && f->file && f->line && !no_line)
        snprintf(buf, n, "%s %s:%" PRIu32, f->function, f->file, f->line);
    else if (f->function)
        snprintf(buf, n, "%s", f->function);
    else if (mod)
        snprintf(buf, n, "%s+0x%" PRIx64, mod, f->offset);
    else
        snprintf(buf, n, "0x%" PRIx64, f->ip);
    /* a cut at n may split a sequence: gs_fmt_clean turns its bytes to '?' */
    return gs_fmt_clean(buf);
}

/* Appends name to out[0, *len) after a ';' (none first), a ';' inside it
 * made ':'; -1 when out of memory (out freed). */
static int append(char **out, size_t *cap, size_t *len, const char *name)
{
    size_t nl = strlen(name);
    if (GS_GROW(*out, *cap, *len + nl + 2)) {
        free(*out);
        return -1;
    }
    if (*len)
        (*out)[(*len)++] = ';';
    for (size_t i = 0; i <= nl; i++)
        (*out)[*len + i] = name[i] == ';' ? ':' : name[i];
    *len += nl;
    return 0;
}

char *gs_stack_text(const struct gs_sitestat *s, const char *prefix)
{
    size_t cap = 256, len = 0;
    char *out = malloc(cap), buf[1024];
    if (!out)
        return NULL;
    out[0] = 0;
    if (prefix && append(&out, &cap, &len, prefix))
        return NULL;
    if (!s->st.n) {
        snprintf(buf, sizeof buf, "stack %" PRIu32, s->stack_id);
        return append(&out, &cap, &len, buf) ? NULL : out;
    }
    for (uint32_t k = s->st.n; k-- > 0;)
        if (append(&out, &cap, &len, gs_frame_label(&s->st.f[k], buf, sizeof buf, 0)))
            return NULL;
    return out;
}
