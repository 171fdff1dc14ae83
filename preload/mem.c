/*
 * The shim's own memory, the growable-array helper, and the few libc-free
 * utilities (mem.h).
 *
 * Everything the shim keeps (tables, buffers, per-thread state) comes from
 * mmap here, never from the allocator it watches: its memory must not show up
 * in the program's heap, must not recurse into the hooks, and must stay out of
 * the scanner's view of the heap. Formatting and logging likewise avoid stdio
 * and malloc, so they are safe inside hooks, atfork handlers and exit paths.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string.h>

#include "mem.h"

/* Registry of gcspy's mappings, so the scanner never takes them for roots
 * (gcspy's tables point at every block: as roots they would hide every
 * leak). Its own array is registered as its first entry. */
#define GS_MAX_PAGE_RANGES 65536
static struct gs_range *ranges;
static size_t nranges;
static atomic_int ranges_lock;
/* Bumped on every change to the registry (under its lock), so that a reader
 * of root memory can tell that a range was registered or dropped while it
 * read (gs_pages_gen). */
static _Atomic uint64_t ranges_gen;

static void reg_add(uintptr_t lo, size_t len)
{
    gs_spin_lock(&ranges_lock);
    if (!ranges) {
        size_t sz = GS_MAX_PAGE_RANGES * sizeof *ranges;
        void *r = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (r != MAP_FAILED) {
            ranges = r;
            ranges[nranges++] = (struct gs_range){(uintptr_t)r, (uintptr_t)r + sz};
        }
    }
    if (ranges && nranges < GS_MAX_PAGE_RANGES)
        ranges[nranges++] = (struct gs_range){lo, lo + len};
    atomic_fetch_add(&ranges_gen, 1);
    gs_spin_unlock(&ranges_lock);
}

/* By both ends: the pages are unmapped before their entry goes (see
 * gs_pages_free), so a new mapping at the same address may be registered
 * by then, with another length. */
static void reg_del(uintptr_t lo, size_t len)
{
    gs_spin_lock(&ranges_lock);
    for (size_t i = 0; i < nranges; i++)
        if (ranges[i].lo == lo && ranges[i].hi == lo + len) {
            ranges[i] = ranges[--nranges];
            break;
        }
    atomic_fetch_add(&ranges_gen, 1);
    gs_spin_unlock(&ranges_lock);
}

/* In a scan's forked child (only the scanning thread exists there). */
void gs_pages_atfork_child(void)
{
    atomic_store(&ranges_lock, 0);
}

int gs_pages_ranges(struct gs_range *out, size_t max)
{
    gs_spin_lock(&ranges_lock);
    size_t n = nranges < max ? nranges : max;
    memcpy(out, ranges, n * sizeof *out);
    gs_spin_unlock(&ranges_lock);
    return (int)n;
}

int gs_pages_overlapping(uintptr_t lo, uintptr_t hi, struct gs_range *out, size_t max)
{
    size_t n = 0;
    gs_spin_lock(&ranges_lock);
    for (size_t i = 0; i < nranges && n < max; i++)
        if (ranges[i].lo < hi && ranges[i].hi > lo)
            out[n++] = ranges[i];
    gs_spin_unlock(&ranges_lock);
    return (int)n;
}

uint64_t gs_pages_gen(void)
{
    return atomic_load(&ranges_gen);
}

void *gs_pages_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    reg_add((uintptr_t)p, bytes);
    return p;
}

void gs_pages_prefault(void *p, size_t bytes)
{
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    if (p && bytes)
        madvise(p, bytes, MADV_POPULATE_WRITE); /* a failure leaves plain faults */
}

void gs_pages_free(void *p, size_t bytes)
{
    /* Unmapped first, then unregistered: pages that are mapped, hold gcspy's
     * data and are not registered would be roots for a scan that read the
     * registry just then (the writer frees while the world is stopped). */
    if (p) {
        munmap(p, bytes);
        reg_del((uintptr_t)p, bytes);
    }
}

int gs_grow(void **v, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first;
    while (c < need)
        c *= 2;
    void *n = gs_pages_alloc(c * elem);
    if (!n)
        return -1;
    if (*cap) {
        gs_pages_prefault(n, *cap * elem); /* what the copy writes, at once */
        memcpy(n, *v, *cap * elem);
    }
    gs_pages_free(*v, *cap * elem);
    *v = n;
    *cap = c;
    return 0;
}

static char *put_num(char *o, char *end, unsigned long long v, unsigned base, int neg)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (neg && o < end)
        *o++ = '-';
    while (n && o < end)
        *o++ = tmp[--n];
    return o;
}

static int vfmt(char *buf, size_t len, const char *f, va_list ap)
{
    char *o = buf, *end = buf + (len ? len - 1 : 0);
    for (; *f && o < end; f++) {
        if (*f != '%') {
            *o++ = *f;
            continue;
        }
        f++;
        int l = 0;
        while (*f == 'l' || *f == 'z') {
            l++;
            f++;
        }
        switch (*f) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            for (s = s ? s : "(null)"; *s && o < end;)
                *o++ = *s++;
            break;
        }
        case 'd': {
            long long v = l ? va_arg(ap, long long) : va_arg(ap, int);
            o = put_num(o, end, v < 0 ? -(unsigned long long)v : (unsigned long long)v, 10, v < 0);
            break;
        }
        case 'u':
            o = put_num(o, end, l ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned), 10, 0);
            break;
        case 'x':
            o = put_num(o, end, l ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned), 16, 0);
            break;
        case 'p':
            if (o + 2 <= end) {
                *o++ = '0';
                *o++ = 'x';
            }
            o = put_num(o, end, (uintptr_t)va_arg(ap, void *), 16, 0);
            break;
        case '%':
            *o++ = '%';
            break;
        default:
            break;
        }
        if (!*f)
            break;
    }
    if (len)
        *o = 0;
    return (int)(o - buf);
}

int gs_fmt(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfmt(buf, len, fmt, ap);
    va_end(ap);
    return n;
}

/* gcspy's standard error: the file descriptor 2 was at start (dev, ino);
 * bound 0 before gs_log_bind, -1 when 2 was closed then. */
static dev_t err_dev;
static ino_t err_ino;
static int err_bound;

void gs_log_bind(void)
{
    struct stat st;
    if (fstat(2, &st) == 0) {
        err_dev = st.st_dev;
        err_ino = st.st_ino;
        err_bound = 1;
    } else {
        err_bound = -1;
    }
}

static int err_is_ours(void)
{
    struct stat st;
    if (err_bound == 0)
        return 1;
    return err_bound > 0 && fstat(2, &st) == 0 && st.st_dev == err_dev && st.st_ino == err_ino;
}

void gs_log(const char *fmt, ...)
{
    if (gs_opt.quiet)
        return;
    int saved_errno = errno;
    int ours = err_is_ours();
    errno = saved_errno;
    if (!ours)
        return;
    char buf[1024] = "gcspy: ";
    va_list ap;
    va_start(ap, fmt);
    int n = 7 + vfmt(buf + 7, sizeof buf - 8, fmt, ap);
    va_end(ap);
    buf[n++] = '\n';
    int saved = errno;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(2, buf + off, (size_t)(n - off));
        if (w <= 0 && errno != EINTR)
            break;
        if (w > 0)
            off += w;
    }
    errno = saved;
}

ssize_t gs_read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return (ssize_t)got;
}
