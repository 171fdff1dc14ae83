/*
 * The gcspy trace format: the one set of definitions the shim (writer) and the
 * analyzer (reader) share. docs/trace-format.md explains it in prose; this
 * header is normative for numbers and layouts. Any change that an old reader
 * would misread is a major version bump; additions an old reader can skip
 * (new length-prefixed record types, new trailing fields in a length-prefixed
 * record) are a minor bump.
 *
 * Layout of a file (all integers little-endian):
 *
 *   file header (32 bytes)
 *     0  char     magic[8]   "GCSPYTRC"
 *     8  u16      major      GS_TRACE_MAJOR
 *    10  u16      minor      GS_TRACE_MINOR
 *    12  u32      hdr_size   32
 *    16  u64      flags      GS_FILE_F_*
 *    24  u64      reserved   0
 *
 *   then chunks, each:
 *     0  u32      magic      GS_CHUNK_MAGIC ("GSCK")
 *     4  u32      seq        0, 1, 2, ... with no gap
 *     8  u32      comp_len   payload bytes that follow this header
 *    12  u32      raw_len    payload bytes once decompressed (<= GS_CHUNK_RAW_MAX)
 *    16  u32      crc        CRC-32C of the comp_len payload bytes
 *    20  u32      hcrc       CRC-32C of header bytes 0..19
 *    24  payload  zstd frame (GS_CHUNK_F is implied by the file flags)
 *
 * A chunk is written whole with one write(2) call; a trace cut anywhere is
 * readable up to its last complete chunk.
 *
 * The decompressed payload is a sequence of records. A record starts with a
 * one-byte type. Types below GS_REC_LENGTHED are "hot": their fields follow
 * directly, as LEB128 varints (u) or zigzag varints (s), in the fixed order
 * given below; their schema never changes within a major version. Types at or
 * above GS_REC_LENGTHED are followed by a varint body length and the body, so
 * a reader skips types it does not know and ignores trailing fields it does
 * not know.
 *
 * Each payload is the concatenation of buffers; every buffer begins with a
 * TIMEBASE record. Hot records are delta-coded against the running state that
 * TIMEBASE resets: `t` (ns since process start) and `a` (the last address).
 * Records for the same address are always in the order the events happened
 * (the shim writes them under the lock of the address's table shard); records
 * of different addresses may be out of time order by up to one flush
 * interval. Definitions (STACK, THREAD_START, MODULE, PYCODE) always come
 * before the first record that uses them.
 */
#ifndef GCSPY_TRACE_FORMAT_H
#define GCSPY_TRACE_FORMAT_H

#include <stdint.h>

#define GS_TRACE_MAGIC      "GCSPYTRC"
#define GS_TRACE_MAGIC_LEN  8
#define GS_TRACE_MAJOR      1
#define GS_TRACE_MINOR      1
#define GS_FILE_HDR_SIZE    32u
#define GS_FILE_F_ZSTD      0x1u

#define GS_CHUNK_MAGIC      0x4B435347u /* "GSCK" */
#define GS_CHUNK_HDR_SIZE   24u
#define GS_CHUNK_RAW_MAX    (16u << 20) /* a reader refuses larger chunks */

/* Record types. Hot types (fixed schema, no length): */
enum gs_rec_type {
    /* u t_ns: absolute time since process start; resets t and a (a = 0). */
    GS_REC_TIMEBASE = 0x01,
    /* u dt, u thread, s addr-a, u size, u stack   (host malloc-family block) */
    GS_REC_ALLOC = 0x02,
    /* u dt, s addr-a                              (free of a tracked block) */
    GS_REC_FREE = 0x03,
    /* u dt, u thread, s addr-a, u new_size, u stack (realloc that kept its address) */
    GS_REC_REALLOC = 0x04,
    /* u dt, u thread, s addr-a, u size, u stack, u kind, u fn, u device,
     * u stream, u dur_ns                         (any other allocation) */
    GS_REC_ALLOC_EX = 0x05,
    /* u id, u parent, u ip: stack tree node. id > 0; parent 0 is the root.
     * A stack id names its innermost node; walking parents gives the frames
     * from the allocation site outwards. ips are return addresses, or
     * synthetic Python frames (GS_IP_PYFRAME set). */
    GS_REC_STACK = 0x06,
    /* u dt, u thread, s addr-a, u kind, u fn, u dur_ns (free of a non-host block) */
    GS_REC_FREE_EX = 0x07,

