/*
 * Unwind rules from .eh_frame, for the default stack walk (stack.c).
 *
 * A walk that only follows saved frame pointers goes wrong in two ways:
 * where a caller was built without frame pointers (Debian's libstdc++, libc,
 * python, bash), the caller's frame is skipped, and what the next "frame
 * pointer" holds is whatever that code kept in rbp (ASCII from the
 * environment, stack addresses, canaries), which the walk then follows.
 * So each return address gets a rule, computed once from the unwind tables
 * the compiler leaves in every module (.eh_frame, found through the
 * .eh_frame_hdr binary search table of the module's PT_GNU_EH_FRAME):
 * where the caller's CFA is (sp + N: no frame pointer there; fp + N: a
 * frame-pointer frame), and where its frame pointer was saved. A return
 * address that does not lie in an executable PT_LOAD segment of a loaded
 * module gets rule NONE, and the walk ends before it. An address in
 * executable code without unwind information (hand-written assembly, JIT
 * code) gets the frame-pointer convention (CFA = fp + 16, fp at CFA - 16),
 * as does a CFA rule this interpreter does not evaluate (DWARF expressions:
 * main's stack realignment); the outermost frames (rip undefined: _start,
 * clone) and signal trampolines get LAST.
 *
 * Rules are cached per thread (struct gs_thread's unw, direct-mapped by the
 * return address), so the walk's common case is one probe per frame and the
 * tables are read once per return address per thread. A fill looks the
 * address up with dl_iterate_phdr and reads the tables inside its callback:
 * the loader's lock is held there, so no dlclose can unmap them meanwhile
 * (the same way libunwind and the C++ runtime find FDEs); the module comes
 * from a sorted table of every module's executable segments (xr), built in
 * one pass and searched while the loader's counters say nothing changed. Nothing here
 * allocates, takes a gcspy lock, or reads memory outside the module it
 * found (.eh_frame lies in a PT_LOAD segment). The loader's adds/subs
 * counters, seen here and by modules.c's sync, bump gs_unw_map_gen: an
 * unload empties every thread's cache at its next walk, a load makes the
 * NONE rules read before it stale (unwind.h): a rule (or a NONE) never
 * outlives the module map it was read under by more than one sync.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>

#include "mem.h"
#include "unwind.h"

atomic_ullong gs_unw_map_gen = 1;
atomic_ullong gs_unw_unmap_gen;

/* Called under the loader's lock (inside dl_iterate_phdr), which orders the
 * callers: the counters only grow. */
void gs_unw_map_seen(uint64_t adds, uint64_t subs)
{
    uint64_t g = 1 + adds + subs;
    if (atomic_load_explicit(&gs_unw_map_gen, memory_order_relaxed) == g)
        return;
    atomic_store_explicit(&gs_unw_unmap_gen, subs, memory_order_relaxed);
    atomic_store_explicit(&gs_unw_map_gen, g, memory_order_release);
}

/* A dl_iterate_phdr callback's first call: the loader's counters, when this
 * glibc passes them (0 otherwise). */
static int counters_seen(const struct dl_phdr_info *info, size_t size)
{
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        return 0;
    gs_unw_map_seen(info->dlpi_adds, info->dlpi_subs);
    return 1;
}

/* x86-64's DWARF register numbers. */
enum { REG_RBP = 6, REG_RSP = 7 };

/* ---- reading DWARF's encodings ---- */

static uint64_t uleb(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    for (unsigned shift = 0; *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    return v;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    while (*p < end) {
        b = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            break;
    }
    if (shift < 64 && (b & 0x40))
        v |= ~0ull << shift;
    return (int64_t)v;
}

/* A pointer in DW_EH_PE encoding enc (pc-relative and data-relative bases;
 * the indirect bit is left to the caller). 0, or -1 on an encoding not
 * used by .eh_frame or data past end. */
static int read_enc(const uint8_t **p, const uint8_t *end, uint8_t enc, uintptr_t datarel,
                    uintptr_t *out)
{
    const uint8_t *start = *p;
    uint64_t v;
    size_t len;
    switch (enc & 0x0f) {
    case 0x00: len = 8; break;
    case 0x02: case 0x0a: len = 2; break;
    case 0x03: case 0x0b: len = 4; break;
    case 0x04: case 0x0c: len = 8; break;
    case 0x01: v = uleb(p, end); goto rel;
    case 0x09: v = (uint64_t)sleb(p, end); goto rel;
    default: return -1;
    }
    if ((size_t)(end - start) < len)
        return -1;
    switch (enc & 0x0f) {
    case 0x02: v = *(const uint16_t *)start; break;
    case 0x0a: v = (uint64_t)(int64_t) * (const int16_t *)start; break;
    case 0x03: v = *(const uint32_t *)start; break;
    case 0x0b: v = (uint64_t)(int64_t) * (const int32_t *)start; break;
    default: v = *(const uint64_t *)start; break;
    }
    *p = start + len;
rel:
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += (uintptr_t)start; break;
    case 0x30: v += datarel; break;
    default: return -1;
    }
    *out = (uintptr_t)v;
    return 0;
}

