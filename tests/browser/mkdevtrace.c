/*
 * mkdevtrace: writes a synthetic trace of a PyTorch-like training job on one
 * GPU, for the HTML report's device views (tests/integration/html_browser.sh
 * opens its report; no GPU is needed to make it):
 *
 *   cudaMalloc  four 20 MiB segments at the start, a 2 MiB one every 10 steps
 *   PyTorch     caching-allocator blocks inside those segments: activations
 *               allocated and freed every step, weights kept, and one 512 KiB
 *               block kept every step by keep_outputs (a device-side growth)
 *   samples     DEVICE_SAMPLE of the allocator every step (reserved, in use,
 *               segments, largest free), SAMPLE of the host heap
 *   host heap   16 blocks of 1000 bytes side by side as glibc lays them out
 *               (1008 bytes apart), every third from the second freed: five
 *               holes of 1008 bytes among 11 live blocks to the end
 *   pauses      a Python GC pause every 10 steps
 *   markers     a step marker per step, a user marker every 25 steps
 *
 *   mkdevtrace OUT [STEPS [ARG...]]   (default 100 steps, 10 ms apart)
 *
 * ARGs are appended to the recorded command line, and each is also a user
 * marker at the start (tests of how the report shows what a trace says).
 *
 * Stacks are Python frames (PYCODE records), so sites are named without
 * debug information.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define MIB (1ull << 20)
#define SEG0 0x7f2a00000000ull
#define STEP_NS 10000000ull

/* Stack ids, which are also the PYCODE ids of their frames. Stack 1 is
 * main's frame (code object 100): ids are defined in order, 1, 2, 3, ...,
 * each after its parent, as the shim writes them. */
enum { ST_MAIN = 1, ST_WEIGHTS, ST_ACT, ST_KEEP, ST_SEG, ST_HOST, NCODE };

static const char *const fn_name[NCODE] = { "", "", "init_weights", "forward", "keep_outputs",
                                            "cudaMalloc_segment", "load_batch" };

/* stack id s: one Python frame of code object s (line 10 * s) over main */
static void stacks(struct gs_tb *tb)
{
    gs_tb_pycode(tb, 100, "train.py", "main", 1);
    gs_tb_stack(tb, ST_MAIN, 0, GS_IP_PYFRAME | (100ull << 32) | 200);
    for (uint64_t s = ST_MAIN + 1; s < NCODE; s++) {
        gs_tb_pycode(tb, s, "model.py", fn_name[s], 10 * s);
        gs_tb_stack(tb, s, ST_MAIN, GS_IP_PYFRAME | (s << 32) | (10 * s + 2));
    }
}