    GS_REC_LENGTHED = 0x20,
    /* Length-prefixed types (u len, then body): */
    /* u pid, u ppid, u wall_ns (unix ns at t=0), str exe, str argv (NUL-separated),
     * str host, u rank+1, u local_rank+1, u world_size+1 (0 = unset), u flags
     * (GS_PROC_F_*), str gcspy_version, u unwinder, u depth, u page_size */
    GS_REC_PROCESS_START = 0x20,
    /* u t, s status, u how (GS_EXIT_*) */
    GS_REC_PROCESS_EXIT = 0x21,
    /* u id, u t, u base (load bias), str path, bytes build_id, u nseg,
     * nseg * (u vaddr, u memsz, u flags PF_*)   (vaddr relative to base) */
    GS_REC_MODULE = 0x22,
    /* u id, u t */
    GS_REC_MODULE_UNLOAD = 0x23,
    /* u index, u tid, u t */
    GS_REC_THREAD_START = 0x24,
    /* u index, u t */
    GS_REC_THREAD_EXIT = 0x25,
    /* u t, u rss, u arena, u ordblks, u hblks, u hblkhd, u uordblks,
     * u fordblks, u keepcost   (glibc mallinfo2 fields, bytes/counts) */
    GS_REC_SAMPLE = 0x26,
    /* u t, u thread, u kind (GS_MARK_*), str label */
    GS_REC_MARKER = 0x27,
    /* u t_start, u t_end, u kind (GS_PAUSE_*), u thread, u a, u b
     * (a, b: kind-specific detail, e.g. generation and objects collected) */
    GS_REC_PAUSE = 0x28,
    /* u t, str path: the process calls exec; its next image writes a new trace */
    GS_REC_EXEC = 0x29,
    /* u t, u events dropped since tracing stopped or was degraded, str reason */
    GS_REC_STOPPED = 0x2A,
    /* The leak scanner (see docs/trace-format.md, "Scans"):
     * SCAN_BEGIN: u scan_id, u t, u trigger (GS_SCAN_TRIG_*), u mode
     * SCAN_BLOCK: u scan_id, u addr, u size, u stack, u kind, u class (GS_CLASS_*)
     * SCAN_END:   u scan_id, u t_start, u t_stopped, u t_marked, u t_end,
     *             u threads, u bytes_scanned, u blocks_visited, u live_blocks,
     *             u live_bytes, then per class: u blocks, u bytes (GS_CLASS__N)
     * (minor 1) SCAN_BLOCK has a trailing u fn (GS_FN_*): GS_FN_TORCH for a
     * block handed out by PyTorch's caching allocator inside a segment; a
     * reader of minor 0 traces takes 0. Caching-allocator segments are never
     * SCAN_BLOCK results themselves: their memory is reserved, not leaked. */
    GS_REC_SCAN_BEGIN = 0x2B,
    GS_REC_SCAN_BLOCK = 0x2C,
    GS_REC_SCAN_END = 0x2D,
    /* u id, str file, str function, u firstline: a Python code object */
    GS_REC_PYCODE = 0x2E,
    /* u t, u allocs, u frees, u bytes_allocated, u live_blocks, u live_bytes:
     * written last; its absence means the trace is incomplete */
    GS_REC_TRACE_END = 0x2F,
    /* u t, u device, u kind, u reserved, u in_use, u segments, u largest_free
     * (device allocator figures; written by the GPU and PyTorch parts) */
    GS_REC_DEVICE_SAMPLE = 0x30,
    /* Caching allocators (minor 1; docs/trace-format.md, "Caching
     * allocators"): the state of PyTorch's CUDA caching allocator, read in
     * the process from torch.cuda.memory._snapshot(). A POOL_SNAPSHOT opens
     * snapshot snap_id; its nsegments POOL_SEGMENT, nblocks POOL_BLOCK and
     * nevents POOL_EVENT records follow, in that order, possibly with other
     * records between them. Each segment's blocks follow it in address order
     * and tile it exactly (a block belongs to the last segment before it).
     * Once the last of them is read, the process's live caching-allocator
     * blocks are exactly the snapshot's ACTIVE and PENDING_FREE blocks.
     * POOL_EVENT records are the allocator's own history
     * (torch.cuda.memory._record_memory_history), oldest first; t is 0
     * where PyTorch gave no time. Stacks are ordinary stack ids (Python
     * frames as PYCODE-based synthetic ips), 0 when PyTorch recorded none.
     * POOL_SNAPSHOT: u snap_id, u t, u reason (GS_POOL_WHY_*), u nsegments,
     *                u nblocks, u nevents
     * POOL_SEGMENT:  u snap_id, u device, u addr, u size, u stream,
     *                u pool (GS_POOL_*)
     * POOL_BLOCK:    u snap_id, u addr, u size, u requested, u state
     *                (GS_PBLK_*), u stack
     * POOL_EVENT:    u snap_id, u t, u device, u action (GS_PEV_*), u addr,
     *                u size, u stream, u stack */
    GS_REC_POOL_SNAPSHOT = 0x31,
    GS_REC_POOL_SEGMENT = 0x32,
    GS_REC_POOL_BLOCK = 0x33,
    GS_REC_POOL_EVENT = 0x34,
};

