/*
 * Where the file of a module the trace names is looked for (symfind.c): a
 * trace made in a container, a chroot or on another node names paths that
 * may not exist where it is analysed, or name other files there. The places
 * are tried in order, and the symbolizer takes the first whose build id is
 * the one recorded:
 *
 *   0  SYSROOT/PATH                    (--sysroot, as perf --symfs)
 *   1  PATH                            (without a sysroot, or with a build id
 *                                       to check it against)
 *   2  SYSROOT/usr/lib/debug/.build-id/xx/rest.debug
 *   3  /usr/lib/debug/.build-id/xx/rest.debug
 *   4  the executable from debuginfod  (DEBUGINFOD_URLS, elfutils' client)
 *
 * Places 2 to 4 need the build id. A separate debug file (.debug) holds the
 * symbol table and DWARF of a stripped binary: frames get their names from
 * it as from the binary.
 */
#ifndef GCSPY_SYMFIND_H
#define GCSPY_SYMFIND_H

#include <stddef.h>
#include <stdint.h>

struct gs_symfind {
    const char *sysroot;        /* NULL: none */
    void *dc;                   /* the debuginfod client, made at first use */
    void (*end)(void *);        /* libdebuginfod's debuginfod_end */
    int dc_tried;
};

/* gs_symfind_open's return past the last place. */
#define GS_FIND_END (-100)

/* Place i (0, 1, ...) for module (path, build id): a descriptor of a regular
 * file there with its path in where, or a negative gs_open_regular result
 * (nothing there), or GS_FIND_END. */
int gs_symfind_open(struct gs_symfind *f, const char *path, const uint8_t *bid, size_t bidlen,
                    unsigned i, char *where, size_t wlen);
void gs_symfind_free(struct gs_symfind *f);

/* libdw's search path for separate debug files (dwfl_standard_find_debuginfo):
 * next to the file, then /usr/lib/debug, then SYSROOT/usr/lib/debug. */
const char *gs_symfind_debuginfo_path(const struct gs_symfind *f, char *buf, size_t len);

#endif /* GCSPY_SYMFIND_H */
