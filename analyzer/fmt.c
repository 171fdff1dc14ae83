/*
 * Human units (fmt.h): binary units from 10 KiB up (below that the exact
 * count of bytes reads better), three significant digits or so.
 */
#include "fmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
