/*
 * Offline symbolization with elfutils (libdwfl): an instruction address in a
 * module the trace recorded (path, build id, load bias) becomes one or more
 * frames, function, source file and line, the inlined calls first. The ELF
 * file is opened once per (path, build id) and reported at bias 0, so one
 * open serves every process that mapped it (ranks, forked workers) whatever
 * its load address; lookups are by module-relative address. The file is
 * looked for where symfind.h says (the path, a sysroot, the build-id
 * debug directories, debuginfod) and used only with the recorded build id.
 *
 * Results are cached per (module, relative address), so a frame shared by a
 * thousand stacks is resolved once. A module whose file is missing, or whose
 * build id differs from the one recorded (the binary was rebuilt since), is
 * not read: its frames stay module+offset, which is still right.
 *
 * Frame strings live in the symbolizer's arena: it must outlive the results
 * that point into it.
 */
#ifndef GCSPY_SYMBOLS_H
#define GCSPY_SYMBOLS_H

#include <stdint.h>

#include "arena.h"
#include "result.h"

struct gs_symbolizer;

/* enabled 0: frames are module+offset only (--no-symbols). NULL when out of memory. */
struct gs_symbolizer *gs_sym_new(int enabled);
void gs_sym_free(struct gs_symbolizer *s);

/* Frames for return address ip in module md (NULL: no module), innermost
 * (inlined) first: *out points at *n frames, valid until the next call.
 * Returns 0 or -1 (out of memory). */
int gs_sym_resolve(struct gs_symbolizer *s, const struct gs_module *md, uint64_t ip,
                   struct gs_frame **out, uint32_t *n);

/* Looks for module files under dir too (symfind.h: DIR/PATH, DIR's
 * build-id debug directory), as perf --symfs and gdb's sysroot do.
 * 0, or -1 out of memory. */
int gs_sym_sysroot(struct gs_symbolizer *s, const char *dir);

/* Interns a string in the symbolizer's arena (Python frame names). */
const char *gs_sym_intern(struct gs_symbolizer *s, const char *str);

/* Counters for the report: modules that could not be read, and why. */
struct gs_sym_stats {
    uint64_t lookups, cache_hits, modules_opened, modules_missing,
        modules_mismatched, unresolved;
};
void gs_sym_stats(const struct gs_symbolizer *s, struct gs_sym_stats *out);
/* Messages about unreadable modules ("path: build id differs"), one per
 * module, in a list the caller walks: returns the i-th or NULL. */
const char *gs_sym_problem(const struct gs_symbolizer *s, uint32_t i);
/* While quiet (on 1), a module that cannot be read is not listed among the
 * problems yet: its message waits on the module until a lookup made while
 * not quiet needs it. The HTML page's site names are looked up quietly, so
 * the problems the report lists are those of the frames the report prints,
 * whatever the page draws. */
void gs_sym_quiet(struct gs_symbolizer *s, int on);

#endif /* GCSPY_SYMBOLS_H */
