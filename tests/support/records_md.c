/*
 * records_md: the parts of docs/trace-format.md that records.def and
 * enums.def define, printed as markdown from the tables themselves, so the
 * document cannot drift from the code:
 *   records_md records   the record reference (hot and lengthed records:
 *                        type, name, fields in encoding order) and the list
 *                        of enumerations, with the fields that carry each
 *   records_md dump      the table of `gcspy dump` lines
 * `make docs-records` puts them between the document's markers;
 * tests/integration/docs_records.sh checks that they are there as printed.
 */
#include <stdio.h>
#include <string.h>

#include "gcspy/pp.h"
#include "gcspy/trace_format.h"

struct field {
    const char *enc, *member, *key, *print, *en, *check;
};

struct rec {
    const char *name;
    unsigned type;
    int hot;
    const char *dump;
    int minor;
    const char *doc;
    const struct field *f;
    size_t nf;
};

#define FIELD(x, enc, m, key, print, en, check) { #enc, #m, key, #print, #en, #check },
#define GS_RECORD(NAME, name, type, cls, x, dump, minor, doc, ...) \
    static const struct field f_##name[] = { GS_PP_EACH(FIELD, x, __VA_ARGS__) };
#include "gcspy/records.def"
#undef GS_RECORD

static const struct rec recs[] = {
#define GS_RECORD(NAME, name, type, cls, x, dump, minor, doc, ...)                 \
    { #NAME, type, type < GS_REC_LENGTHED, dump, minor, doc, f_##name,            \
      sizeof f_##name / sizeof f_##name[0] },
#include "gcspy/records.def"
#undef GS_RECORD
};

struct eval {
    const char *name, *doc;
    unsigned long long v;
};

#define GS_ENUM(e, prefix, doc) static const struct eval v_##e[] = {
#define GS_ENUM_VAL(prefix, NAME, value, name, doc) { name, doc, value },
#define GS_ENUM_END(e, prefix) };
#include "gcspy/enums.def"
#undef GS_ENUM
#undef GS_ENUM_VAL
#undef GS_ENUM_END

struct en {
    const char *name, *doc;
    const struct eval *v;
    size_t n;
};

static const struct en enums[] = {
#define GS_ENUM(e, prefix, doc) { #e, doc, v_##e, sizeof v_##e / sizeof v_##e[0] },
#define GS_ENUM_VAL(prefix, NAME, value, name, doc)
#define GS_ENUM_END(e, prefix)
#include "gcspy/enums.def"
#undef GS_ENUM
#undef GS_ENUM_VAL
#undef GS_ENUM_END
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int is(const char *a, const char *b)
{
    return strcmp(a, b) == 0;
}

/* One field as the format writes it: "u size", "s addr−a", ... */
static void put_field(const struct field *f)
{
    const char *m = f->member;
    if (is(f->enc, "U") || is(f->enc, "UT"))
        printf("u %s", m);
    else if (is(f->enc, "U1"))
        printf("(1.1) u %s", m);
    else if (is(f->enc, "U2"))
        printf("(1.2) u %s", m);
    else if (is(f->enc, "U3"))
        printf("(2.1) u %s", m);
    else if (is(f->enc, "S"))
        printf("s %s", m);
    else if (is(f->enc, "T"))
        printf("u t");
    else if (is(f->enc, "DT"))
        printf("u dt");
    else if (is(f->enc, "DA"))
        printf("s %s−a", m);
    else if (is(f->enc, "DI"))
        printf("s %s−(sid+1)", m);
    else if (is(f->enc, "DP"))
        printf("s id−%s", m);
    else if (is(f->enc, "TB"))
        printf("u t (absolute)");
    else if (is(f->enc, "STR"))
        printf("str %s", m);
    else if (is(f->enc, "BYTES"))
        printf("bytes %s", m);
    else if (is(f->enc, "SEGS"))
        printf("u n%s, then n%s × (u vaddr, u memsz, u flags)", m, m);
    else if (is(f->enc, "CLASSES"))
        printf("then for each class: u blocks, u bytes");
    else
        printf("? %s", m);
    if (is(f->print, "ENUM") || is(f->print, "ENUMNZ"))
        printf(" (%s)", f->en);
}

static void record_table(int hot)
{
    printf("| Type | Name | Fields | |\n|---:|---|---|---|\n");
    for (size_t i = 0; i < N(recs); i++) {
        const struct rec *r = &recs[i];
        if (r->hot != hot)
            continue;
        printf("| 0x%02X | %s%s | ", r->type, r->name, r->minor ? " (1.1)" : "");
        for (size_t k = 0; k < r->nf; k++) {
            if (k)
                printf(", ");
            put_field(&r->f[k]);
        }
        printf(" | %s |\n", r->doc);
    }
}

static void enum_list(void)
{
    for (size_t i = 0; i < N(enums); i++) {
        const struct en *e = &enums[i];
        printf("* **%s**, %s (", e->name, e->doc);
        int first = 1;
        for (size_t r = 0; r < N(recs); r++)
            for (size_t k = 0; k < recs[r].nf; k++)
                if (is(recs[r].f[k].en, e->name)) {
                    printf("%s%s %s", first ? "" : ", ", recs[r].name,
                           is(recs[r].f[k].enc, "CLASSES") ? "totals" : recs[r].f[k].member);
                    first = 0;
                }
        printf("):");
        for (size_t k = 0; k < e->n; k++) {
            printf("%s %llu `%s`", k ? "," : "", e->v[k].v, e->v[k].name);
            if (e->v[k].doc[0])
                printf(" (%s)", e->v[k].doc);
        }
        printf(".\n");
    }
}

/* A dump line: the record's time first, then each field by its print
 * column; what a field adds after the line (a Python frame's pycode=, ...)
 * is said after it. */
static void dump_table(void)
{
    printf("| Record | Line |\n|---|---|\n");
    for (size_t i = 0; i < N(recs); i++) {
        const struct rec *r = &recs[i];
        const char *after = "", *nz[4] = {0};
        int nnz = 0;
        printf("| %s | `%s", r->name, r->dump);
        for (size_t k = 0; k < r->nf; k++)
            if (is(r->f[k].enc, "T") || is(r->f[k].enc, "DT") || is(r->f[k].enc, "TB"))
                printf(" %s=", r->f[k].key);
        for (size_t k = 0; k < r->nf; k++) {
            const struct field *f = &r->f[k];
            if (is(f->enc, "T") || is(f->enc, "DT") || is(f->enc, "TB"))
                continue;
            if (is(f->print, "HEX") || is(f->print, "IP"))
                printf(" %s=0x", f->key);
            else if (is(f->print, "QSTR") || is(f->print, "ARGV"))
                printf(" %s=\"\"", f->key);
            else if (is(f->print, "SEGS"))
                printf(" %s=0xVADDR+0xMEMSZ:rwx,...", f->key);
            else if (is(f->print, "ENUMNZ") || is(f->print, "DECNZ"))
                nz[nnz < 4 ? nnz++ : 3] = f->key;
            else if (is(f->print, "CLASSES"))
                after = "CLASSES";
            else
                printf(" %s=", f->key);
            if (is(f->print, "IP"))
                after = "IP";
        }
        printf("`");
        if (is(after, "IP"))
            printf(", then ` pycode= line=` for a Python frame");
        else if (is(after, "CLASSES"))
            printf(", then ` CLASS_blocks= CLASS_bytes=` for each leak class");
        for (int k = 0; k < nnz; k++)
            printf(", then ` %s=` when it is not 0", nz[k]);
        printf(" |\n");
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && is(argv[1], "records")) {
        printf("#### Hot records\n\n");
        record_table(1);
        printf("\n#### Lengthed records\n\n");
        record_table(0);
        printf("\n#### Enumerations\n\n");
        enum_list();
        return 0;
    }
    if (argc == 2 && is(argv[1], "dump")) {
        dump_table();
        return 0;
    }
    fprintf(stderr, "usage: records_md records|dump\n");
    return 2;
}
