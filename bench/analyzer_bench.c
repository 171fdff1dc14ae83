/*
 * analyzer_bench: writes a large synthetic gcspy trace for the analyzer's
 * throughput benchmark (bench/analyzer_bench.sh), streaming chunk by chunk
 * so any size fits in a few MiB of memory.
 *
 *   analyzer_bench OUT EVENTS [LIVE]
 *   analyzer_bench --churn EVENTS [LIVE]   performs the same pattern of real
 *                                          malloc/free calls (for a heaptrack
 *                                          recording of a comparable workload)
 *
 * The workload looks like a long training run: allocation and free events
 * (half each), mostly short-lived temporaries plus a long-lived set of up to
 * LIVE blocks (default 100000), from 20000 allocation stacks of depth 24
 * sharing prefixes like real call trees (most allocations from a few hot
 * sites), whose
 * frames are real addresses in the modules this program has loaded (itself,
 * libc, libzstd: their paths, load biases and build ids go into MODULE
 * records, so the analyzer symbolizes real code); a SAMPLE every 100 ms, a
 * step marker every 10000 events, a Python GC pause now and then, and an
 * exit scan that finds 1% of the live blocks definitely lost. Times advance
 * 10 ns per event. Deterministic: the same arguments give the same trace.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "gcspy/record.h"

#define RAW_LIMIT (1u << 20)
#define NSTACKS 20000u
#define DEPTH 24u

static uint8_t raw[RAW_LIMIT + 4096];
static size_t rawlen;
static uint8_t *comp;
static size_t compcap;
static uint32_t seq;
static int fd;
static struct gs_enc_state st;
static uint64_t now;

static int write_all(const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static int flush_chunk(void)
{
    if (!rawlen)
        return 0;
    size_t c = ZSTD_compress(comp, compcap, raw, rawlen, 1);
    if (ZSTD_isError(c))
        return -1;
    uint8_t hdr[GS_CHUNK_HDR_SIZE];
    gs_chunk_header(hdr, seq++, comp, (uint32_t)c, (uint32_t)rawlen);
    if (write_all(hdr, sizeof hdr) || write_all(comp, c))
        return -1;
    rawlen = 0;
    return 0;
}

/* Room for one more record; starts a new chunk (and buffer) when full. */
static uint8_t *room(void)
{
    if (rawlen >= RAW_LIMIT) {
        if (flush_chunk())
            return NULL;
    }
    if (!rawlen) {
        uint8_t *p = gs_rec_timebase(raw, &st, now);
        rawlen = (size_t)(p - raw);
    }
    return raw + rawlen;
}

static int put(uint8_t *end)
{
    rawlen = (size_t)(end - raw);
    return 0;
}

struct mod {
    uint64_t base, text_lo, text_hi;
    char path[512];
    uint8_t bid[64];
    size_t bidlen;
    uint64_t nseg;
    uint64_t seg[8][3];
};
static struct mod mods[8];
static int nmods;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (nmods == 8)
        return 1;
    struct mod *m = &mods[nmods];
    memset(m, 0, sizeof *m);
    if (info->dlpi_name && info->dlpi_name[0]) {
        if (!strstr(info->dlpi_name, "libc.so") && !strstr(info->dlpi_name, "libzstd"))
            return 0;
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    } else if (!realpath("/proc/self/exe", m->path)) {
        return 0;
    }
    m->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && m->nseg < 8) {
            m->seg[m->nseg][0] = ph->p_vaddr;
            m->seg[m->nseg][1] = ph->p_memsz;
            m->seg[m->nseg][2] = ph->p_flags;
            m->nseg++;
            if ((ph->p_flags & PF_X) && ph->p_memsz > m->text_hi - m->text_lo) {
                m->text_lo = ph->p_vaddr;
                m->text_hi = ph->p_vaddr + ph->p_memsz;
            }
        } else if (ph->p_type == PT_NOTE) {
            const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
            const uint8_t *e = p + ph->p_memsz;
            while (p + sizeof(ElfW(Nhdr)) <= e) {
                const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
                const uint8_t *name = p + sizeof *nh;
                const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
                if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= sizeof m->bid) {
                    memcpy(m->bid, desc, nh->n_descsz);
                    m->bidlen = nh->n_descsz;
                }
                p = desc + ((nh->n_descsz + 3) & ~3u);
            }
        }
    }
    if (m->text_hi > m->text_lo)
        nmods++;
    return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint8_t *lengthed_open(uint8_t type, uint8_t **body)
{
    uint8_t *p = room();
    if (!p)
        return NULL;
    *body = gs_rec_open(p, type);
    return *body;
}

