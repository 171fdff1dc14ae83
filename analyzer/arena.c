/*
 * The result arena (arena.h): blocks of at least 64 KiB chained together;
 * a request larger than a block gets a block of its own.
 */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gs_arena_blk {
    struct gs_arena_blk *next;
    size_t pad;                 /* keeps data 16-aligned */
    unsigned char data[];
};

#define ARENA_BLOCK (64u << 10)

void *gs_arena_alloc(struct gs_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    if (!a->head || a->cap - a->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        struct gs_arena_blk *b = malloc(sizeof *b + cap);
        if (!b) {
            a->failed = 1;
            return NULL;
        }
        if (a->head && n > ARENA_BLOCK) {
            /* a big one-off: chain it behind the current block so the
             * current block's free space stays usable */
            b->next = a->head->next;
            a->head->next = b;
            memset(b->data, 0, n);
            return b->data;
        }
        b->next = a->head;
        a->head = b;
        a->used = 0;
        a->cap = cap;
    }
    void *p = a->head->data + a->used;
    a->used += n;
    memset(p, 0, n);
    return p;
}

void *gs_arena_calloc(struct gs_arena *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        a->failed = 1;
        return NULL;
    }
    return gs_arena_alloc(a, n * size);
}

char *gs_arena_strndup(struct gs_arena *a, const void *s, size_t n, int spaces)
{
    char *d = gs_arena_alloc(a, n + 1);
    if (!d)
        return NULL;
    if (n)
        memcpy(d, s, n);
    d[n] = 0;
    if (spaces) {
        for (size_t i = 0; i < n; i++)
            if (d[i] == 0)
                d[i] = ' ';
    }
    return d;
}

char *gs_arena_strdup(struct gs_arena *a, const char *s)
{
    if (!s)
        return NULL;
    return gs_arena_strndup(a, s, strlen(s), 0);
}

char *gs_arena_printf(struct gs_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        a->failed = 1;
        return NULL;
    }
    char *d = gs_arena_alloc(a, (size_t)n + 1);
    if (!d)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return d;
}

void gs_arena_free(struct gs_arena *a)
{
    struct gs_arena_blk *b = a->head;
    while (b) {
        struct gs_arena_blk *n = b->next;
        free(b);
        b = n;
    }
    memset(a, 0, sizeof *a);
}
