/* yaml_block: line-preserving edits of a block-style YAML mapping's top two
 * levels. */
#include "yaml_block.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "mem.h"

#define DEFAULT_INDENT 4   /* yaml.v3 (mcp2cli's writer) indents by 4 */

typedef enum { LINE_BLANK, LINE_COMMENT, LINE_CONTENT } s_kind_t;

struct yaml_block {
    char **lines;          /* owned, each without its '\n' (a '\r' stays) */
    size_t n, cap;
    bool final_newline;    /* the text ended with '\n' */
};

/* One entry of a section: its key line and its last content line. */
typedef struct {
    char *key;             /* owned */
    size_t start, last;
} s_entry_t;

typedef struct {
    bool found;
    size_t line;           /* the section's key line */
    size_t end;            /* first line after its block */
    bool empty_flow;       /* `section: {}` / `~` / `null` */
    int child;             /* entries' indentation (0 when none) */
    s_entry_t *entries;    /* owned */
    size_t nentries;
} s_section_t;

/* ------------------------------------------------------------ lines */

static s_kind_t s_kind(const char *l, int *indent, bool *tab)
{
    int i = 0;
    *tab = false;
    while (l[i] == ' ' || l[i] == '\t') {
        if (l[i] == '\t')
            *tab = true;
        i++;
    }
    *indent = i;
    if (l[i] == '\0' || (l[i] == '\r' && l[i + 1] == '\0'))
        return LINE_BLANK;
    if (l[i] == '#')
        return LINE_COMMENT;
    return LINE_CONTENT;
}

/* The value part of a line without its trailing comment and whitespace
 * (quotes respected). Caller owns the result. */
static char *s_strip_value(const char *v)
{
    while (*v == ' ')
        v++;
    size_t n = 0;
    char q = 0;
    for (; v[n]; n++) {
        char c = v[n];
        if (q) {
            if (c == '\\' && q == '"' && v[n + 1])
                n++;
            else if (c == q)
                q = 0;
        } else if ((c == '"' || c == '\'') && (n == 0 || v[n - 1] == ' ' || v[n - 1] == '[' || v[n - 1] == ',')) {
            q = c;
        } else if (c == '#' && n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) {
            break;
        }
    }
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
        n--;
    return xstrndup(v, n);
}

/* Decodes a one-line scalar: plain, 'single' or "double" quoted. NULL for
 * anything else (flow collections, block scalars, anchors, aliases, tags). */
static char *s_scalar(const char *v)
{
    if (!*v || strchr("[{|>&*!%@`", *v))
        return NULL;
    if (*v != '"' && *v != '\'')
        return xstrdup(v);
    char q = *v;
    buf_t b;
    buf_init(&b, 0);
    const char *p = v + 1;
    for (; *p; p++) {
        if (q == '\'' && *p == '\'') {
            if (p[1] == '\'') {
                buf_putc(&b, '\'');
                p++;
                continue;
            }
            break;
        }
        if (q == '"' && *p == '"')
            break;
        if (q == '"' && *p == '\\' && p[1]) {
            p++;
            switch (*p) {
            case 'n': buf_putc(&b, '\n'); break;
            case 't': buf_putc(&b, '\t'); break;
            case 'r': buf_putc(&b, '\r'); break;
            case '0': buf_putc(&b, '\0'); break;
            default: buf_putc(&b, *p); break; /* \" \\ \/ and friends */
            }
            continue;
        }
        buf_putc(&b, *p);
    }
    if (*p != q || p[1] != '\0') {
        buf_free(&b);
        return NULL; /* unterminated, or text after the closing quote */
    }
    return buf_take(&b);
}

/* Parses `key: value` at l (indentation already skipped). Returns 0 with
 * *key (owned) and *value (owned, comment stripped), or -1. */
