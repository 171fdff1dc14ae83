/*
 * Human units for text: the text report, the CI gate's verdict lines and
 * JUnit failure bodies print sizes and durations the same way.
 */
#ifndef GCSPY_FMT_H
#define GCSPY_FMT_H

#include <stdint.h>

/* "1.5 MiB", "512 bytes" (buf of 32). */
const char *gs_fmt_bytes(char *buf, uint64_t n);
/* "1.234 s", "12.5 ms", "800 us" (buf of 32). */
const char *gs_fmt_ns(char *buf, uint64_t ns);

#endif /* GCSPY_FMT_H */
