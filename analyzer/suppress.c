/*
 * Suppressions (suppress.h). The matcher follows LLVM's
 * sanitizer_common TemplateMatch so a pattern means here what it means to
 * LeakSanitizer: pieces between '*' are found left to right with strstr;
 * '^' pins the first piece to the start, '$' the last to the end.
 */
#include "suppress.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcspy/trace_format.h"
#include "grow.h"
#include "model.h"
#include "regfile.h"
#include "utf8.h"

int gs_supp_add(struct gs_supps *s, const char *pattern, const char *file, uint32_t line)
{
    if (GS_GROW(s->v, s->cap, s->n + 1))
        return -1;
    struct gs_supp *e = &s->v[s->n];
    memset(e, 0, sizeof *e);
    e->pattern = strdup(pattern);
    if (!e->pattern)
        return -1;
    e->file = file;
    e->line = line;
    s->n++;
    return 0;
}

/* Built-in suppressions, as valgrind ships default.supp: blocks that are
 * unreachable by design in common runtimes, not bugs of the program. Each
 * one says why. `--no-default-suppressions` turns them off. */
static const char *const defaults[] = {
    /* PyTorch's DataLoader (torch.multiprocessing.reductions) keeps a
     * shared_cache of StorageWeakRef: a weak pointer to each received
     * StorageImpl, stored as a Python int (split into 30-bit digits, so no
     * word holds it). The StorageImpl stays allocated until the cache is
     * trimmed: unreachable to any conservative scanner, and memcheck. */
    "rebuild_storage_fd",
    "rebuild_storage_filename",
    /* The same cache on the sending side: a DataLoader worker's batches are
     * made by default_collate (shared storages, or tensors moved to shared
     * memory when they are pickled), and reduce_storage keeps a
     * StorageWeakRef to each sent storage in the worker's shared_cache. */
    "torch/utils/data/_utils/collate.py",
    /* Blocks a forked child inherited and no longer reaches: the parent's
     * threads are gone from the child (their stacks are no roots), and
     * CPython re-creates its runtime locks after fork, dropping the old
     * ones. The child never allocated them: not its leak. Its own
     * allocations are judged as everywhere. */
    GS_SUPP_INHERITED,
};

int gs_supp_add_defaults(struct gs_supps *s)
{
    for (uint32_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (gs_supp_add(s, defaults[i], "<built-in>", i + 1))
            return -1;
    return 0;
}

void gs_supp_free(struct gs_supps *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].pattern);
    free(s->v);
    memset(s, 0, sizeof *s);
}

int gs_supp_load(struct gs_supps *s, const char *path, char *err, size_t errlen)
{
    /* a regular file only: a FIFO would block the command (regfile.h) */
    int fd = gs_open_regular(path);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: cannot read suppressions: %s", path,
                 fd >= 0 ? strerror(errno) : gs_open_why(fd));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* a bad line is echoed cleaned (utf8.h): the file may hold any bytes */
    char shown[120];
    char buf[4096];
    uint32_t lineno = 0;
    int rc = 0;
    while (fgets(buf, sizeof buf, f)) {
        lineno++;
        size_t len = strlen(buf);
        if (len == sizeof buf - 1 && buf[len - 1] != '\n') {
            snprintf(err, errlen, "%s:%u: line too long", path, lineno);
            rc = -1;
            break;
        }
        char *p = buf;
        while (isspace((unsigned char)*p))
            p++;
        char *e = p + strlen(p);
        while (e > p && isspace((unsigned char)e[-1]))
            *--e = 0;
        if (!*p || *p == '#')
            continue;
        char *colon = strchr(p, ':');
        if (!colon) {
            snprintf(err, errlen, "%s:%u: expected 'leak:PATTERN', got '%s'", path, lineno,
                     gs_utf8_clean(shown, sizeof shown, p));
            rc = -1;
            break;
        }
        *colon = 0;
        if (strcmp(p, "leak") != 0) {
            snprintf(err, errlen, "%s:%u: unsupported suppression type '%s' (only 'leak' is)",
                     path, lineno, gs_utf8_clean(shown, sizeof shown, p));
            rc = -1;
            break;
        }
        char *pat = colon + 1;
        while (isspace((unsigned char)*pat))
            pat++;
        if (!*pat) {
            snprintf(err, errlen, "%s:%u: empty pattern", path, lineno);
            rc = -1;
            break;
        }
        if (gs_supp_add(s, pat, path, lineno)) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    return rc;
}