static int s_key(const char *l, char **key, char **value)
{
    const char *colon = NULL;
    if (*l == '"' || *l == '\'') {
        char q = *l;
        const char *p = l + 1;
        while (*p && !(*p == q && !(q == '\'' && p[1] == '\''))) {
            if ((q == '"' && *p == '\\' && p[1]) || (q == '\'' && *p == '\'' && p[1] == '\''))
                p++;
            p++;
        }
        if (*p != q)
            return -1;
        const char *c = p + 1;
        while (*c == ' ')
            c++;
        if (*c != ':')
            return -1;
        char *qk = xstrndup(l, (size_t)(p + 1 - l));
        *key = s_scalar(qk);
        free(qk);
        if (!*key)
            return -1;
        colon = c;
    } else {
        if (strchr("-?[]{}&*!|>%@`#,", *l))
            return -1;
        for (const char *p = l; *p; p++) {
            if (*p == ':' && (p[1] == ' ' || p[1] == '\0' || p[1] == '\r' || p[1] == '\t')) {
                colon = p;
                break;
            }
            if (*p == '#' && p > l && p[-1] == ' ')
                break;
        }
        if (!colon)
            return -1;
        size_t n = (size_t)(colon - l);
        while (n && l[n - 1] == ' ')
            n--;
        if (n == 0)
            return -1;
        *key = xstrndup(l, n);
    }
    *value = s_strip_value(colon + 1);
    return 0;
}

/* ------------------------------------------------------------ structure */

static void s_section_free(s_section_t *s)
{
    for (size_t i = 0; i < s->nentries; i++)
        free(s->entries[i].key);
    free(s->entries);
    memset(s, 0, sizeof *s);
}

/* Checks the top level: every content line at column 0 is `key: ...`, no
 * tabs in the indentation of content, one document. */
static int s_check(const yaml_block_t *self, char *err, size_t errlen)
{
    bool seen_content = false;
    for (size_t i = 0; i < self->n; i++) {
        int ind;
        bool tab;
        const char *l = self->lines[i];
        s_kind_t k = s_kind(l, &ind, &tab);
        if (k != LINE_CONTENT)
            continue;
        bool first = !seen_content;
        seen_content = true;
        if (tab) {
            snprintf(err, errlen, "line %zu: a tab in the indentation (YAML allows only spaces there)", i + 1);
            return -1;
        }
        if (ind > 0)
            continue;
        if (strncmp(l, "---", 3) == 0 && (l[3] == '\0' || l[3] == ' ' || l[3] == '\r')) {
            /* Allowed once, bare, as the first content line. */
            if (first && (l[3] == '\0' || l[3] == '\r')) {
                seen_content = true;
                continue;
            }
            snprintf(err, errlen, "line %zu: more than one YAML document, or content after `---`", i + 1);
            return -1;
        }
        if (strncmp(l, "...", 3) == 0 || l[0] == '%') {
            snprintf(err, errlen, "line %zu: document markers and directives are not supported here", i + 1);
            return -1;
        }
        char *key = NULL, *value = NULL;
        if (s_key(l, &key, &value) < 0) {
            snprintf(err, errlen, "line %zu: expected `key: value` at the top level (a block mapping)", i + 1);
            return -1;
        }
        free(key);
        free(value);
    }
    return 0;
}

/* Finds section `name` and its entries. Returns -1 with err filled when the
 * section exists in a form that cannot be edited line by line. */
static int s_section(const yaml_block_t *self, const char *name, s_section_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < self->n; i++) {
        int ind;
        bool tab;
        if (s_kind(self->lines[i], &ind, &tab) != LINE_CONTENT || ind != 0)
            continue;
        char *key = NULL, *value = NULL;
        if (s_key(self->lines[i], &key, &value) < 0)
            continue;
        bool match = strcmp(key, name) == 0;
        free(key);
        if (!match) {
            free(value);
            continue;
        }
        if (out->found) {
            snprintf(err, errlen, "line %zu: `%s` appears twice at the top level", i + 1, name);
            free(value);
            s_section_free(out);
            return -1;
        }
        out->found = true;
        out->line = i;
        if (*value) {
            if (strcmp(value, "{}") && strcmp(value, "~") && strcmp(value, "null")) {
                snprintf(err, errlen, "line %zu: `%s` is not written as a block mapping (one entry per line); "
                                      "rat-py edits only that style", i + 1, name);
                free(value);
                s_section_free(out);
                return -1;
            }
            out->empty_flow = true;
        }
        free(value);
    }
    if (!out->found)
        return 0;
    size_t end = out->line + 1;
    while (end < self->n) {
        int ind;
        bool tab;
        if (s_kind(self->lines[end], &ind, &tab) == LINE_CONTENT && ind == 0)
            break;
        end++;
    }
    out->end = end;
    for (size_t i = out->line + 1; i < end; i++) {
        int ind;
        bool tab;
        if (s_kind(self->lines[i], &ind, &tab) != LINE_CONTENT)
            continue;
        if (out->empty_flow) {
            snprintf(err, errlen, "line %zu: `%s` is empty (`{}`) but has indented lines below it", i + 1, name);
            s_section_free(out);
            return -1;
        }
        if (!out->child)
            out->child = ind;
        if (ind < out->child) {
            snprintf(err, errlen, "line %zu: indented less than the entries above it", i + 1);
            s_section_free(out);
            return -1;
        }
        if (ind > out->child) {
            if (out->nentries)
                out->entries[out->nentries - 1].last = i;
            continue;
        }
        char *key = NULL, *value = NULL;
        if (s_key(self->lines[i] + ind, &key, &value) < 0) {
            snprintf(err, errlen, "line %zu: expected `name:` (an entry of `%s`)", i + 1, name);
            s_section_free(out);
            return -1;
        }
        free(value);
        for (size_t e = 0; e < out->nentries; e++) {
            if (strcmp(out->entries[e].key, key) == 0) {
                snprintf(err, errlen, "line %zu: `%s.%s` appears twice", i + 1, name, key);
                free(key);
                s_section_free(out);
                return -1;
            }
        }
        out->entries = xrealloc(out->entries, (out->nentries + 1) * sizeof *out->entries);
        out->entries[out->nentries++] = (s_entry_t){.key = key, .start = i, .last = i};
    }
    return 0;
}

