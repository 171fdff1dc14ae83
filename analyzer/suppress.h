/*
 * Leak suppressions in LeakSanitizer's format, so existing files work:
 *
 *   # comment
 *   leak:PATTERN
 *
 * A leak (or growth suspect) is suppressed when PATTERN matches the function
 * name, the source file or the module path of any frame of its stack.
 * PATTERN matches as LSan's TemplateMatch does: a substring match, where '*'
 * matches any run of characters, a leading '^' anchors at the start and a
 * trailing '$' at the end. Suppression types other than "leak" are an error,
 * as they are for LSan.
 */
#ifndef GCSPY_SUPPRESS_H
#define GCSPY_SUPPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"

/* The built-in suppression of blocks a forked child inherited and no
 * longer reaches (suppress.c says why); a pattern no stack frame can
 * match, so it is applied by the block's origin instead. */
#define GS_SUPP_INHERITED "<inherited by a forked child>"

struct gs_supp {
    char *pattern;
    const char *file;   /* where it was read */
    uint32_t line;
    uint64_t leaks, blocks, bytes, suspects;   /* what it matched */
};

struct gs_supps {
    struct gs_supp *v;
    size_t n, cap;
};

/* Appends the suppressions of one file; -1 with a one-line message naming
 * the file and line when it cannot be read or parsed. */
int gs_supp_load(struct gs_supps *s, const char *path, char *err, size_t errlen);
/* Adds one pattern (command line); -1 when out of memory. */
int gs_supp_add(struct gs_supps *s, const char *pattern, const char *file, uint32_t line);
/* The built-in list (suppress.c says why each is there). */
int gs_supp_add_defaults(struct gs_supps *s);
void gs_supp_free(struct gs_supps *s);

int gs_supp_template_match(const char *templ, const char *str);
/* The first suppression matching any frame of st, or NULL. */
struct gs_supp *gs_supp_match(const struct gs_supps *s, const struct gs_stackv *st);
/* Marks every leak group and growth suspect of r that a suppression
 * matches (their `suppressed` field), and fills r->suppressed. The use
 * counts of the suppressions (what LSan prints as "Suppressions used")
 * count the groups of the classes in count_mask (1 << class) only. */
void gs_supp_apply(const struct gs_supps *s, struct gs_result *r, uint32_t count_mask);

#endif /* GCSPY_SUPPRESS_H */
