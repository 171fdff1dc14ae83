/*
 * Human units for text: the text report, the CI gate's verdict lines and
 * JUnit failure bodies print sizes and durations the same way; and frames
 * as one line for the exports and `gcspy diff`.
 */
#ifndef GCSPY_FMT_H
#define GCSPY_FMT_H

#include <stddef.h>
#include <stdint.h>

struct gs_frame;
struct gs_sitestat;

/* "1.5 MiB", "512 bytes" (buf of 32). */
const char *gs_fmt_bytes(char *buf, uint64_t n);
/* "1.234 s", "12.5 ms", "800 us" (buf of 32). */
const char *gs_fmt_ns(char *buf, uint64_t ns);

/* Trace-provided text made safe in place for a terminal and for formats
 * that require UTF-8 (protobuf strings): every byte that does not begin a
 * well-formed sequence of a printable code point (utf8.h) becomes '?', so
 * the length never grows. Returns s. */
char *gs_fmt_clean(char *s);
/* A frame as one line, the same in every export and `gcspy diff`:
 * "function file:line", "function", "module+0xoff" or "0xip" (buf of n
 * bytes; returns buf), cleaned (gs_fmt_clean). With no_line the line is
 * left out (pprof keeps it apart). */
const char *gs_frame_label(const struct gs_frame *f, char *buf, size_t n, int no_line);
/* Site s's stack as one line of folded text, the key `gcspy diff` matches
 * sites by and the stack of a collapsed line: prefix (when not NULL), then
 * the frames outermost first (gs_frame_label), ';' between, a ';' inside a
 * name made ':'; "stack ID" for a stack with no frames (not symbolized).
 * malloc'd; NULL when out of memory. */
char *gs_stack_text(const struct gs_sitestat *s, const char *prefix);

#endif /* GCSPY_FMT_H */