static const s_entry_t *s_find_entry(const s_section_t *s, const char *key)
{
    for (size_t i = 0; i < s->nentries; i++)
        if (strcmp(s->entries[i].key, key) == 0)
            return &s->entries[i];
    return NULL;
}

/* Whether an entry's lines define an anchor (`&name`), which aliases
 * elsewhere in the file may use: removing it would break them. */
static bool s_defines_anchor(const yaml_block_t *self, const s_entry_t *e)
{
    for (size_t i = e->start; i <= e->last; i++) {
        const char *l = self->lines[i];
        for (const char *p = strchr(l, '&'); p; p = strchr(p + 1, '&')) {
            const char *b = p;
            while (b > l && b[-1] == ' ')
                b--;
            if (b == l || b[-1] == ':' || b[-1] == '-' || b[-1] == '[' || b[-1] == ',')
                return true;
        }
    }
    return false;
}

static void s_push(char ***out, size_t *n, char *item)
{
    *out = xrealloc(*out, (*n + 2) * sizeof **out);
    (*out)[(*n)++] = item;
    (*out)[*n] = NULL;
}

/* ------------------------------------------------------------ editing */

static void s_insert(yaml_block_t *self, size_t at, char *line /* consumed */)
{
    if (self->n == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 16;
        self->lines = xrealloc(self->lines, self->cap * sizeof *self->lines);
    }
    memmove(self->lines + at + 1, self->lines + at, (self->n - at) * sizeof *self->lines);
    self->lines[at] = line;
    self->n++;
}

static void s_delete(yaml_block_t *self, size_t from, size_t count)
{
    for (size_t i = from; i < from + count; i++)
        free(self->lines[i]);
    memmove(self->lines + from, self->lines + from + count, (self->n - from - count) * sizeof *self->lines);
    self->n -= count;
}

yaml_block_t *yaml_block_parse(const char *text, size_t len, char *err, size_t errlen)
{
    if (len > YAML_BLOCK_MAX_TEXT) {
        snprintf(err, errlen, "larger than %u bytes", YAML_BLOCK_MAX_TEXT);
        return NULL;
    }
    yaml_block_t *self = xcalloc(1, sizeof *self);
    const char *p = text ? text : "";
    const char *end = p + (text ? len : 0);
    if (end - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3; /* a UTF-8 byte order mark: dropped on rewrite, as YAML allows */
    if (memchr(p, '\0', (size_t)(end - p))) {
        snprintf(err, errlen, "contains a NUL byte (not a text file)");
        yaml_block_destroy(&self);
        return NULL;
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (self->n >= YAML_BLOCK_MAX_LINES) {
            snprintf(err, errlen, "more than %u lines", YAML_BLOCK_MAX_LINES);
            yaml_block_destroy(&self);
            return NULL;
        }
        s_insert(self, self->n, xstrndup(p, n));
        self->final_newline = nl != NULL;
        p += n + (nl ? 1 : 0);
    }
    if (s_check(self, err, errlen) < 0)
        yaml_block_destroy(&self);
    return self;
}

void yaml_block_destroy(yaml_block_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    yaml_block_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++)
        free(self->lines[i]);
    free(self->lines);
    free(self);
    *self_p = NULL;
}