/* ---- the CFA program ---- */

/* The rules a row gives for what the walk needs: the CFA, rbp, the return
 * address. how: 0 unchanged (same value, undefined, not said), 1 saved at
 * CFA + off, 2 undefined (the return address: outermost frame), 3 beyond
 * this interpreter. */
struct row {
    int64_t cfa_off, fp_off, ra_off;
    uint32_t cfa_reg;
    uint8_t cfa_expr, fp_how, ra_how;
};

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc, signal;
    const uint8_t *insns, *end;
};

static void set_rule(struct row *r, uint64_t reg, const struct cie *c, uint8_t how, int64_t off)
{
    if (reg == REG_RBP) {
        r->fp_how = how == 1 ? 1 : 0; /* rbp lost: later fp-based rules are checked */
        r->fp_off = off;
    } else if (reg == c->ra_reg) {
        r->ra_how = how;
        r->ra_off = off;
    }
}

/* DW_CFA_restore: reg's rule as the CIE left it (init; NULL while the
 * CIE's own instructions run). */
static void restore_rule(struct row *r, uint64_t reg, const struct cie *c, const struct row *init)
{
    if (init && reg == REG_RBP) {
        r->fp_how = init->fp_how;
        r->fp_off = init->fp_off;
    } else if (init && reg == c->ra_reg) {
        r->ra_how = init->ra_how;
        r->ra_off = init->ra_off;
    }
}

#define GS_CFA_STATES 8
#define GS_CFA_MAX_OPS 4096

/* Runs CFA instructions [p, end) from location loc while the location does
 * not pass pc; init is the CIE's row (for DW_CFA_restore). 0, or -1 on an
 * instruction it does not know or a malformed program. */
