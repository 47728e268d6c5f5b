/* lookpath: parses look's `at` paths into segments. */
#include "lookpath.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "mem.h"
#include "utf8.h"

#define EXCERPT_MAX 100 /* bytes of the path quoted in an error message */

/* Formats an error message. Paths are quoted through s_excerpt, and the
 * message is cut on a character boundary if err is too small anyway: it is
 * shown to the client inside a JSON string, which must stay valid UTF-8. */
static void s_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void s_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    err[utf8_trim_tail(err, strlen(err))] = '\0';
}

/* At most EXCERPT_MAX bytes of s[0..n), cut between characters, with "…"
 * when something was left out. Returns out. */
static const char *s_excerpt(const char *s, size_t n, char out[EXCERPT_MAX + 4])
{
    size_t keep = n <= EXCERPT_MAX ? n : utf8_floor(s, n, EXCERPT_MAX);
    memcpy(out, s, keep);
    if (keep < n) {
        memcpy(out + keep, "…", 3);
        keep += 3;
    }
    out[keep] = '\0';
    return out;
}

/* Reads a quoted string starting at *p (the opening quote); appends its
 * unescaped value to out. Returns 0, or -1 if unterminated. */
static int s_quoted(const char **p, buf_t *out)
{
    char q = **p;
    const char *s = *p + 1;
    while (*s && *s != q) {
        if (*s == '\\' && (s[1] == q || s[1] == '\\')) {
            buf_putc(out, s[1]);
            s += 2;
            continue;
        }
        buf_putc(out, *s++);
    }
    if (*s != q)
        return -1;
    *p = s + 1;
    return 0;
}

static void s_segment(buf_t *j, const char *t, const char *v, size_t n, int is_int, long long iv)
{
    if (j->len > 1)
        buf_putc(j, ',');
    buf_printf(j, "{\"t\":\"%s\",\"v\":", t);
    if (is_int)
        buf_printf(j, "%lld", iv);
    else
        buf_put_json_str(j, v, n);
    buf_putc(j, '}');
}

char *lookpath_parse(const char *path, char *err, size_t errlen)
{
    if (!path) {
        s_fail(err, errlen, "no path given");
        return NULL;
    }
    size_t len = strlen(path);
    while (len && isspace((unsigned char)path[len - 1]))
        len--;
    while (len && isspace((unsigned char)*path)) {
        path++;
        len--;
    }
    if (len == 0) {
        s_fail(err, errlen, "the path is empty; give a variable name such as `data` or `data.scores.0`");
        return NULL;
    }
    if (len > LOOKPATH_MAX_LEN) {
        s_fail(err, errlen, "the path is longer than %d characters", LOOKPATH_MAX_LEN);
        return NULL;
    }
    char *copy = xstrndup(path, len);
    char ex[EXCERPT_MAX + 4], ex2[EXCERPT_MAX + 4]; /* quoted parts of error messages */
    const char *p = copy;
    buf_t j, tok;
    buf_init(&j, 0);
    buf_init(&tok, 0);
    buf_putc(&j, '[');
    int nseg = 0;
    int first = 1;
    while (*p) {
        if (++nseg > LOOKPATH_MAX_SEGMENTS) {
            s_fail(err, errlen, "the path has more than %d parts", LOOKPATH_MAX_SEGMENTS);
            goto fail;
        }
        buf_reset(&tok);
        if (*p == '[') {
            if (first) {
                s_fail(err, errlen, "the path must start with a name, e.g. data[0]");
                goto fail;
            }
            p++;
            while (*p == ' ')
                p++;
            if (*p == '\'' || *p == '"') {
                if (s_quoted(&p, &tok) < 0) {
                    s_fail(err, errlen, "unterminated quote in `%s`", s_excerpt(copy, len, ex));
                    goto fail;
                }
                s_segment(&j, "key", tok.data ? tok.data : "", tok.len, 0, 0);
            } else {
                char *end = NULL;
                errno = 0;
                long long v = strtoll(p, &end, 10);
                if (end == p || errno) {
                    s_fail(err, errlen, "expected an integer or a quoted key inside [...] in `%s`",
                           s_excerpt(copy, len, ex));
                    goto fail;
                }
                p = end;
                s_segment(&j, "index", NULL, 0, 1, v);
            }
            while (*p == ' ')
                p++;
            if (*p != ']') {
                s_fail(err, errlen, "missing ] in `%s`", s_excerpt(copy, len, ex));
                goto fail;
            }
            p++;
        } else {
            if (!first) {
                if (*p != '.') {
                    s_fail(err, errlen, "expected . or [ after `%s` in `%s`", s_excerpt(copy, (size_t)(p - copy), ex2),
                           s_excerpt(copy, len, ex));
                    goto fail;
                }
                p++;
            }
            if (*p == '\'' || *p == '"') {
                if (first) {
                    s_fail(err, errlen, "the path must start with a name, not a quoted key");
                    goto fail;
                }
                if (s_quoted(&p, &tok) < 0) {
                    s_fail(err, errlen, "unterminated quote in `%s`", s_excerpt(copy, len, ex));
                    goto fail;
                }
                s_segment(&j, "key", tok.data ? tok.data : "", tok.len, 0, 0);
            } else {
                const char *s = p;
                while (*p && *p != '.' && *p != '[')
                    p++;
                size_t n = (size_t)(p - s);
                while (n && s[n - 1] == ' ')
                    n--;
                while (n && *s == ' ') {
                    s++;
                    n--;
                }
                if (n == 0) {
                    s_fail(err, errlen, "empty part in `%s` (two dots in a row?)", s_excerpt(copy, len, ex));
                    goto fail;
                }
                s_segment(&j, "name", s, n, 0, 0);
            }
        }
        first = 0;
    }
    buf_putc(&j, ']');
    buf_free(&tok);
    free(copy);
    return buf_take(&j);
fail:
    buf_free(&tok);
    buf_free(&j);
    free(copy);
    return NULL;
}