char *yaml_block_text(const yaml_block_t *self)
{
    buf_t b;
    buf_init(&b, 0);
    for (size_t i = 0; i < self->n; i++) {
        buf_puts(&b, self->lines[i]);
        if (i + 1 < self->n || self->final_newline)
            buf_putc(&b, '\n');
    }
    return buf_take(&b);
}

bool yaml_block_has(const yaml_block_t *self, const char *section, const char *key)
{
    char err[256];
    s_section_t s;
    if (s_section(self, section, &s, err, sizeof err) < 0)
        return false;
    bool has = s_find_entry(&s, key) != NULL;
    s_section_free(&s);
    return has;
}

size_t yaml_block_keys(const yaml_block_t *self, const char *section, char ***out)
{
    *out = NULL;
    size_t n = 0;
    char err[256];
    s_section_t s;
    if (s_section(self, section, &s, err, sizeof err) < 0)
        return 0;
    for (size_t i = 0; i < s.nentries; i++)
        s_push(out, &n, xstrdup(s.entries[i].key));
    s_section_free(&s);
    return n;
}

/* The line index of entry e's sub-key `sub`, or (size_t)-1. */
static size_t s_sub_line(const yaml_block_t *self, const s_entry_t *e, const char *sub, int *sub_indent,
                         char **value)
{
    int child = -1;
    for (size_t i = e->start + 1; i <= e->last; i++) {
        int ind;
        bool tab;
        if (s_kind(self->lines[i], &ind, &tab) != LINE_CONTENT)
            continue;
        if (child < 0)
            child = ind;
        if (ind != child)
            continue;
        char *key = NULL, *val = NULL;
        if (s_key(self->lines[i] + ind, &key, &val) < 0)
            continue;
        bool match = strcmp(key, sub) == 0;
        free(key);
        if (match) {
            *sub_indent = ind;
            *value = val;
            return i;
        }
        free(val);
    }
    return (size_t)-1;
}

char *yaml_block_scalar(const yaml_block_t *self, const char *section, const char *key, const char *sub)
{
    char err[256];
    s_section_t s;
    if (s_section(self, section, &s, err, sizeof err) < 0)
        return NULL;
    const s_entry_t *e = s_find_entry(&s, key);
    char *out = NULL, *value = NULL;
    int ind = 0;
    if (e && s_sub_line(self, e, sub, &ind, &value) != (size_t)-1)
        out = s_scalar(value);
    free(value);
    s_section_free(&s);
    return out;
}

