/* nbjson: the file API's JSON in bounded memory (see nbjson.h). */
#include "nbjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "utf8.h"

struct nbjson {
    const char *s;  /* borrowed text */
    size_t n;
    uint32_t count; /* values */
    uint32_t *off;  /* where value k starts in s */
    uint32_t *end;  /* the first value after k's subtree */
};

/* The scanner: one pass counts (off == NULL), the next fills the tape. */
typedef struct {
    const char *s;
    size_t n, i;
    uint32_t count;
    uint32_t *off, *end;
    nbjson_type_t root;
    char *why;
    size_t whylen;
} s_scan_t;

static bool s_fail(s_scan_t *p, const char *what)
{
    if (p->i >= p->n)
        snprintf(p->why, p->whylen, "unexpected end of data at byte %zu", p->i);
    else
        snprintf(p->why, p->whylen, "%s at byte %zu", what, p->i);
    return false;
}

static void s_ws(s_scan_t *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\n' || p->s[p->i] == '\r' || p->s[p->i] == '\t'))
        p->i++;
}

static int s_hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A string token at p->i (its opening quote). */
static bool s_string(s_scan_t *p)
{
    const char *s = p->s;
    size_t n = p->n, i = p->i + 1;
    for (;;) {
        while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
            i++;
        if (i >= n) {
            p->i = i;
            return s_fail(p, "");
        }
        unsigned char c = (unsigned char)s[i];
        if (c == '"') {
            p->i = i + 1;
            return true;
        }
        if (c == '\\') {
            if (i + 1 >= n) {
                p->i = n;
                return s_fail(p, "");
            }
            char e = s[i + 1];
            if (e == 'u') {
                for (int k = 0; k < 4; k++)
                    if (i + 2 + k >= n || s_hex(s[i + 2 + k]) < 0) {
                        p->i = i;
                        return s_fail(p, "invalid \\u escape");
                    }
                i += 6;
            } else if (e && strchr("\"\\/bfnrt", e)) {
                i += 2;
            } else {
                p->i = i;
                return s_fail(p, "invalid escape in a string");
            }
            continue;
        }
        if (c < 0x20) {
            p->i = i;
            return s_fail(p, "control character in a string (it must be escaped)");
        }
        size_t l = utf8_valid_char(s + i, n - i);
        if (!l) {
            p->i = i;
            return s_fail(p, "invalid UTF-8");
        }
        i += l;
    }
}

static bool s_digits(s_scan_t *p)
{
    size_t i0 = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
        p->i++;
    return p->i > i0;
}

/* A number at p->i; *real: it has a fraction or an exponent. */
static bool s_number(s_scan_t *p, bool *real)
{
    *real = false;
    if (p->s[p->i] == '-')
        p->i++;
    if (p->i < p->n && p->s[p->i] == '0')
        p->i++;
    else if (!s_digits(p))
        return s_fail(p, "invalid number");
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        *real = true;
        if (!s_digits(p))
            return s_fail(p, "invalid number");
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        *real = true;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
            p->i++;
        if (!s_digits(p))
            return s_fail(p, "invalid number");
    }
    if (p->i < p->n && ((p->s[p->i] >= '0' && p->s[p->i] <= '9') || p->s[p->i] == '.'))
        return s_fail(p, "invalid number");
    return true;
}

static bool s_value(s_scan_t *p, int depth, nbjson_type_t *type);

/* The node for a value (or key) starting at p->i. */
static uint32_t s_node(s_scan_t *p)
{
    uint32_t k = p->count++;
    if (p->off)
        p->off[k] = (uint32_t)p->i;
    return k;
}

static bool s_container(s_scan_t *p, int depth, bool object)
{
    if (depth >= NBJSON_DEPTH)
        return s_fail(p, object ? "an object nested deeper than 64 levels"
                                : "an array nested deeper than 64 levels");
    char close = object ? '}' : ']';
    p->i++;
    s_ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        return true;
    }
    for (;;) {
        nbjson_type_t t;
        if (object) {
            s_ws(p);
            if (p->i >= p->n || p->s[p->i] != '"')
                return s_fail(p, "expected a string key");
            uint32_t k = s_node(p);
            if (!s_string(p))
                return false;
            if (p->end)
                p->end[k] = k + 1;
            s_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':')
                return s_fail(p, "expected ':'");
            p->i++;
        }
        if (!s_value(p, depth + 1, &t))
            return false;
        s_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
            return true;
        }
        return s_fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static bool s_value(s_scan_t *p, int depth, nbjson_type_t *type)
{
    s_ws(p);
    if (p->i >= p->n)
        return s_fail(p, "");
    if (p->count == UINT32_MAX)
        return s_fail(p, "too many values");
    uint32_t k = s_node(p);
    char c = p->s[p->i];
    bool ok, real = false;
    if (c == '{' || c == '[') {
        *type = c == '{' ? NBJSON_OBJECT : NBJSON_ARRAY;
        ok = s_container(p, depth, c == '{');
    } else if (c == '"') {
        *type = NBJSON_STRING;
        ok = s_string(p);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        ok = s_number(p, &real);
        *type = real ? NBJSON_REAL : NBJSON_NUMBER;
    } else {
        static const char *const lits[] = {"true", "false", "null"};
        ok = false;
        *type = NBJSON_LITERAL;
        for (int l = 0; l < 3 && !ok; l++) {
            size_t ln = strlen(lits[l]);
            if (p->n - p->i >= ln && memcmp(p->s + p->i, lits[l], ln) == 0) {
                p->i += ln;
                ok = true;
            }
        }
        if (!ok)
            return s_fail(p, "unexpected character");
    }
    if (ok && p->end)
        p->end[k] = p->count;
    return ok;
}

