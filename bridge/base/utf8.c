/* utf8: character boundaries and offset conversions. */
#include "utf8.h"

#include <stdint.h>

size_t utf8_valid_char(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (n == 0)
        return 0;
    if (p[0] < 0x80)
        return 1;
    size_t len;
    uint32_t cp;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        len = 2;
        cp = p[0] & 0x1F;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        len = 3;
        cp = p[0] & 0x0F;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        len = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

size_t utf8_floor(const char *s, size_t len, size_t n)
{
    if (n >= len)
        return len;
    /* Back up over at most 3 continuation bytes. */
    size_t i = n;
    while (i > 0 && n - i < 3 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    if (((unsigned char)s[i] & 0xC0) == 0x80)
        return n; /* not UTF-8 here anyway: cut where asked */
    size_t clen = utf8_valid_char(s + i, len - i);
    if (clen && i + clen > n)
        return i;
    return n;
}

size_t utf8_valid_prefix(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t c = utf8_valid_char(s + i, n - i);
        if (!c)
            break;
        i += c;
    }
    return i;
}

size_t utf8_trim_tail(const char *s, size_t len)
{
    /* The last character starts at most 3 bytes before the end. */
    for (size_t i = len; i > 0 && len - i < 4; i--) {
        unsigned char c = (unsigned char)s[i - 1];
        if ((c & 0xC0) == 0x80)
            continue;
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return len - (i - 1) < need ? i - 1 : len;
    }
    return len;
}

size_t utf8_count(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n;) {
        size_t c = utf8_valid_char(s + i, n - i);
        i += c ? c : 1;
        count++;
    }
    return count;
}

size_t utf8_offset(const char *s, size_t len, size_t cp)
{
    size_t i = 0;
    while (i < len && cp > 0) {
        size_t c = utf8_valid_char(s + i, len - i);
        i += c ? c : 1;
        cp--;
    }
    return i;
}

size_t utf8_utf16_count(const char *s, size_t n)
{
    size_t units = 0;
    for (size_t i = 0; i < n;) {
        size_t c = utf8_valid_char(s + i, n - i);
        units += c == 4 ? 2 : 1;
        i += c ? c : 1;
    }
    return units;
}

size_t utf8_utf16_offset(const char *s, size_t len, size_t u)
{
    size_t i = 0;
    while (i < len) {
        size_t c = utf8_valid_char(s + i, len - i);
        size_t w = c == 4 ? 2 : 1;
        if (u < w)
            break;
        u -= w;
        i += c ? c : 1;
    }
    return i;
}

static int s_is_wide(uint32_t cp)
{
    return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
           (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
           (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
           (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
           (cp >= 0x20000 && cp <= 0x3FFFD);
}

size_t utf8_width(const char *s, size_t n)
{
    size_t w = 0;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t c = utf8_valid_char(s + i, n - i);
        if (!c) {
            w++;
            i++;
            continue;
        }
        uint32_t cp = c == 1 ? p[i] : c == 2 ? (uint32_t)(p[i] & 0x1F) : c == 3 ? (uint32_t)(p[i] & 0x0F) : (uint32_t)(p[i] & 0x07);
        for (size_t k = 1; k < c; k++)
            cp = (cp << 6) | (p[i + k] & 0x3F);
        /* Combining marks take no column. */
        if (!(cp >= 0x300 && cp <= 0x36F))
            w += s_is_wide(cp) ? 2 : 1;
        i += c;
    }
    return w;
}
