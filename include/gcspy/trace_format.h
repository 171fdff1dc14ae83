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
 *    24  payload  zstd data, as the file flags say (or raw bytes)
 *
 * A chunk is written whole with one write(2) call; a trace cut anywhere is
 * readable up to its last complete chunk.
 *
 * Payloads (the file flags): GS_FILE_F_ZSTD alone, each payload is one whole
 * zstd frame (all that major 1 knows). With GS_FILE_F_ZSTD_STREAM too (2.0), the
 * payloads are consecutive pieces of zstd frames, each piece flushed to a
 * block boundary (ZSTD_e_flush): a chunk decodes with the chunks before it
 * back to the one that started its frame, never needs one after it. A
 * payload that begins with the zstd frame magic (28 b5 2f fd) starts a new
 * frame (a reader resets its decompressor there; the frame before it may be
 * left unended); any other continues the frame before it (its first bytes
 * are a block header, which can never read as the magic: that would be a
 * block over zstd's 128 KiB maximum). A reader refuses file flags it does
 * not know (in a major 1 trace, the stream flag too: a 1.x reader cannot
 * read one, so no 1.x writer sets it).
 *
 * The decompressed payload is a sequence of records. A record starts with a
 * one-byte type. Types below GS_REC_LENGTHED are "hot": their fields follow
 * directly, as LEB128 varints (u) or zigzag varints (s), in the fixed order
 * records.def gives (the one table of every record's fields); their schema
 * never changes within a major version. Types at or above GS_REC_LENGTHED
 * are followed by a varint body length and the body, so a reader skips types
 * it does not know and ignores trailing fields it does not know.
 *
 * Each payload is the concatenation of buffers; every buffer begins with a
 * TIMEBASE record. Hot records are delta-coded against the running state that
 * TIMEBASE resets: `t` (ns since process start), `a` (the last address) and,
 * since 2.0, `sid` (the last STACK id: STACK's id and parent are deltas).
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
#define GS_TRACE_MAJOR      2  /* what the writer writes */
#define GS_TRACE_MINOR      1
/* The classes SCAN_END's class array holds (definite, indirect, possible,
 * reachable): fixed since 1.0, so that older traces read as they were
 * written; "held by the CUDA runtime" (2.1) has trailing fields. */
#define GS_CLASS_WIRE_N     4
#define GS_TRACE_MAJOR_OLDEST 1 /* the oldest major the reader still reads */
#define GS_FILE_HDR_SIZE    32u
#define GS_FILE_F_ZSTD      0x1u  /* chunk payloads are zstd data */
#define GS_FILE_F_ZSTD_STREAM 0x2u /* (2.0) one stream: chunks continue frames */
#define GS_FILE_F_KNOWN_1   GS_FILE_F_ZSTD  /* the flags of a major 1 trace */
#define GS_FILE_F_KNOWN     (GS_FILE_F_ZSTD | GS_FILE_F_ZSTD_STREAM)
#define GS_ZSTD_MAGIC       0xFD2FB528u /* a zstd frame's first 4 bytes (LE) */
#define GS_ZSTD_WINDOW_LOG_MAX 24       /* a stream's window: at most 16 MiB */

#define GS_CHUNK_MAGIC      0x4B435347u /* "GSCK" */
#define GS_CHUNK_HDR_SIZE   24u
#define GS_CHUNK_RAW_MAX    (16u << 20) /* a reader refuses larger chunks */

/* Record types: GS_REC_<NAME> for every row of records.def, which lists
 * each record's fields. Types below GS_REC_LENGTHED are hot. */
enum gs_rec_type {
#define GS_RECORD(NAME, name, type, ...) GS_REC_##NAME = type,
#include "gcspy/records.def"
#undef GS_RECORD
    GS_REC_LENGTHED = 0x20,
};

/* The enumerations record fields carry (enums.def): enum gs_<enum>, its
 * values <PREFIX><NAME>, and <PREFIX>_N one past the largest. */
#define GS_ENUM(e, prefix, doc) enum gs_##e {
#define GS_ENUM_VAL(prefix, NAME, value, name, doc) prefix##NAME = value,
#define GS_ENUM_END(e, prefix) prefix##_N };
#include "gcspy/enums.def"
#undef GS_ENUM
#undef GS_ENUM_VAL
#undef GS_ENUM_END

#define GS_PROC_F_FORKED  0x1u /* started by fork(): live blocks inherited */
#define GS_PROC_F_SETUID  0x2u
#define GS_PROC_F_LAUNCHER 0x4u /* a job's launcher (torchrun, srun, mpirun): no rank */

/* Synthetic frames: x86-64 user code never has bit 63 set, so a stack node
 * whose ip has it is a Python frame: bits 32..62 the PYCODE id, 0..31 the line. */
#define GS_IP_PYFRAME      (1ull << 63)

#endif /* GCSPY_TRACE_FORMAT_H */