static bool s_scan(s_scan_t *p)
{
    if (p->n > UINT32_MAX - 1)
        return s_fail(p, "text larger than 4 GiB");
    if (!s_value(p, 0, &p->root))
        return false;
    s_ws(p);
    if (p->i != p->n)
        return s_fail(p, "text after the JSON value");
    return true;
}

bool nbjson_validate(const char *text, size_t len, nbjson_type_t *type, char *why, size_t whylen)
{
    s_scan_t p = {.s = text, .n = len, .why = why, .whylen = whylen};
    if (!s_scan(&p))
        return false;
    if (type)
        *type = p.root;
    return true;
}

nbjson_t *nbjson_parse(const char *text, size_t len, char *why, size_t whylen)
{
    s_scan_t p = {.s = text, .n = len, .why = why, .whylen = whylen};
    if (!s_scan(&p))
        return NULL;
    nbjson_t *self = xcalloc(1, sizeof *self);
    self->s = text;
    self->n = len;
    self->count = p.count;
    self->off = xmalloc((size_t)p.count * sizeof *self->off);
    self->end = xmalloc((size_t)p.count * sizeof *self->end);
    s_scan_t q = {.s = text, .n = len, .off = self->off, .end = self->end, .why = why, .whylen = whylen};
    s_scan(&q); /* the same text: it succeeds again, and fills the tape */
    return self;
}

void nbjson_free(nbjson_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->off);
    free((*self_p)->end);
    free(*self_p);
    *self_p = NULL;
}

nbjson_type_t nbjson_type(const nbjson_t *self, uint32_t v)
{
    char c = self->s[self->off[v]];
    if (c == '{')
        return NBJSON_OBJECT;
    if (c == '[')
        return NBJSON_ARRAY;
    if (c == '"')
        return NBJSON_STRING;
    if (c == '-' || (c >= '0' && c <= '9')) {
        size_t i = self->off[v] + 1;
        while (i < self->n && strchr("0123456789", self->s[i]) && self->s[i])
            i++;
        return i < self->n && (self->s[i] == '.' || self->s[i] == 'e' || self->s[i] == 'E') ? NBJSON_REAL
                                                                                           : NBJSON_NUMBER;
    }
    return NBJSON_LITERAL;
}

/* Appends the code point cp as UTF-8. */
static int s_put_cp(buf_t *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return buf_append(b, u, n);
}

static uint32_t s_u4(const char *s)
{
    return (uint32_t)(s_hex(s[0]) << 12 | s_hex(s[1]) << 8 | s_hex(s[2]) << 4 | s_hex(s[3]));
}

int nbjson_string(const nbjson_t *self, uint32_t v, buf_t *b)
{
    const char *s = self->s;
    size_t i = self->off[v] + 1; /* valid: the scanner checked it */
    for (;;) {
        size_t run = i;
        while (s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i && buf_append(b, s + i, run - i) < 0)
            return -1;
        i = run;
        if (s[i] == '"')
            return 0;
        char e = s[i + 1];
        int rc;
        if (e != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            rc = buf_putc(b, to[strchr(from, e) - from]);
            i += 2;
        } else {
            uint32_t cp = s_u4(s + i + 2);
            i += 6;
            if (cp >= 0xD800 && cp < 0xDC00 && s[i] == '\\' && s[i + 1] == 'u' && s_u4(s + i + 2) >= 0xDC00 &&
                s_u4(s + i + 2) < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (s_u4(s + i + 2) - 0xDC00);
                i += 6;
            } else if (cp >= 0xD800 && cp < 0xE000) {
                cp = 0xFFFD; /* a lone surrogate, as json-c reads it */
            }
            rc = s_put_cp(b, cp);
        }
        if (rc < 0)
            return -1;
    }
}

/* A key as compared: its raw bytes when it has no escape, else decoded. */
typedef struct {
    const char *p;
    size_t len;
    uint32_t key; /* the key's value number; its value is key + 1 */
    char *owned;  /* decoded copy, or NULL */
} s_key_t;

static int s_key_cmp(const void *a, const void *b)
{
    const s_key_t *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->key < y->key ? -1 : 1; /* document order among equal keys */
}