static int run_cfa(const uint8_t *p, const uint8_t *end, uintptr_t loc, uintptr_t pc,
                   const struct cie *c, struct row *r, const struct row *init)
{
    struct row saved[GS_CFA_STATES];
    int depth = 0;
    for (int ops = 0; p < end && ops < GS_CFA_MAX_OPS; ops++) {
        uint8_t op = *p++;
        uint64_t reg, a;
        uintptr_t to;
        switch (op & 0xc0) {
        case 0x40:
            loc += (op & 0x3f) * c->code_align;
            if (loc > pc)
                return 0;
            continue;
        case 0x80:
            set_rule(r, op & 0x3f, c, 1, (int64_t)uleb(&p, end) * c->data_align);
            continue;
        case 0xc0:
            restore_rule(r, op & 0x3f, c, init);
            continue;
        }
        switch (op) {
        case 0x00: /* nop */
            break;
        case 0x01: /* set_loc */
            if (read_enc(&p, end, c->fde_enc, 0, &to))
                return -1;
            loc = to;
            if (loc > pc)
                return 0;
            break;
        case 0x02: case 0x03: case 0x04: { /* advance_loc1/2/4 */
            size_t len = op == 0x02 ? 1 : op == 0x03 ? 2 : 4;
            if ((size_t)(end - p) < len)
                return -1;
            a = len == 1 ? *p : len == 2 ? *(const uint16_t *)p : *(const uint32_t *)p;
            p += len;
            loc += a * c->code_align;
            if (loc > pc)
                return 0;
            break;
        }
        case 0x05: /* offset_extended */
            reg = uleb(&p, end);
            set_rule(r, reg, c, 1, (int64_t)uleb(&p, end) * c->data_align);
            break;
        case 0x11: /* offset_extended_sf */
            reg = uleb(&p, end);
            set_rule(r, reg, c, 1, sleb(&p, end) * c->data_align);
            break;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = uleb(&p, end);
            set_rule(r, reg, c, 1, -(int64_t)uleb(&p, end) * c->data_align);
            break;
        case 0x06: /* restore_extended */
            restore_rule(r, uleb(&p, end), c, init);
            break;
        case 0x07: /* undefined */
            set_rule(r, uleb(&p, end), c, 2, 0);
            break;
        case 0x08: /* same_value */
            set_rule(r, uleb(&p, end), c, 0, 0);
            break;
        case 0x09: /* register */
            reg = uleb(&p, end);
            uleb(&p, end);
            set_rule(r, reg, c, 3, 0);
            break;
        case 0x0a: /* remember_state */
            if (depth == GS_CFA_STATES)
                return -1;
            saved[depth++] = *r;
            break;
        case 0x0b: /* restore_state */
            if (!depth)
                return -1;
            *r = saved[--depth];
            break;
        case 0x0c: /* def_cfa */
            r->cfa_reg = (uint32_t)uleb(&p, end);
            r->cfa_off = (int64_t)uleb(&p, end);
            r->cfa_expr = 0;
            break;
        case 0x12: /* def_cfa_sf */
            r->cfa_reg = (uint32_t)uleb(&p, end);
            r->cfa_off = sleb(&p, end) * c->data_align;
            r->cfa_expr = 0;
            break;
        case 0x0d: /* def_cfa_register */
            r->cfa_reg = (uint32_t)uleb(&p, end);
            r->cfa_expr = 0;
            break;
        case 0x0e: /* def_cfa_offset */
            r->cfa_off = (int64_t)uleb(&p, end);
            break;
        case 0x13: /* def_cfa_offset_sf */
            r->cfa_off = sleb(&p, end) * c->data_align;
            break;
        case 0x0f: /* def_cfa_expression */
            a = uleb(&p, end);
            if (a > (uint64_t)(end - p))
                return -1;
            p += a;
            r->cfa_expr = 1;
            break;
        case 0x10: case 0x16: /* expression, val_expression */
            reg = uleb(&p, end);
            a = uleb(&p, end);
            if (a > (uint64_t)(end - p))
                return -1;
            p += a;
            set_rule(r, reg, c, 3, 0);
            break;
        case 0x14: /* val_offset */
            reg = uleb(&p, end);
            uleb(&p, end);
            set_rule(r, reg, c, 3, 0);
            break;
        case 0x15: /* val_offset_sf */
            reg = uleb(&p, end);
            sleb(&p, end);
            set_rule(r, reg, c, 3, 0);
            break;
        case 0x2e: /* GNU_args_size */
            uleb(&p, end);
            break;
        default:
            return -1;
        }
    }
    return 0;
}

/* ---- CIE and FDE ---- */

static int parse_cie(const uint8_t *cie, const uint8_t *seg_end, struct cie *c)
{
    if (seg_end - cie < 8)
        return -1;
    uint32_t len = *(const uint32_t *)cie;
    if (len == 0xffffffffu || len < 4 || len > (size_t)(seg_end - cie - 4) ||
        *(const uint32_t *)(cie + 4) != 0)
        return -1;
    const uint8_t *p = cie + 8, *end = cie + 4 + len;
    uint8_t version = *p++;
    const char *aug = (const char *)p;
    while (p < end && *p)
        p++;
    if (p >= end || (version != 1 && version != 3))
        return -1;
    p++;
    if (aug[0] && aug[0] != 'z')
        return -1; /* "eh" and other old forms: not in today's toolchains */
    c->code_align = uleb(&p, end);
    c->data_align = sleb(&p, end);
    c->ra_reg = version == 1 ? (p < end ? *p++ : 0) : uleb(&p, end);
    c->fde_enc = 0;
    c->signal = 0;
    const uint8_t *aug_end = p;
    if (aug[0] == 'z') {
        uint64_t alen = uleb(&p, end);
        if (alen > (uint64_t)(end - p))
            return -1;
        aug_end = p + alen;
        for (const char *a = aug + 1; *a; a++) {
            uintptr_t skip;
            if (*a == 'R') {
                c->fde_enc = p < aug_end ? *p++ : 0;
            } else if (*a == 'P') {
                uint8_t enc = p < aug_end ? *p++ : 0xff;
                if (read_enc(&p, aug_end, enc & 0x7f, 0, &skip))
                    return -1;
            } else if (*a == 'L') {
                p++;
            } else if (*a == 'S') {
                c->signal = 1;
            } else {
                break; /* unknown letters: the length says where data ends */
            }
        }
    }
    c->insns = aug_end;
    c->end = end;
    return c->insns <= end ? 0 : -1;
}

/* The row of pc in the FDE at fde (which the search table says covers it).
 * 1: found, 0: pc outside the FDE, -1: unreadable. */
