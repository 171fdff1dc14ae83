/*
 * The places a module's file is looked for (symfind.h), one at a time: the
 * symbolizer opens each, checks its build id and goes on to the next when it
 * is not the one recorded, so a host file that merely shares the path of
 * the traced one (another libc) is never used for its frames.
 *
 * debuginfod is asked only with a build id and only when DEBUGINFOD_URLS is
 * set (the client does nothing without it); its client is made once and
 * keeps its own cache (DEBUGINFOD_CACHE_PATH), so a second report of the
 * same job reads the files locally. libdebuginfod is loaded then, with
 * dlopen, as libdw does: linked, it would map libcurl and a dozen of its
 * libraries into every report, which must run in a small address space
 * (rel_badinput.sh's 24 MiB).
 */
#include "symfind.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regfile.h"

/* SYSROOT/usr/lib/debug/.build-id/xx/rest.debug, or "" without a build id. */
static void build_id_path(const char *root, const uint8_t *bid, size_t n, char *buf, size_t len)
{
    buf[0] = 0;
    if (n < 2)
        return;
    int k = snprintf(buf, len, "%s/usr/lib/debug/.build-id/%02x/", root, bid[0]);
    for (size_t i = 1; i < n && k > 0 && (size_t)k + 3 < len; i++)
        k += snprintf(buf + k, len - (size_t)k, "%02x", bid[i]);
    if (k > 0 && (size_t)k + 7 < len)
        memcpy(buf + k, ".debug", 7);
    else
        buf[0] = 0;
}

static int from_debuginfod(struct gs_symfind *f, const uint8_t *bid, size_t n, char *where,
                           size_t wlen)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (!n || !urls || !*urls)
        return -1;
    static debuginfod_client *(*begin)(void);
    static int (*find)(debuginfod_client *, const unsigned char *, int, char **);
    if (!f->dc_tried) {
        f->dc_tried = 1;
        void *h = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (h) {
            *(void **)&begin = dlsym(h, "debuginfod_begin");
            *(void **)&find = dlsym(h, "debuginfod_find_executable");
            *(void **)&f->end = dlsym(h, "debuginfod_end");
        }
        if (begin && find && f->end)
            f->dc = begin();
    }
    if (!f->dc)
        return -1;
    char *path = NULL;
    int fd = find(f->dc, bid, (int)n, &path);
    if (fd < 0)
        return -1;
    snprintf(where, wlen, "%s", path ? path : "debuginfod");
    free(path);
    return fd;
}

int gs_symfind_open(struct gs_symfind *f, const char *path, const uint8_t *bid, size_t bidlen,
                    unsigned i, char *where, size_t wlen)
{
    where[0] = 0;
    switch (i) {
    case 0:
        if (f->sysroot && path[0] == '/')
            snprintf(where, wlen, "%s%s", f->sysroot, path);
        break;
    case 1:
        if (!f->sysroot || bidlen)
            snprintf(where, wlen, "%s", path);
        break;
    case 2:
        if (f->sysroot)
            build_id_path(f->sysroot, bid, bidlen, where, wlen);
        break;
    case 3:
        build_id_path("", bid, bidlen, where, wlen);
        break;
    case 4:
        return from_debuginfod(f, bid, bidlen, where, wlen);
    default:
        return GS_FIND_END;
    }
    return where[0] ? gs_open_regular(where) : -1;
}

void gs_symfind_free(struct gs_symfind *f)
{
    if (f->dc)
        f->end(f->dc);
    f->dc = NULL;
}

const char *gs_symfind_debuginfo_path(const struct gs_symfind *f, char *buf, size_t len)
{
    if (f->sysroot)
        snprintf(buf, len, ":.debug:/usr/lib/debug:%s/usr/lib/debug", f->sysroot);
    else
        snprintf(buf, len, ":.debug:/usr/lib/debug");
    return buf;
}