struct seg {
    uint64_t addr, size, used; /* bump allocation of kept blocks from the top */
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mkdevtrace OUT [STEPS]\n");
        return 2;
    }
    unsigned steps = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 100;
    struct gs_tb *tb = gs_tb_new();
    static const char base[] = "python3\0train.py\0--device\0cuda";
    char args[4096];
    size_t alen = sizeof base - 1;
    memcpy(args, base, alen);
    for (int i = 3; i < argc; i++) {
        size_t n = strlen(argv[i]);
        if (alen + 1 + n > sizeof args) {
            fprintf(stderr, "mkdevtrace: arguments too long\n");
            return 2;
        }
        args[alen++] = 0;
        memcpy(args + alen, argv[i], n);
        alen += n;
    }
    gs_tb_process_start(tb, &(struct gs_tb_proc){
        .pid = 4242, .ppid = 1, .wall_ns = 1700000000000000000ull, .exe = "/usr/bin/python3",
        .argv = args, .argv_len = alen, .host = "gpu-node", .version = "0.1.0",
        .depth = 64, .page_size = 4096 });
    gs_tb_thread_start(tb, 1, 4242, 0); /* the one thread every event names */
    stacks(tb);
    for (int i = 3; i < argc; i++)
        gs_tb_marker(tb, 500 + (uint64_t)i, 1, GS_MARK_USER, argv[i]);
    struct seg segs[64];
    unsigned nseg = 0;
    uint64_t t = 1000, next_addr = SEG0, reserved = 0, in_use = 0, live_host = 0;
    for (; nseg < 4; nseg++) {
        segs[nseg] = (struct seg){ next_addr, 20 * MIB, 0 };
        gs_tb_alloc_ex(tb, t += 1000, 1, next_addr, 20 * MIB, ST_SEG, GS_MEM_DEVICE,
                       GS_FN_CUDA_RUNTIME, 0, 0, 200000);
        next_addr += 32 * MIB;
        reserved += 20 * MIB;
    }
    for (unsigned i = 0; i < 16; i++)
        gs_tb_alloc(tb, t += 100, 1, 0x555555800000ull + i * 1008, 1000, ST_HOST);
    for (unsigned i = 1; i < 16; i += 3)
        gs_tb_free_rec(tb, t += 100, 0x555555800000ull + i * 1008);
    /* weights: the first half of segment 0 */
    for (unsigned i = 0; i < 8; i++) {
        gs_tb_alloc_ex(tb, t += 1000, 1, SEG0 + i * MIB, MIB, ST_WEIGHTS, GS_MEM_DEVICE,
                       GS_FN_TORCH, 0, 0, 0);
        in_use += MIB;
    }
    segs[0].used = 8 * MIB;
    unsigned kseg = 1;
    for (unsigned s = 1; s <= steps; s++) {
        uint64_t t0 = (uint64_t)s * STEP_NS;
        gs_tb_marker(tb, t0, 1, GS_MARK_STEP, "step");
        if (s % 25 == 1) {
            char label[32];
            snprintf(label, sizeof label, "epoch %u", s / 25 + 1);
            gs_tb_marker(tb, t0 + 1, 1, GS_MARK_USER, label);
        }
        if (s % 10 == 0 && nseg < 64) {
            segs[nseg] = (struct seg){ next_addr, 2 * MIB, 0 };
            gs_tb_alloc_ex(tb, t0 + 10, 1, next_addr, 2 * MIB, ST_SEG, GS_MEM_DEVICE,
                           GS_FN_CUDA_RUNTIME, 0, 0, 1500000);
            next_addr += 4 * MIB;
            reserved += 2 * MIB;
            nseg++;
        }
        /* a host batch, freed at the end of the step */
        uint64_t hb = 0x555555600000ull + (s % 4) * 0x20000;
        gs_tb_alloc(tb, t0 + 20, 1, hb, 65536 + s * 16, ST_HOST);
        live_host += 65536 + s * 16;
        /* activations: six blocks in segments 1..3, freed at the end */
        uint64_t act[6];
        for (unsigned i = 0; i < 6; i++) {
            struct seg *g = &segs[1 + i % 3];
            act[i] = g->addr + (i / 3) * 4 * MIB + (s % 3) * 512 * 1024;
            gs_tb_alloc_ex(tb, t0 + 100 + i, 1, act[i], 3 * MIB, ST_ACT, GS_MEM_DEVICE,
                           GS_FN_TORCH, 0, 0, 0);
            in_use += 3 * MIB;
        }
        /* kept outputs: 512 KiB from the top half of a segment with room */
        while (kseg < nseg && segs[kseg].used + 512 * 1024 > segs[kseg].size / 2)
            kseg++;
        if (kseg < nseg) {
            struct seg *g = &segs[kseg];
            g->used += 512 * 1024;
            gs_tb_alloc_ex(tb, t0 + 200, 1, g->addr + g->size - g->used, 512 * 1024, ST_KEEP,
                           GS_MEM_DEVICE, GS_FN_TORCH, 0, 0, 0);
            in_use += 512 * 1024;
        }
        gs_tb_device_sample(tb, t0 + 300, 0, GS_MEM_DEVICE, reserved, in_use, nseg,
                            reserved - in_use > 18 * MIB ? 18 * MIB : reserved - in_use);
        for (unsigned i = 0; i < 6; i++) {
            gs_tb_free_ex(tb, t0 + 5000000 + i, 1, act[i], GS_MEM_DEVICE, GS_FN_TORCH, 0);
            in_use -= 3 * MIB;
        }
        gs_tb_free_rec(tb, t0 + 5000100, hb);
        live_host -= 65536 + s * 16;
        gs_tb_sample(tb, t0 + 5000200, 300 * MIB, 4 * MIB, 10, 1, 1 * MIB, live_host + MIB,
                     3 * MIB, 128 * 1024);
        if (s % 10 == 5)
            gs_tb_pause(tb, t0 + 6000000, t0 + 6000000 + 300000 + s * 10000, GS_PAUSE_PYTHON_GC,
                        1, 2, 100);
    }
    t = (uint64_t)(steps + 1) * STEP_NS;
    gs_tb_trace_end(tb, t, 0, 0, 0, 0, 0);
    int rc = gs_tb_write_file(tb, argv[1]);
    gs_tb_free(tb);
    if (rc) {
        fprintf(stderr, "mkdevtrace: cannot write %s\n", argv[1]);
        return 1;
    }
    return 0;
}