static int fde_row(const uint8_t *fde, const uint8_t *seg_lo, const uint8_t *seg_end,
                   uintptr_t pc, struct row *r, uint8_t *signal)
{
    if (fde < seg_lo || seg_end - fde < 8)
        return -1;
    uint32_t len = *(const uint32_t *)fde;
    if (len == 0xffffffffu || len < 8 || len > (size_t)(seg_end - fde - 4))
        return -1;
    uint32_t cie_ptr = *(const uint32_t *)(fde + 4);
    const uint8_t *cie = fde + 4 - cie_ptr;
    if (!cie_ptr || cie < seg_lo || cie >= fde)
        return -1;
    struct cie c;
    if (parse_cie(cie, seg_end, &c))
        return -1;
    const uint8_t *p = fde + 8, *end = fde + 4 + len;
    uintptr_t begin, range;
    if (read_enc(&p, end, c.fde_enc, 0, &begin) ||
        read_enc(&p, end, c.fde_enc & 0x0f, 0, &range))
        return -1;
    if (pc < begin || pc - begin >= range)
        return 0;
    if (cie[8 + 1] == 'z') { /* the FDE's augmentation data (LSDA) */
        uint64_t alen = uleb(&p, end);
        if (alen > (uint64_t)(end - p))
            return -1;
        p += alen;
    }
    *r = (struct row){0};
    if (run_cfa(c.insns, c.end, begin, pc, &c, r, NULL))
        return -1;
    struct row init = *r;
    if (run_cfa(p, end, begin, pc, &c, r, &init))
        return -1;
    *signal = c.signal;
    return 1;
}

/* ---- the lookup ---- */

struct find {
    uintptr_t pc;
    struct gs_unw_rule *r;
    int first, rebuild;
    uint64_t gen, subs; /* the map generation and the unloads the lookup saw */
};

/* The frame-pointer convention: code without (usable) unwind information. */
static void fp_rule(struct gs_unw_rule *r)
{
    r->kind = GS_UNW_FP;
    r->cfa_off = 16;
    r->fp_off = -16;
    r->std = 1;
}

/* The rule of pc in a module whose PT_GNU_EH_FRAME header is hdr. */
static void rule_of(const struct dl_phdr_info *info, const ElfW(Phdr) *hdr, uintptr_t pc,
                    struct gs_unw_rule *out)
{
    fp_rule(out);
    if (!hdr)
        return;
    /* .eh_frame_hdr and .eh_frame share a read-only PT_LOAD segment: every
     * read stays inside the one that holds the header. */
    const uint8_t *seg_lo = NULL, *seg_end = NULL;
    uintptr_t h_addr = info->dlpi_addr + hdr->p_vaddr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && h_addr >= lo && h_addr - lo < ph->p_filesz) {
            seg_lo = (const uint8_t *)lo;
            seg_end = seg_lo + ph->p_filesz;
        }
    }
    const uint8_t *h = (const uint8_t *)h_addr, *p = h + 4;
    if (!seg_lo || seg_end - h < 12 || h[0] != 1 || h[3] != 0x3b)
        return; /* the table's entries: datarel sdata4 pairs, as ld writes them */
    uintptr_t eh_frame, count;
    if (read_enc(&p, seg_end, h[1], (uintptr_t)h, &eh_frame) ||
        read_enc(&p, seg_end, h[2], (uintptr_t)h, &count))
        return;
    const int32_t *tab = (const int32_t *)p;
    if (count == 0 || count > (uintptr_t)(seg_end - p) / 8)
        return;
    uintptr_t lo = 0, hi = count; /* the last entry whose start is <= pc */
    while (hi - lo > 1) {
        uintptr_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)h + (intptr_t)tab[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if ((uintptr_t)h + (intptr_t)tab[2 * lo] > pc)
        return;
    struct row r;
    uint8_t signal = 0;
    if (fde_row(h + tab[2 * lo + 1], seg_lo, seg_end, pc, &r, &signal) != 1)
        return;
    if (signal || r.ra_how == 2) {
        out->kind = GS_UNW_LAST;
        out->std = 0;
        return;
    }
    if (r.cfa_expr || r.ra_how == 3 || (r.ra_how == 1 && r.ra_off != -8))
        return;
    if (r.fp_how == 1 && (r.fp_off >= 0 || r.fp_off < -32768))
        return;
    if (r.cfa_off < 8 || r.cfa_off > (1ll << 30))
        return;
    if (r.cfa_reg == REG_RSP)
        out->kind = GS_UNW_SP;
    else if (r.cfa_reg != REG_RBP)
        return;
    out->cfa_off = (int32_t)r.cfa_off;
    out->fp_off = (int16_t)(r.fp_how == 1 ? r.fp_off : 0);
    out->std = out->kind == GS_UNW_FP && out->cfa_off == 16 && out->fp_off == -16;
}