static void s_key_of(const nbjson_t *self, uint32_t k, s_key_t *out)
{
    const char *s = self->s + self->off[k] + 1;
    size_t n = 0;
    while (s[n] != '"' && s[n] != '\\')
        n++;
    out->key = k;
    out->owned = NULL;
    if (s[n] == '"') {
        out->p = s;
        out->len = n;
        return;
    }
    buf_t b;
    buf_init(&b, 0);
    nbjson_string(self, k, &b);
    out->len = b.len;
    out->owned = buf_take(&b);
    out->p = out->owned;
}

/* The members of object v, sorted by key, a repeated key only once (its
 * last). Caller frees with s_keys_free. */
static s_key_t *s_keys(const nbjson_t *self, uint32_t v, size_t *count)
{
    size_t n = 0;
    for (uint32_t c = v + 1; c < self->end[v]; c = self->end[c + 1])
        n++;
    s_key_t *keys = xmalloc((n ? n : 1) * sizeof *keys);
    size_t i = 0;
    for (uint32_t c = v + 1; c < self->end[v]; c = self->end[c + 1])
        s_key_of(self, c, &keys[i++]);
    qsort(keys, n, sizeof *keys, s_key_cmp);
    size_t m = 0;
    for (i = 0; i < n; i++) {
        if (i + 1 < n && keys[i].len == keys[i + 1].len && memcmp(keys[i].p, keys[i + 1].p, keys[i].len) == 0) {
            free(keys[i].owned); /* a later one with the same key follows */
            continue;
        }
        keys[m++] = keys[i];
    }
    *count = m;
    return keys;
}

static void s_keys_free(s_key_t *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(keys[i].owned);
    free(keys);
}

static int s_indent(buf_t *b, int depth)
{
    if (buf_putc(b, '\n') < 0)
        return -1;
    for (int i = 0; i < depth; i++)
        if (buf_putc(b, ' ') < 0)
            return -1;
    return 0;
}

static int s_write(const nbjson_t *self, uint32_t v, int depth, buf_t *b, buf_t *tmp)
{
    const char *s = self->s + self->off[v];
    switch (*s) {
    case '{': {
        size_t n = 0;
        s_key_t *keys = s_keys(self, v, &n);
        int rc = buf_puts(b, n ? "{" : "{}");
        for (size_t i = 0; i < n && rc == 0; i++) {
            buf_reset(tmp);
            rc = s_indent(b, depth + 1);
            if (rc == 0)
                rc = nbjson_string(self, keys[i].key, tmp);
            if (rc == 0)
                rc = buf_put_json_str(b, tmp->data ? tmp->data : "", tmp->len);
            if (rc == 0)
                rc = buf_puts(b, ": ");
            if (rc == 0)
                rc = s_write(self, keys[i].key + 1, depth + 1, b, tmp);
            if (rc == 0 && i + 1 < n)
                rc = buf_putc(b, ',');
        }
        if (rc == 0 && n) {
            rc = s_indent(b, depth);
            if (rc == 0)
                rc = buf_putc(b, '}');
        }
        s_keys_free(keys, n);
        return rc;
    }
    case '[': {
        if (self->end[v] == v + 1)
            return buf_puts(b, "[]");
        if (buf_putc(b, '[') < 0)
            return -1;
        for (uint32_t c = v + 1; c < self->end[v]; c = self->end[c]) {
            if (s_indent(b, depth + 1) < 0 || s_write(self, c, depth + 1, b, tmp) < 0)
                return -1;
            if (self->end[c] < self->end[v] && buf_putc(b, ',') < 0)
                return -1;
        }
        if (s_indent(b, depth) < 0)
            return -1;
        return buf_putc(b, ']');
    }
    case '"':
        buf_reset(tmp);
        if (nbjson_string(self, v, tmp) < 0)
            return -1;
        return buf_put_json_str(b, tmp->data ? tmp->data : "", tmp->len);
    default: {
        size_t n = 0;
        while (self->off[v] + n < self->n && strchr("-+.0123456789eEtruefalsn", s[n]) && s[n])
            n++;
        if (n == 2 && memcmp(s, "-0", 2) == 0) /* an integer -0 is 0, as json-c and Python read it */
            return buf_putc(b, '0');
        return buf_append(b, s, n);
    }
    }
}

int64_t nbjson_member(const nbjson_t *self, uint32_t v, const char *key)
{
    if (nbjson_type(self, v) != NBJSON_OBJECT)
        return -1;
    size_t klen = strlen(key);
    int64_t found = -1;
    buf_t tmp;
    buf_init(&tmp, klen + 1);
    for (uint32_t c = v + 1; c < self->end[v]; c = self->end[c + 1]) {
        buf_reset(&tmp);
        if (nbjson_string(self, c, &tmp) == 0 && tmp.len == klen && memcmp(tmp.data, key, klen) == 0)
            found = c + 1;
    }
    buf_free(&tmp);
    return found;
}

int nbjson_write_nb(const nbjson_t *self, uint32_t v, buf_t *b)
{
    buf_t tmp; /* a string's decoded text, reused */
    buf_init(&tmp, 0);
    int rc = s_write(self, v, 0, b, &tmp);
    buf_free(&tmp);
    return rc;
}
