/*
 * Strict UTF-8, for every writer of text that came from a trace or the
 * command line (JSON, JUnit XML, the text report, error lines): one
 * definition of a well-formed sequence, so the formats cannot disagree on
 * which bytes pass. Well-formed is RFC 3629's: no overlong form, no
 * surrogate (U+D800..U+DFFF), nothing above U+10FFFF, no 0xC0, 0xC1 or
 * 0xF5..0xFF byte. What each writer does with the rest is its own choice
 * (JSON writes U+FFFD, XML and the terminal '?'), and so is which code
 * points it must still refuse (XML 1.0: U+FFFE and U+FFFF; a terminal: the
 * C1 controls U+0080..U+009F, which act like escape sequences there).
 * Header-only: reporters and the CLI's messages use it alike.
 */
#ifndef GCSPY_UTF8_H
#define GCSPY_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length (1 to 4) of the well-formed sequence at p[0, n), with its code
 * point in *cp; 0 when p[0] does not start one (or n is 0). A sequence cut
 * by the end of p[0, n) is not well-formed here: a caller that streams text
 * in pieces holds back what gs_utf8_partial() says may still complete. */
static inline size_t gs_utf8_seq(const unsigned char *p, size_t n, uint32_t *cp)
{
    if (!n)
        return 0;
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!len || len > n)
        return 0;
    uint32_t v = c & (0x7fu >> len);
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (p[k] & 0x3fu);
    }
    /* overlong 3- and 4-byte forms, surrogates, past U+10FFFF (2-byte
     * overlongs are the 0xC0/0xC1 leads refused above) */
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10ffff)) ||
        (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* Whether p[0, n) (n < 4) is the start of a well-formed sequence that more
 * bytes could complete. */
static inline int gs_utf8_partial(const unsigned char *p, size_t n)
{
    unsigned char buf[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n && i < 4; i++)
        buf[i] = p[i];
    if (!n || n >= 4)
        return 0;
    size_t len = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    if (n >= len)
        return 0;
    /* complete it with the smallest continuation bytes that keep it valid
     * and see whether any completion is well-formed: try 0x80 and 0xbf */
    uint32_t cp;
    for (unsigned fill = 0x80; fill <= 0xbf; fill += 0x3f) {
        for (size_t i = n; i < len; i++)
            buf[i] = (unsigned char)fill;
        if (gs_utf8_seq(buf, len, &cp) == len)
            return 1;
    }
    return 0;
}

/* A code point a terminal shows as text: not a C0 or C1 control, not DEL
 * (newline and tab are the caller's business). */
static inline int gs_utf8_printable(uint32_t cp)
{
    return cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp <= 0x9f);
}

/* src as one line of terminal text into dst (dstlen > 0, always
 * terminated): well-formed printable UTF-8 is copied, every other byte
 * (controls, newlines included, and what is not UTF-8) becomes '?'; cut
 * with "..." when it does not fit. For echoing a file's bytes in an error
 * line. Returns dst. */
static inline char *gs_utf8_clean(char *dst, size_t dstlen, const char *src)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t n = 0, left = 0;
    while (p[left])
        left++;
    while (left) {
        uint32_t cp;
        size_t len = gs_utf8_seq(p, left, &cp);
        int ok = len && gs_utf8_printable(cp);
        size_t w = ok ? len : 1;
        if (n + w + 4 > dstlen) {
            if (dstlen >= 4) {
                while (n + 4 > dstlen)
                    n--;
                dst[n++] = '.', dst[n++] = '.', dst[n++] = '.';
            }
            break;
        }
        for (size_t k = 0; k < w; k++)
            dst[n++] = ok ? (char)p[k] : '?';
        p += w;
        left -= w;
    }
    dst[n < dstlen ? n : dstlen - 1] = 0;
    return dst;
}

#endif /* GCSPY_UTF8_H */