enum gs_pool_why { GS_POOL_WHY_SCAN = 0, GS_POOL_WHY_EXIT = 1, GS_POOL_WHY_API = 2 };
enum gs_pool_kind { GS_POOL_LARGE = 0, GS_POOL_SMALL = 1, GS_POOL_OTHER = 2 };
enum gs_pool_block_state {
    GS_PBLK_ACTIVE = 0,       /* active_allocated: a live tensor's storage */
    GS_PBLK_PENDING_FREE = 1, /* active_pending_free: freed, waiting on a stream */
    GS_PBLK_INACTIVE = 2,     /* cached free: reserved, never a leak */
};
enum gs_pool_action {
    GS_PEV_ALLOC = 0, GS_PEV_FREE_REQUESTED, GS_PEV_FREE_COMPLETED, GS_PEV_SEGMENT_ALLOC,
    GS_PEV_SEGMENT_FREE, GS_PEV_SEGMENT_MAP, GS_PEV_SEGMENT_UNMAP, GS_PEV_SNAPSHOT,
    GS_PEV_OOM, GS_PEV_OTHER, GS_PEV__N
};

/* Memory kinds (ALLOC_EX kind, SCAN_BLOCK kind). */
enum gs_mem_kind {
    GS_MEM_HOST = 0,    /* malloc family */
    GS_MEM_PINNED = 1,  /* page-locked host memory (cudaMallocHost, ...) */
    GS_MEM_MANAGED = 2, /* unified memory: host-readable */
    GS_MEM_DEVICE = 3,  /* device memory: a leaf, never scanned */
    GS_MEM_VMM = 4,     /* a mapped range of virtual memory management */
    GS_MEM__N
};

/* Allocating functions (ALLOC_EX fn). */
enum gs_alloc_fn {
    GS_FN_MALLOC = 0, GS_FN_CALLOC, GS_FN_REALLOC, GS_FN_MEMALIGN,
    GS_FN_VALLOC, GS_FN_INHERITED, /* live in the parent at fork */
    GS_FN_CUDA_RUNTIME = 16, GS_FN_CUDA_DRIVER, GS_FN_CUDA_ASYNC,
    GS_FN_CUPTI, GS_FN_TORCH,
};

/* Leak classes, memcheck's meaning (SCAN_BLOCK class). */
enum gs_leak_class {
    GS_CLASS_DEFINITE = 0, GS_CLASS_INDIRECT = 1, GS_CLASS_POSSIBLE = 2,
    GS_CLASS_REACHABLE = 3, GS_CLASS__N
};

enum gs_scan_trigger {
    GS_SCAN_TRIG_EXIT = 0, GS_SCAN_TRIG_SIGNAL, GS_SCAN_TRIG_PERIODIC,
    GS_SCAN_TRIG_API, GS_SCAN_TRIG_BYTES, /* every GCSPY_SCAN_BYTES allocated */
};

enum gs_pause_kind {
    GS_PAUSE_SCAN = 0, GS_PAUSE_CUDA_SYNC = 1, GS_PAUSE_PYTHON_GC = 2,
};

enum gs_mark_kind { GS_MARK_USER = 0, GS_MARK_STEP = 1 };

enum gs_exit_how { GS_EXIT_NORMAL = 0, GS_EXIT_SIGNAL = 1, GS_EXIT_EXEC = 2 };

#define GS_PROC_F_FORKED  0x1u /* started by fork(): live blocks inherited */
#define GS_PROC_F_SETUID  0x2u

enum gs_unwinder { GS_UNWIND_FP = 0, GS_UNWIND_LIBUNWIND = 1 };

/* Synthetic frames: x86-64 user code never has bit 63 set, so a stack node
 * whose ip has it is a Python frame: bits 32..62 the PYCODE id, 0..31 the line. */
#define GS_IP_PYFRAME      (1ull << 63)

#endif /* GCSPY_TRACE_FORMAT_H */
