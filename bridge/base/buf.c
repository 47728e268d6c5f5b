/* buf: a growable byte buffer with a hard size cap. */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "utf8.h"

void buf_init(buf_t *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void buf_free(buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void buf_reset(buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void buf_reset_shrink(buf_t *b, size_t keep)
{
    if (b->cap > keep) {
        size_t max = b->max;
        buf_free(b);
        buf_init(b, max);
    }
    buf_reset(b);
}

static int s_reserve(buf_t *b, size_t extra)
{
    if (b->max && (extra > b->max || b->len > b->max - extra))
        return -1;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
    return 0;
}

int buf_append(buf_t *b, const void *p, size_t n)
{
    if (s_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_puts(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_putc(buf_t *b, char c)
{
    return buf_append(b, &c, 1);
}

int buf_printf(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || s_reserve(b, (size_t)n) < 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int buf_append_utf8(buf_t *b, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t ok = utf8_valid_prefix(s + i, n - i);
        if (buf_append(b, s + i, ok) < 0)
            return -1;
        i += ok;
        if (i < n) {
            if (buf_append(b, "\xEF\xBF\xBD", 3) < 0)
                return -1;
            i++;
        }
    }
    return 0;
}

int buf_put_json_str(buf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t start_len = b->len;
    if (buf_putc(b, '"') < 0)
        return -1;
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t run = i;
        /* Copy runs of plain characters in one go. */
        while (run < n && (unsigned char)s[run] >= 0x20 && (unsigned char)s[run] < 0x80 &&
               s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i) {
            if (buf_append(b, s + i, run - i) < 0)
                goto too_big;
            i = run;
            continue;
        }
        char esc[7];
        const char *out = esc;
        size_t outn = 2;
        esc[0] = '\\';
        if (c == '"' || c == '\\') {
            esc[1] = (char)c;
        } else if (c == '\n') {
            esc[1] = 'n';
        } else if (c == '\r') {
            esc[1] = 'r';
        } else if (c == '\t') {
            esc[1] = 't';
        } else if (c < 0x20) {
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            outn = 6;
        } else {
            size_t clen = utf8_valid_char(s + i, n - i);
            if (clen) {
                out = s + i;
                outn = clen;
            } else {
                out = "\xEF\xBF\xBD"; /* U+FFFD for a byte that is not valid UTF-8 */
                outn = 3;
                clen = 1;
            }
            if (buf_append(b, out, outn) < 0)
                goto too_big;
            i += clen;
            continue;
        }
        if (buf_append(b, out, outn) < 0)
            goto too_big;
        i++;
    }
    if (buf_putc(b, '"') < 0)
        goto too_big;
    return 0;
too_big:
    b->len = start_len;
    if (b->data)
        b->data[b->len] = '\0';
    return -1;
}

void buf_consume(buf_t *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *buf_take(buf_t *b)
{
    char *p = b->data ? b->data : xstrdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

const char *buf_str(const buf_t *b)
{
    return b->data ? b->data : "";
}
