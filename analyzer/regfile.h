/*
 * Opening the files the CLI is named or a trace names (traces, MODULE paths
 * to symbolize, suppression files, report outputs) so that no path can make
 * it wait forever: a FIFO opened for reading blocks until a writer comes,
 * one opened for writing until a reader does, and a read from a terminal or
 * a socket waits for input. Inputs must be regular files: they are opened
 * with O_NONBLOCK (so opening a FIFO returns at once), checked with fstat
 * before a byte is read, and refused otherwise ("not a regular file").
 * Outputs are never reached through a symbolic link (O_NOFOLLOW: a link
 * planted at the report's path cannot make gcspy overwrite its target) and
 * are opened with O_NONBLOCK too (a FIFO without a reader fails with ENXIO
 * instead of blocking); a regular file, a character device (/dev/null, a
 * terminal) or a FIFO with a reader is written, blocking again once open.
 * Header-only (static inline): the trace reader is linked alone into tools
 * and the reader's fuzz target.
 */
#ifndef GCSPY_REGFILE_H
#define GCSPY_REGFILE_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* gs_open_*'s return for a path that opened but is not a file of the kind
 * wanted (errno is then 0). */
#define GS_OPEN_NOT_REGULAR (-2)

/* O_NONBLOCK off again: the descriptor's reads and writes wait as usual
 * (a regular file's never do; a pipe's must, or stdio gives up on EAGAIN). */
static inline int gs_fd_blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

/* A regular file opened for reading: its descriptor, -1 with errno set, or
 * GS_OPEN_NOT_REGULAR (closed again, nothing read). */
static inline int gs_open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || (S_ISREG(st.st_mode) && gs_fd_blocking(fd))) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        errno = 0;
        return GS_OPEN_NOT_REGULAR;
    }
    return fd;
}

/* path created or truncated for writing (mode 0666 before the umask), never
 * through a symbolic link: its descriptor, or -1 with errno set (ELOOP for
 * a link, ENXIO for a FIFO nobody reads), or GS_OPEN_NOT_REGULAR for a
 * directory, a socket or a block device. */
static inline int gs_open_output(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW |
                            O_NONBLOCK, 0666);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || gs_fd_blocking(fd)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
        close(fd);
        errno = 0;
        return GS_OPEN_NOT_REGULAR;
    }
    return fd;
}

/* Why gs_open_* failed, for "PATH: WHY". */
static inline const char *gs_open_why(int rc)
{
    if (rc == GS_OPEN_NOT_REGULAR)
        return "not a regular file";
    if (errno == ELOOP)
        return "a symbolic link (not followed)";
    if (errno == ENXIO)
        return "a FIFO nobody reads, or a device that is not there";
    return strerror(errno);
}

#endif /* GCSPY_REGFILE_H */