size_t yaml_block_list(const yaml_block_t *self, const char *section, const char *key, const char *sub,
                       char ***out)
{
    *out = NULL;
    size_t n = 0;
    char err[256];
    s_section_t s;
    if (s_section(self, section, &s, err, sizeof err) < 0)
        return 0;
    const s_entry_t *e = s_find_entry(&s, key);
    char *value = NULL;
    int ind = 0;
    size_t at = e ? s_sub_line(self, e, sub, &ind, &value) : (size_t)-1;
    if (at != (size_t)-1 && value[0] == '[') {
        /* A flow sequence on one line: [a, "b", c] */
        char *v = value + 1, *close = strrchr(value, ']');
        if (close) {
            *close = '\0';
            char *save = NULL;
            for (char *item = strtok_r(v, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                while (*item == ' ')
                    item++;
                size_t l = strlen(item);
                while (l && item[l - 1] == ' ')
                    item[--l] = '\0';
                char *sc = s_scalar(item);
                if (sc)
                    s_push(out, &n, sc);
            }
        }
    } else if (at != (size_t)-1 && value[0] == '\0') {
        /* Block items: `- a` lines at the sub-key's indentation or deeper. */
        int item_ind = -1;
        for (size_t i = at + 1; i <= e->last; i++) {
            int li;
            bool tab;
            const char *l = self->lines[i];
            if (s_kind(l, &li, &tab) != LINE_CONTENT)
                continue;
            bool dash = l[li] == '-' && (l[li + 1] == ' ' || l[li + 1] == '\0');
            if (li < ind || (li == ind && !dash))
                break;
            if (!dash || (item_ind >= 0 && li != item_ind))
                continue;
            item_ind = li;
            char *v = s_strip_value(l + li + 1);
            char *sc = s_scalar(v);
            free(v);
            if (sc)
                s_push(out, &n, sc);
        }
    }
    free(value);
    s_section_free(&s);
    return n;
}

int yaml_block_set(yaml_block_t *self, const char *section, const char *key, const yaml_block_line_t *lines,
                   size_t nlines, char *err, size_t errlen)
{
    s_section_t s;
    if (s_section(self, section, &s, err, errlen) < 0)
        return -1;
    size_t at;
    int unit = s.child ? s.child : DEFAULT_INDENT;
    if (!s.found) {
        /* A new section at the end of the document. */
        if (self->n && !self->final_newline)
            self->final_newline = true;
        char *qs = yaml_block_quote(section);
        s_insert(self, self->n, xasprintf("%s:", qs));
        free(qs);
        self->final_newline = true;
        at = self->n;
    } else {
        const s_entry_t *e = s_find_entry(&s, key);
        if (e) {
            if (s_defines_anchor(self, e)) {
                snprintf(err, errlen, "line %zu: `%s.%s` defines a YAML anchor (&name) that other entries may use; "
                                      "edit it by hand", e->start + 1, section, key);
                s_section_free(&s);
                return -1;
            }
            at = e->start;
            s_delete(self, e->start, e->last - e->start + 1);
        } else if (s.nentries) {
            at = s.entries[s.nentries - 1].last + 1;
        } else {
            at = s.line + 1;
        }
        if (s.empty_flow) {
            free(self->lines[s.line]);
            char *qs = yaml_block_quote(section);
            self->lines[s.line] = xasprintf("%s:", qs);
            free(qs);
        }
        if (at == self->n)
            self->final_newline = true;
    }
    char *qk = yaml_block_quote(key);
    s_insert(self, at++, xasprintf("%*s%s:", unit, "", qk));
    free(qk);
    for (size_t i = 0; i < nlines; i++)
        s_insert(self, at++, xasprintf("%*s%s", unit * (1 + lines[i].depth), "", lines[i].text));
    s_section_free(&s);
    return 0;
}

int yaml_block_remove(yaml_block_t *self, const char *section, const char *key, char *err, size_t errlen)
{
    s_section_t s;
    if (s_section(self, section, &s, err, errlen) < 0)
        return -1;
    const s_entry_t *e = s_find_entry(&s, key);
    if (!e) {
        s_section_free(&s);
        return 0;
    }
    if (s_defines_anchor(self, e)) {
        snprintf(err, errlen, "line %zu: `%s.%s` defines a YAML anchor (&name) that other entries may use; "
                              "edit it by hand", e->start + 1, section, key);
        s_section_free(&s);
        return -1;
    }
    s_delete(self, e->start, e->last - e->start + 1);
    if (s.nentries == 1) {
        /* No entries left: say so explicitly rather than leave a null. */
        free(self->lines[s.line]);
        char *qs = yaml_block_quote(section);
        self->lines[s.line] = xasprintf("%s: {}", qs);
        free(qs);
    }
    s_section_free(&s);
    return 1;
}

char *yaml_block_quote(const char *s)
{
    /* Plain only for a conservative alphabet, which also keeps YAML 1.1
     * readers from seeing booleans or numbers (yes, no, on, 1.0, ...). */
    bool plain = *s && !strchr("-.0123456789", *s);
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
                *p == '-' || *p == '/' || *p == '.';
    static const char *const words[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", NULL};
    for (size_t i = 0; plain && words[i]; i++)
        plain = strcasecmp(s, words[i]) != 0;
    if (plain)
        return xstrdup(s);
    buf_t b;
    buf_init(&b, 0);
    buf_putc(&b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            buf_printf(&b, "\\%c", *p);
        else if (*p == '\n')
            buf_puts(&b, "\\n");
        else if (*p == '\t')
            buf_puts(&b, "\\t");
        else if (*p < 0x20 || *p == 0x7f)
            buf_printf(&b, "\\x%02x", *p);
        else
            buf_putc(&b, (char)*p);
    }
    buf_putc(&b, '"');
    return buf_take(&b);
}
