/*
 * The shim's own memory (mem.c): pages straight from mmap, registered so
 * the scanner never takes them for roots; the one growable-array helper;
 * and the libc-free utilities every layer above may use (logging,
 * formatting, reading a file, a keyed binary search).
 */
#ifndef GCSPY_MEM_H
#define GCSPY_MEM_H

#include "shim.h"

void *gs_pages_alloc(size_t bytes);          /* zeroed, or NULL */
void gs_pages_free(void *p, size_t bytes);
/* Faults in every page of [p, p + bytes) in one call (MADV_POPULATE_WRITE),
 * for a new array the caller is about to fill throughout (a hash table's
 * rehash): one kernel entry instead of one fault a page. Best effort: on a
 * kernel before 5.14, or short of memory, the pages fault as they are
 * touched, as without it. */
void gs_pages_prefault(void *p, size_t bytes);

/* Grows the array *v of *cap elements of elem bytes to hold at least need:
 * the capacity doubles (first when it was 0) until it does, the new array
 * comes from gs_pages_alloc and takes the old one's contents. 0, or -1 with
 * *v and *cap unchanged. GS_GROW(v, cap, need, first) for an array v. */
int gs_grow(void **v, size_t *cap, size_t need, size_t elem, size_t first);
#define GS_GROW(v, cap, need, first) \
    gs_grow((void **)&(v), &(cap), (need), sizeof *(v), (first))

/* A half-open address range. */
struct gs_range {
    uintptr_t lo, hi;
};
/* gcspy's own mappings, for the scanner (never roots). */
int gs_pages_ranges(struct gs_range *out, size_t max);
/* The registered ranges that overlap [lo, hi), at most max of them; and a
 * number that changes whenever the registry does. A scan reads root memory
 * long after it listed the mappings, while gcspy's writer thread maps and
 * unmaps its own pages: mark.c drops the words of pages registered by the
 * time it read them, and reads again when the registry changed meanwhile. */
int gs_pages_overlapping(uintptr_t lo, uintptr_t hi, struct gs_range *out, size_t max);
uint64_t gs_pages_gen(void);
void gs_pages_atfork_child(void); /* in a scan's forked child */

/* One line on stderr, "gcspy: ..." (write(2), no stdio, no malloc), when
 * descriptor 2 is still the file it was at gs_log_bind: never into a file
 * the program put there since (it closed 0-2 and opened its data files),
 * nor into whatever takes 2 when the program started with it closed. */
void gs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Takes the file descriptor 2 is now as gcspy's standard error (the
 * options' load, at start). */
void gs_log_bind(void);
/* vsnprintf-like into a buffer without malloc: %s %d %u %lu %llu %zu %x %lx %p %%. */
int gs_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Whole-file read into buf (no stdio); returns bytes read or -1. */
ssize_t gs_read_file(const char *path, char *buf, size_t len);

/* Sorted records whose first member is a uint64_t key (pool segments and
 * blocks, torch.c's code ranges): how many have a key <= k, so the record
 * that may hold k is [result - 1]. */
static inline size_t gs_keyed_upto(const void *v, size_t n, size_t stride, uint64_t k)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (*(const uint64_t *)(const void *)((const char *)v + m * stride) <= k)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

#endif /* GCSPY_MEM_H */