/* The executable segments of every loaded module, sorted by address, as
 * the loader's adds/subs counters were at xr_gen: a lookup while they still
 * are is a binary search, not a pass over every module. Only touched inside
 * dl_iterate_phdr's callback, whose lock serialises all of them (and makes
 * an unmap impossible meanwhile); rebuilt during the first pass that sees
 * other counters. */
struct xrange {
    uintptr_t lo, hi, addr;
    const ElfW(Phdr) *phdr;
    ElfW(Half) phnum;
};
#define GS_MAX_XR 4096
static struct xrange *xr;
static int nxr;
static uint64_t xr_gen;

static void xr_add(const struct dl_phdr_info *info, const ElfW(Phdr) *ph)
{
    if (nxr == GS_MAX_XR) {
        xr_gen = 0; /* incomplete: never searched */
        return;
    }
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    int i = nxr++;
    for (; i > 0 && xr[i - 1].lo > lo; i--)
        xr[i] = xr[i - 1];
    xr[i] = (struct xrange){lo, lo + ph->p_memsz, info->dlpi_addr, info->dlpi_phdr,
                            info->dlpi_phnum};
}

static const ElfW(Phdr) *eh_hdr(const ElfW(Phdr) *phdr, int phnum)
{
    for (int i = 0; i < phnum; i++)
        if (phdr[i].p_type == PT_GNU_EH_FRAME)
            return &phdr[i];
    return NULL;
}

/* 1: pc's rule is in *f->r (the table answered, found or not); 0: ask the
 * modules one by one. */
static int xr_lookup(struct find *f)
{
    int lo = 0, hi = nxr;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (xr[mid].hi <= f->pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < nxr && xr[lo].lo <= f->pc) {
        struct dl_phdr_info m = {0};
        m.dlpi_addr = xr[lo].addr;
        m.dlpi_phdr = xr[lo].phdr;
        m.dlpi_phnum = xr[lo].phnum;
        rule_of(&m, eh_hdr(m.dlpi_phdr, m.dlpi_phnum), f->pc, f->r);
    }
    return 1;
}

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find *f = arg;
    if (f->first) {
        f->first = 0;
        if (counters_seen(info, size)) {
            uint64_t g = 1 + info->dlpi_adds + info->dlpi_subs;
            f->gen = g;
            f->subs = info->dlpi_subs;
            if (xr && xr_gen == g)
                return xr_lookup(f);
            if (!xr)
                xr = gs_pages_alloc(GS_MAX_XR * sizeof *xr);
            if (xr) {
                nxr = 0;
                xr_gen = g;
                f->rebuild = 1;
            }
        }
    }
    const ElfW(Phdr) *hdr = NULL;
    int in = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            if (f->rebuild)
                xr_add(info, ph);
            if (f->pc >= lo && f->pc - lo < ph->p_memsz)
                in = 1;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            hdr = ph;
        }
    }
    if (in)
        rule_of(info, hdr, f->pc, f->r);
    return in && !f->rebuild; /* a rebuild sees every module */
}

static int resync_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)arg;
    counters_seen(info, size);
    return 1;
}

void gs_unw_resync(void)
{
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1; /* the loader may allocate under dl_iterate_phdr */
    dl_iterate_phdr(resync_cb, NULL);
    gs_restore(saved);
}

/* ---- the shared cache ----
 * Every thread reads its rules from the same modules, and one training
 * step's walks pass through more return addresses than a thread's cache
 * holds (train.py on torch 1.13: some 1,200 lookups a step with 4096
 * entries, each a dl_iterate_phdr and an .eh_frame search). Behind the
 * per-thread caches sits one table for all threads: open addressing, insert
 * only, no lock. A slot's key (ip, with the loader's unload count in the
 * bits above a user address) is claimed once by compare-and-swap and never
 * changes; the claimer then stores the packed rule with release, and a
 * reader takes the rule only when it is there (a kind, never NONE: NONE
 * rules are not shared), so a slot is either empty, claimed, or final.
 * After an unload every key names another count: the old entries are
 * never matched again (the table is not emptied under readers; they stay
 * as dead weight, and a full neighbourhood only means a lookup). The table
 * (4 MiB of address space, its pages touched as slots are) is mapped at
 * the first insert. */