/* ---- --churn: the workload as real calls ---- */

#define SITE(n)                                                          \
    __attribute__((noinline)) static void *site##n(size_t sz)           \
    {                                                                    \
        void *p = malloc(sz);                                            \
        __asm__ volatile("" : : "r"(p) : "memory");                      \
        return p;                                                        \
    }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
static void *(*const sites[8])(size_t) = { site0, site1, site2, site3,
                                           site4, site5, site6, site7 };

static int churn(uint64_t events, uint64_t live)
{
    enum { POOL = 64 };
    void *pool[POOL];
    int pool_n = 0;
    void **slots = calloc(live, sizeof *slots);
    if (!slots)
        return 1;
    for (uint64_t e = 0; e < events; e++) {
        uint64_t r = rnd();
        if ((r & 15) == 0) {
            uint64_t slot = (r >> 8) % live;
            if (slots[slot]) {
                free(slots[slot]);
                slots[slot] = NULL;
            } else {
                slots[slot] = sites[(r >> 40) & 7](16 + ((r >> 20) % 64) * 16);
            }
        } else if (pool_n == POOL || (pool_n > 0 && ((r >> 4) & 1))) {
            int k = (int)((r >> 8) % (uint64_t)pool_n);
            free(pool[k]);
            pool[k] = pool[--pool_n];
        } else {
            pool[pool_n++] = sites[(r >> 40) & 7](16 + ((r >> 20) % 256) * 16);
        }
    }
    while (pool_n)
        free(pool[--pool_n]);
    for (uint64_t i = 0; i < live; i++)
        free(slots[i]);
    free(slots);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--churn") == 0)
        return churn(strtoull(argv[2], NULL, 10), argc > 3 ? strtoull(argv[3], NULL, 10) : 100000);
    if (argc < 3) {
        fprintf(stderr, "usage: analyzer_bench OUT EVENTS [LIVE]\n");
        return 2;
    }
    uint64_t events = strtoull(argv[2], NULL, 10);
    uint64_t live = argc > 3 ? strtoull(argv[3], NULL, 10) : 100000;
    if (!events || live < 100) {
        fprintf(stderr, "analyzer_bench: EVENTS > 0 and LIVE >= 100\n");
        return 2;
    }
    fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    compcap = ZSTD_compressBound(RAW_LIMIT + 4096);
    comp = malloc(compcap);
    uint64_t *addr = calloc(live, sizeof *addr);
    uint32_t *stk = calloc(live, sizeof *stk);
    if (!comp || !addr || !stk)
        return 1;
    dl_iterate_phdr(phdr_cb, NULL);

    uint8_t hdr[GS_FILE_HDR_SIZE];
    gs_file_header(hdr, GS_FILE_F_ZSTD);
    if (write_all(hdr, sizeof hdr))
        return 1;

    uint8_t *p, *b;
    static const char args[] = "python3\0train.py\0--epochs\0" "100";
    b = lengthed_open(GS_REC_PROCESS_START, &b);
    b = gs_put_u(b, 4242); b = gs_put_u(b, 1); b = gs_put_u(b, 1700000000000000000ull);
    b = gs_put_str(b, "/usr/bin/python3"); b = gs_put_bytes(b, args, sizeof args - 1);
    b = gs_put_str(b, "bench"); b = gs_put_u(b, 1); b = gs_put_u(b, 1); b = gs_put_u(b, 9);
    b = gs_put_u(b, 0); b = gs_put_str(b, "0.1.0"); b = gs_put_u(b, 0); b = gs_put_u(b, 64);
    b = gs_put_u(b, 4096);
    put(gs_rec_close(raw + rawlen + 4, b));
    /* the threads the events name (1 to 8), defined before their first use
     * as the format promises (docs/trace-format.md) */
    for (uint64_t i = 1; i <= 8; i++) {
        b = lengthed_open(GS_REC_THREAD_START, &b);
        b = gs_put_u(b, i); b = gs_put_u(b, 4242 + i); b = gs_put_u(b, 0);
        put(gs_rec_close(raw + rawlen + 4, b));
    }
    for (int i = 0; i < nmods; i++) {
        struct mod *m = &mods[i];
        b = lengthed_open(GS_REC_MODULE, &b);
        b = gs_put_u(b, (uint64_t)i + 1); b = gs_put_u(b, 0); b = gs_put_u(b, m->base);
        b = gs_put_str(b, m->path); b = gs_put_bytes(b, m->bid, m->bidlen);
        b = gs_put_u(b, m->nseg);
        for (uint64_t s = 0; s < m->nseg; s++) {
            b = gs_put_u(b, m->seg[s][0]); b = gs_put_u(b, m->seg[s][1]); b = gs_put_u(b, m->seg[s][2]);
        }
        put(gs_rec_close(raw + rawlen + 4, b));
    }
    /* the stack tree: 64 trunks of depth 12, each branching into subtrees;
     * stack s is a chain of DEPTH nodes whose first 12 are its trunk's */
    uint64_t next_id = 1;
    uint64_t trunk[64][12];
    for (int t = 0; t < 64; t++) {
        uint64_t parent = 0;
        for (int d = 0; d < 12; d++) {
            struct mod *m = &mods[rnd() % (uint64_t)nmods];
            uint64_t ip = m->base + m->text_lo + rnd() % (m->text_hi - m->text_lo);
            p = room();
            put(gs_rec_stack(p, &st, next_id, parent, ip));
            trunk[t][d] = parent = next_id++;
        }
    }
    uint64_t *leaf = calloc(NSTACKS, sizeof *leaf);
    if (!leaf)
        return 1;
    for (uint32_t s = 0; s < NSTACKS; s++) {
        uint64_t parent = trunk[s % 64][11];
        for (uint32_t d = 12; d < DEPTH; d++) {
            struct mod *m = &mods[rnd() % (uint64_t)nmods];
            uint64_t ip = m->base + m->text_lo + rnd() % (m->text_hi - m->text_lo);
            p = room();
            put(gs_rec_stack(p, &st, next_id, parent, ip));
            parent = next_id++;
        }
        leaf[s] = parent;
    }

    uint64_t allocs = 0, frees = 0, bytes = 0, live_n = 0, live_b = 0;
    uint64_t *sizes = calloc(live, sizeof *sizes);
    if (!sizes)
        return 1;
    uint64_t next_sample = 100000000ull, steps = 0;
    /* Two populations, as in real allocation traces: short-lived
     * temporaries (a pool of 64 recently allocated blocks, freed in random
     * order, their addresses reused LIFO the way malloc's bins reuse them)
     * and long-lived blocks (a LIVE-slot table, replaced at random). One
     * allocation in 16 is long-lived. Stacks: 90% of allocations come from
     * 200 hot call sites, the rest from all NSTACKS. */
    enum { POOL = 64 };
    uint64_t pool_addr[POOL] = { 0 }, pool_size[POOL] = { 0 };
    int pool_n = 0;
    uint64_t freelist[POOL];
    int nfree = 0;
    for (int i = 0; i < POOL; i++)
        freelist[nfree++] = 0x560000000000ull + (uint64_t)(POOL - 1 - i) * 0x800;
    for (uint64_t e = 0; e < events; e++) {
        now += 10;
        uint64_t r = rnd();
        p = room();
        if (!p)
            return 1;
        uint32_t s = (uint32_t)((r >> 32) % 10 < 9 ? (r >> 40) % 200 : (r >> 40) % NSTACKS);
        if ((r & 15) == 0) {
            /* long-lived: replace a random slot of the live table */
            uint64_t slot = (r >> 8) % live;
            if (addr[slot]) {
                put(gs_rec_free(p, &st, now, addr[slot]));
                live_n--;
                live_b -= sizes[slot];
                addr[slot] = 0;
                frees++;
            } else {
                uint64_t size = 16 + ((r >> 20) % 64) * 16;
                uint64_t a = 0x555500000000ull + slot * 0x1000 + ((r >> 4) % 4) * 0x400;
                put(gs_rec_alloc(p, &st, now, 1 + (slot & 7), a, size, leaf[s]));
                addr[slot] = a;
                sizes[slot] = size;
                stk[slot] = s;
                live_n++;
                live_b += size;
                allocs++;
                bytes += size;
            }
        } else if (pool_n == POOL || (pool_n > 0 && ((r >> 4) & 1))) {
            int k = (int)((r >> 8) % (uint64_t)pool_n);
            put(gs_rec_free(p, &st, now, pool_addr[k]));
            freelist[nfree++] = pool_addr[k];
            live_n--;
            live_b -= pool_size[k];
            pool_addr[k] = pool_addr[pool_n - 1];
            pool_size[k] = pool_size[pool_n - 1];
            pool_n--;
            frees++;
        } else {
            uint64_t size = 16 + ((r >> 20) % 256) * 16;
            uint64_t a = freelist[--nfree];
            put(gs_rec_alloc(p, &st, now, 1, a, size, leaf[s]));
            pool_addr[pool_n] = a;
            pool_size[pool_n] = size;
            pool_n++;
            live_n++;
            live_b += size;
            allocs++;
            bytes += size;
        }
        if (now >= next_sample) {
            next_sample += 100000000ull;
            b = lengthed_open(GS_REC_SAMPLE, &b);
            b = gs_put_u(b, now); b = gs_put_u(b, live_b * 2); b = gs_put_u(b, live_b + live_b / 4);
            b = gs_put_u(b, 100); b = gs_put_u(b, 2); b = gs_put_u(b, 1 << 20);
            b = gs_put_u(b, live_b); b = gs_put_u(b, live_b / 4); b = gs_put_u(b, 65536);
            put(gs_rec_close(raw + rawlen + 4, b));
            if (rnd() % 4 == 0) {
                b = lengthed_open(GS_REC_PAUSE, &b);
                b = gs_put_u(b, now); b = gs_put_u(b, now + 200000 + rnd() % 5000000);
                b = gs_put_u(b, GS_PAUSE_PYTHON_GC); b = gs_put_u(b, 1); b = gs_put_u(b, 2);
                b = gs_put_u(b, 1000);
                put(gs_rec_close(raw + rawlen + 4, b));
            }
        }
        if (e % 10000 == 9999) {
            char label[32];
            snprintf(label, sizeof label, "%llu", (unsigned long long)++steps);
            b = lengthed_open(GS_REC_MARKER, &b);
            b = gs_put_u(b, now); b = gs_put_u(b, 1); b = gs_put_u(b, GS_MARK_STEP);
            b = gs_put_str(b, label);
            put(gs_rec_close(raw + rawlen + 4, b));
        }
    }
    /* exit scan: 1% of the live blocks definitely lost, the rest reachable
     * (not recorded: a periodic-style scan) */
    uint64_t t0 = now + 1000;
    b = lengthed_open(GS_REC_SCAN_BEGIN, &b);
    b = gs_put_u(b, 1); b = gs_put_u(b, t0); b = gs_put_u(b, GS_SCAN_TRIG_EXIT); b = gs_put_u(b, 0);
    put(gs_rec_close(raw + rawlen + 4, b));
    uint64_t lost_n = 0, lost_b = 0;
    for (uint64_t s = 0; s < live; s += 100) {
        if (!addr[s])
            continue;
        b = lengthed_open(GS_REC_SCAN_BLOCK, &b);
        b = gs_put_u(b, 1); b = gs_put_u(b, addr[s]); b = gs_put_u(b, sizes[s]);
        b = gs_put_u(b, leaf[stk[s]]); b = gs_put_u(b, GS_MEM_HOST); b = gs_put_u(b, GS_CLASS_DEFINITE);
        put(gs_rec_close(raw + rawlen + 4, b));
        lost_n++;
        lost_b += sizes[s];
    }
    b = lengthed_open(GS_REC_SCAN_END, &b);
    b = gs_put_u(b, 1); b = gs_put_u(b, t0); b = gs_put_u(b, t0 + 100000);
    b = gs_put_u(b, t0 + 5000000); b = gs_put_u(b, t0 + 5100000); b = gs_put_u(b, 1);
    b = gs_put_u(b, live_b); b = gs_put_u(b, live_n); b = gs_put_u(b, live_n); b = gs_put_u(b, live_b);
    b = gs_put_u(b, lost_n); b = gs_put_u(b, lost_b);
    for (int c = 1; c < GS_CLASS__N; c++) {
        b = gs_put_u(b, 0); b = gs_put_u(b, 0);
    }
    put(gs_rec_close(raw + rawlen + 4, b));
    now = t0 + 6000000;
    b = lengthed_open(GS_REC_PROCESS_EXIT, &b);
    b = gs_put_u(b, now); b = gs_put_s(b, 0); b = gs_put_u(b, GS_EXIT_NORMAL);
    put(gs_rec_close(raw + rawlen + 4, b));
    b = lengthed_open(GS_REC_TRACE_END, &b);
    b = gs_put_u(b, now + 1); b = gs_put_u(b, allocs); b = gs_put_u(b, frees);
    b = gs_put_u(b, bytes); b = gs_put_u(b, live_n); b = gs_put_u(b, live_b);
    put(gs_rec_close(raw + rawlen + 4, b));
    if (flush_chunk() || close(fd))
        return 1;
    printf("events=%llu allocs=%llu frees=%llu live=%llu lost=%llu stacks=%u modules=%d\n",
           (unsigned long long)events, (unsigned long long)allocs, (unsigned long long)frees,
           (unsigned long long)live_n, (unsigned long long)lost_n, NSTACKS, nmods);
    free(leaf);
    free(sizes);
    free(addr);
    free(stk);
    free(comp);
    return 0;
}
