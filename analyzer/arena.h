/*
 * A bump allocator for the analysis results. A result (struct gs_result)
 * outlives the model that produced it (several traces are analysed one after
 * the other, each model freed before the next is read), and it holds many
 * small strings and arrays: frames, labels, leak groups. Putting them all in
 * one arena makes the result self-contained and freed in one call, with no
 * per-object ownership to get wrong.
 *
 * Allocation failure returns NULL (and is remembered in a->failed so a caller
 * may check once after building a whole structure).
 */
#ifndef GCSPY_ARENA_H
#define GCSPY_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct gs_arena_blk;

struct gs_arena {
    struct gs_arena_blk *head;
    size_t used, cap;   /* of head */
    int failed;
};

void *gs_arena_alloc(struct gs_arena *a, size_t n);   /* zeroed, 16-aligned */
void *gs_arena_calloc(struct gs_arena *a, size_t n, size_t size);
char *gs_arena_strdup(struct gs_arena *a, const char *s);
/* A copy of n bytes as a NUL-terminated string (NUL bytes inside become ' '
 * when spaces is set, so argv strings print as a command line). */
char *gs_arena_strndup(struct gs_arena *a, const void *s, size_t n, int spaces);
char *gs_arena_printf(struct gs_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void gs_arena_free(struct gs_arena *a);

#endif /* GCSPY_ARENA_H */
