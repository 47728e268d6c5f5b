/* lookpath: parses look's `at` paths into segments. */
#include "lookpath.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "mem.h"

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
        snprintf(err, errlen, "no path given");
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
        snprintf(err, errlen, "the path is empty; give a variable name such as `data` or `data.scores.0`");
        return NULL;
    }
    if (len > LOOKPATH_MAX_LEN) {
        snprintf(err, errlen, "the path is longer than %d characters", LOOKPATH_MAX_LEN);
        return NULL;
    }
    char *copy = xstrndup(path, len);
    const char *p = copy;
    buf_t j, tok;
    buf_init(&j, 0);
    buf_init(&tok, 0);
    buf_putc(&j, '[');
    int nseg = 0;
    int first = 1;
    while (*p) {
        if (++nseg > LOOKPATH_MAX_SEGMENTS) {
            snprintf(err, errlen, "the path has more than %d parts", LOOKPATH_MAX_SEGMENTS);
            goto fail;
        }
        buf_reset(&tok);
        if (*p == '[') {
            if (first) {
                snprintf(err, errlen, "the path must start with a name, e.g. data[0]");
                goto fail;
            }
            p++;
            while (*p == ' ')
                p++;
            if (*p == '\'' || *p == '"') {
                if (s_quoted(&p, &tok) < 0) {
                    snprintf(err, errlen, "unterminated quote in `%s`", copy);
                    goto fail;
                }
                s_segment(&j, "key", tok.data ? tok.data : "", tok.len, 0, 0);
            } else {
                char *end = NULL;
                errno = 0;
                long long v = strtoll(p, &end, 10);
                if (end == p || errno) {
                    snprintf(err, errlen, "expected an integer or a quoted key inside [...] in `%s`", copy);
                    goto fail;
                }
                p = end;
                s_segment(&j, "index", NULL, 0, 1, v);
            }
            while (*p == ' ')
                p++;
            if (*p != ']') {
                snprintf(err, errlen, "missing ] in `%s`", copy);
                goto fail;
            }
            p++;
        } else {
            if (!first) {
                if (*p != '.') {
                    snprintf(err, errlen, "expected . or [ after `%.*s` in `%s`", (int)(p - copy), copy, copy);
                    goto fail;
                }
                p++;
            }
            if (*p == '\'' || *p == '"') {
                if (first) {
                    snprintf(err, errlen, "the path must start with a name, not a quoted key");
                    goto fail;
                }
                if (s_quoted(&p, &tok) < 0) {
                    snprintf(err, errlen, "unterminated quote in `%s`", copy);
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
                    snprintf(err, errlen, "empty part in `%s` (two dots in a row?)", copy);
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
