/*
 * Memory the CUDA driver, runtime and CUPTI own (issue 18, risk 1).
 *
 * libcuda maps every allocation's address to its bookkeeping (cuMemFree and
 * the pointer queries need it), and the runtime and CUPTI keep copies: in
 * heap blocks they allocate, in their data segments. A conservative scan
 * that takes that memory as ordinary would find every live device block
 * reachable, and no device leak would ever be found. So the scan treats it
 * as the runtime's (mark.c): it keeps host memory alive as any memory does,
 * but a CUDA block (device, VMM, pinned, managed) it alone reaches is
 * classed "held by the CUDA runtime" (GS_CLASS_RUNTIME): never definite,
 * never plainly reachable.
 *
 * GCSPY_CUDA_OWNED names the modules (file-name prefixes). Owned are:
 *  - heap blocks whose allocation stack has a frame in one of their
 *    executable segments (a per-stack-id bit, computed as the PyTorch-aware
 *    mode computes its weak bit: gs_stack_bits_fill);
 *  - their writable PT_LOAD segments (.data, .bss), which the roots include.
 * Anonymous mappings the driver makes with mmap are not attributed (the
 * shim does not trace mmap): a copy kept there still makes its block
 * reachable (a missed leak, never a false one).
 *
 * Caveat: a program's own allocation made inside a callback the runtime
 * runs (a host function launched on a stream) has CUDA frames outside it,
 * and counts as owned: device blocks kept only there are "held by the CUDA
 * runtime", not reachable (never a definite leak either way).
 *
 * Runs before a scan in the scanning thread, world running (dl_iterate_phdr
 * takes the loader's lock, which a stopped thread may hold); the arrays it
 * hands out are read while the world is stopped and are only replaced by
 * the next call, made by the next scan (scans never overlap).
 */
#define _GNU_SOURCE
#include <link.h>
#include <string.h>

#include "cuda_owned.h"
#include "options.h"
#include "roots.h"
#include "stack.h"

struct code { uintptr_t lo, hi; };
static struct code *code;          /* executable segments, sorted */
static size_t ncode, code_cap;
static struct gs_range *data;      /* writable segments, sorted */
static size_t ndata, data_cap;
static uintptr_t *seen;            /* module bases already looked at */
static size_t nseen, seen_cap;
static uint8_t *bits;
static uint64_t bits_cap;
static uint32_t bits_done = 1;

/* Whether a module's file name starts with one of the option's tokens. */
static int owned_file(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *file = slash ? slash + 1 : path;
    const char *cur = gs_opt.cuda_owned ? gs_opt.cuda_owned : "";
    while (*cur) {
        while (*cur == ',' || *cur == ' ')
            cur++;
        size_t n = strcspn(cur, ",");
        if (n && !strncmp(file, cur, n))
            return 1;
        cur += n;
    }
    return 0;
}

static int module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (size_t i = 0; i < nseen; i++)
        if (seen[i] == info->dlpi_addr)
            return 0;
    if (GS_GROW(seen, seen_cap, nseen + 1, 256))
        return 0;
    seen[nseen++] = info->dlpi_addr;
    if (!info->dlpi_name || !*info->dlpi_name || !owned_file(info->dlpi_name))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if ((ph->p_flags & PF_X) && !GS_GROW(code, code_cap, ncode + 1, 64))
            code[ncode++] = (struct code){lo, hi};
        if ((ph->p_flags & PF_W) && !GS_GROW(data, data_cap, ndata + 1, 64))
            data[ndata++] = (struct gs_range){lo & ~(uintptr_t)4095,
                                              (hi + 4095) & ~(uintptr_t)4095};
    }
    return 0;
}

/* ip is a return address: ip - 1 is in the caller. */
static uint8_t bit_of(uint64_t ip)
{
    if (ip & GS_IP_PYFRAME)
        return 0;
    _Static_assert(offsetof(struct code, lo) == 0 && sizeof(uintptr_t) == 8, "keyed by lo");
    size_t i = gs_keyed_upto(code, ncode, sizeof *code, ip - 1);
    /* GS_SB_WEAK: the one bit gs_stack_bits_fill hands down to callees */
    return i && ip - 1 < code[i - 1].hi ? GS_SB_WEAK : 0;
}

static void sort_code(void)
{
    for (size_t i = 1; i < ncode; i++)
        for (size_t k = i; k && code[k - 1].lo > code[k].lo; k--) {
            struct code t = code[k];
            code[k] = code[k - 1];
            code[k - 1] = t;
        }
}

void gs_cuda_owned_prepare(struct gs_cuda_owned *out)
{
    memset(out, 0, sizeof *out);
    if (!gs_opt.cuda_owned || !*gs_opt.cuda_owned)
        return;
    size_t before = ncode;
    dl_iterate_phdr(module_cb, NULL);
    if (ncode != before) {
        sort_code();
        ndata = gs_range_merge(data, ndata);
        bits_done = 1; /* new code: every stack again */
    }
    if (!ncode)
        return;
    bits_done = gs_stack_bits_fill(&bits, &bits_cap, bits_done, bit_of);
    out->bits = bits;
    out->nbits = bits_done;
    out->data = data;
    out->ndata = ndata;
}