#define GS_SHARED_BITS 18
#define GS_SHARED_PROBES 16
struct shared_rule {
    atomic_ullong key; /* 0: empty */
    atomic_ullong rule;
};
static struct shared_rule *_Atomic shared;

/* 0 for an address the key cannot hold (above 2^47: 5-level paging). */
static inline uint64_t shared_key(uintptr_t ip, uint64_t subs)
{
    return ip >> 47 ? 0 : (uint64_t)ip | (subs & 0x1ffff) << 47;
}

static inline uint64_t shared_slot(uint64_t key)
{
    return (key * 0x9E3779B97F4A7C15ull) >> (64 - GS_SHARED_BITS);
}

static int shared_get(uintptr_t ip, uint64_t subs, struct gs_unw_rule *r)
{
    struct shared_rule *t = atomic_load_explicit(&shared, memory_order_acquire);
    uint64_t key = shared_key(ip, subs);
    if (!t || !key)
        return 0;
    uint64_t j = shared_slot(key), mask = (1u << GS_SHARED_BITS) - 1;
    for (int n = 0; n < GS_SHARED_PROBES; n++, j = (j + 1) & mask) {
        uint64_t k = atomic_load_explicit(&t[j].key, memory_order_acquire);
        if (!k)
            return 0;
        if (k != key)
            continue;
        uint64_t v = atomic_load_explicit(&t[j].rule, memory_order_acquire);
        if (!(uint8_t)(v >> 48))
            return 0; /* claimed, the rule not stored yet */
        *r = (struct gs_unw_rule){ip, (int32_t)(uint32_t)v, (int16_t)(uint16_t)(v >> 32),
                                  (uint8_t)(v >> 48), (uint8_t)(v >> 56)};
        return 1;
    }
    return 0;
}

static void shared_put(const struct gs_unw_rule *r, uint64_t subs)
{
    uint64_t key = shared_key(r->ip, subs);
    struct shared_rule *t = atomic_load_explicit(&shared, memory_order_acquire);
    if (!key || r->kind == GS_UNW_NONE)
        return;
    if (!t) {
        size_t len = sizeof *t << GS_SHARED_BITS;
        struct shared_rule *mine = gs_pages_alloc(len), *none = NULL;
        if (!mine)
            return;
        if (atomic_compare_exchange_strong(&shared, &none, mine)) {
            t = mine;
        } else {
            gs_pages_free(mine, len);
            t = none;
        }
    }
    uint64_t v = (uint32_t)r->cfa_off | (uint64_t)(uint16_t)r->fp_off << 32 |
                 (uint64_t)r->kind << 48 | (uint64_t)r->std << 56;
    uint64_t j = shared_slot(key), mask = (1u << GS_SHARED_BITS) - 1;
    for (int n = 0; n < GS_SHARED_PROBES; n++, j = (j + 1) & mask) {
        uint64_t k = atomic_load_explicit(&t[j].key, memory_order_relaxed);
        if (k == key)
            return; /* another thread's, or being stored by it */
        if (!k && atomic_compare_exchange_strong(&t[j].key, &k, key)) {
            atomic_store_explicit(&t[j].rule, v, memory_order_release);
            return;
        }
        if (k == key)
            return; /* lost the slot to the same key */
    }
}

const struct gs_unw_rule *gs_unw_fill(struct gs_unw_rule *r, uintptr_t ip)
{
    /* Without the loader's counters the generation never moves, and this
     * one is the lookup's. */
    uint64_t gen = atomic_load_explicit(&gs_unw_map_gen, memory_order_acquire);
    uint64_t subs = atomic_load_explicit(&gs_unw_unmap_gen, memory_order_relaxed);
    *r = (struct gs_unw_rule){ip, (int32_t)(uint32_t)gen, 0, GS_UNW_NONE, 0};
    /* A return address follows its call: the call (ip - 1) is what lies in
     * the function, also after a call that never returns at its very end. */
    if (ip < 4096 || shared_get(ip, subs, r))
        return r;
    int saved = gs_tls.in_hook;
    gs_tls.in_hook = 1; /* the loader may allocate under dl_iterate_phdr */
    struct find f = {ip - 1, r, 1, 0, gen, subs};
    dl_iterate_phdr(find_cb, &f);
    gs_restore(saved);
    if (r->kind == GS_UNW_NONE)
        r->cfa_off = (int32_t)(uint32_t)f.gen;
    else
        shared_put(r, f.subs);
    return r;
}