/* Finds needle (n bytes) in hay, NULL when absent. */
static const char *find(const char *hay, const char *needle, size_t n)
{
    if (!n)
        return hay;
    for (; *hay; hay++) {
        if (*hay == *needle && strncmp(hay, needle, n) == 0)
            return hay;
    }
    return NULL;
}

int gs_supp_template_match(const char *templ, const char *str)
{
    if (!str || !*str)
        return 0;
    int start = 0, asterisk = 0;
    if (*templ == '^') {
        start = 1;
        templ++;
    }
    while (*templ) {
        if (*templ == '*') {
            templ++;
            start = 0;
            asterisk = 1;
            continue;
        }
        if (*templ == '$')
            return !*str || asterisk;
        if (!*str)
            return 0;
        size_t n = strcspn(templ, "*$");
        const char *str0 = str;
        const char *spos = find(str, templ, n);
        if (!spos)
            return 0;
        if (start && spos != str0)
            return 0;
        str = spos + n;
        templ += n;
        start = 0;
        asterisk = 0;
    }
    return 1;
}

struct gs_supp *gs_supp_match(const struct gs_supps *s, const struct gs_stackv *st)
{
    for (uint32_t i = 0; i < st->n; i++) {
        const struct gs_frame *f = &st->f[i];
        for (size_t k = 0; k < s->n; k++) {
            const char *p = s->v[k].pattern;
            if (gs_supp_template_match(p, f->module) || gs_supp_template_match(p, f->function) ||
                gs_supp_template_match(p, f->file))
                return &s->v[k];
        }
    }
    return NULL;
}

/* The built-in rule for a forked child's inherited blocks, if loaded. */
static struct gs_supp *inherited_rule(const struct gs_supps *s, const struct gs_result *r,
                                      const struct gs_leak *l)
{
    if (!l->inherited || !(r->flags & GS_PROC_F_FORKED) || l->cls == GS_RC_NOT_FREED)
        return NULL;
    for (size_t k = 0; k < s->n; k++)
        if (!strcmp(s->v[k].pattern, GS_SUPP_INHERITED))
            return &s->v[k];
    return NULL;
}

void gs_supp_apply(const struct gs_supps *s, struct gs_result *r, uint32_t count_mask)
{
    memset(r->suppressed, 0, sizeof r->suppressed);
    for (uint32_t i = 0; i < r->nleaks; i++) {
        struct gs_leak *l = &r->leaks[i];
        l->suppressed = NULL;
        if (!s || !s->n)
            continue;
        struct gs_supp *m = inherited_rule(s, r, l);
        if (!m && !l->st.resolved)
            continue;
        if (!m)
            m = gs_supp_match(s, &l->st);
        if (!m)
            continue;
        l->suppressed = m->pattern;
        if (count_mask & (1u << l->cls)) {
            m->leaks++;
            m->blocks += l->blocks;
            m->bytes += l->bytes;
        }
        r->suppressed[l->cls].bytes += l->bytes;
        r->suppressed[l->cls].blocks += l->blocks;
    }
    for (uint32_t i = 0; i < r->nsuspects; i++) {
        struct gs_suspect *g = &r->suspects[i];
        g->suppressed = NULL;
        if (!s || !s->n)
            continue;
        struct gs_supp *m = gs_supp_match(s, &g->st);
        if (m) {
            g->suppressed = m->pattern;
            m->suspects++;
        }
    }
}
