/* yaml_block: entry edits of a YAML mapping located by libyaml's marks.
 *
 * Why this file is over 700 lines and two of its functions over 120:
 * s_parse is one pass over libyaml's events that builds the node table, and
 * its cases share the parse stack and the marks; yaml_block_set is the
 * splice of one entry (block or flow, new or replaced), and its cases share
 * the offsets located at its top. Cut into pieces, each would take that
 * state as a long parameter list and be read only together with the others.
 * The file is the whole of the YAML editing (parse, query, edit, quote) and
 * nothing else. */
#include "yaml_block.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "buf.h"
#include "mem.h"

#define DEFAULT_INDENT 4   /* yaml.v3 (mcp2cli's writer) indents by 4 */

typedef enum { N_SCALAR, N_SEQ, N_MAP, N_ALIAS } s_kind_t;

/* One node, in document order: a node's descendants are the nodes
 * [index + 1, desc_end). Offsets are bytes into the text. */
typedef struct {
    s_kind_t kind;
    bool flow;          /* a collection in flow style ({...} / [...]) */
    bool plain;         /* a scalar in plain style */
    size_t start;       /* its first byte (its anchor or tag when it has one) */
    size_t end;         /* scalar/alias: after its last byte; flow collection: after `}`/`]`;
                         * block collection: where its start event ends */
    size_t open_end;    /* flow collection: after `{`/`[` */
    size_t cend;        /* after its last content byte (never a block collection's end, which
                         * libyaml puts at the next token, past comments and blank lines) */
    size_t line;        /* 1-based, of start */
    char *value;        /* scalar: its text; alias: the anchor it names (owned) */
    char *anchor;       /* owned, or NULL */
    int parent, first, last, next;
    int target;         /* alias: the node it names */
    size_t nchildren;
    int desc_end;
} s_node_t;

struct yaml_block {
    char *text;         /* owned, NUL-terminated */
    size_t len;
    s_node_t *nodes;    /* owned */
    int n, cap;
    int root;           /* -1 for an empty document */
    bool crlf;          /* lines end with \r\n */
};

/* ------------------------------------------------------------ parsing */

static void s_nodes_free(yaml_block_t *self)
{
    for (int i = 0; i < self->n; i++) {
        free(self->nodes[i].value);
        free(self->nodes[i].anchor);
    }
    free(self->nodes);
    self->nodes = NULL;
    self->n = self->cap = 0;
    self->root = -1;
}

/* The line (1-based) of byte offset off. */
static size_t s_line_of(const yaml_block_t *self, size_t off)
{
    size_t line = 1;
    for (size_t i = 0; i < off && i < self->len; i++)
        line += self->text[i] == '\n';
    return line;
}

/* Byte offsets of each character (libyaml's marks count characters).
 * Returns the table (nchars + 1 entries) or NULL when the text uses a line
 * break other than \n or \r\n: libyaml (YAML 1.1) counts lone \r, NEL, LS
 * and PS as line breaks, and an edit done by lines could not agree with it. */
static uint32_t *s_char_table(const yaml_block_t *self, size_t *nchars, size_t *bad_at)
{
    const unsigned char *t = (const unsigned char *)self->text;
    uint32_t *tab = xmalloc((self->len + 1) * sizeof *tab);
    size_t n = 0;
    for (size_t i = 0; i < self->len;) {
        if ((t[i] == '\r' && (i + 1 >= self->len || t[i + 1] != '\n')) ||
            (t[i] == 0xC2 && i + 1 < self->len && t[i + 1] == 0x85) ||
            (t[i] == 0xE2 && i + 2 < self->len && t[i + 1] == 0x80 && (t[i + 2] == 0xA8 || t[i + 2] == 0xA9))) {
            *bad_at = i;
            free(tab);
            return NULL;
        }
        tab[n++] = (uint32_t)i;
        /* libyaml rejects invalid UTF-8, so the lead byte's length is enough. */
        i += t[i] < 0x80 ? 1 : (t[i] & 0xE0) == 0xC0 ? 2 : (t[i] & 0xF0) == 0xE0 ? 3 : (t[i] & 0xF8) == 0xF0 ? 4 : 1;
    }
    tab[n] = (uint32_t)self->len;
    *nchars = n;
    return tab;
}

/* Compares two key nodes for qsort: by text, then by position. */
static const s_node_t *s_sort_nodes;
static int s_key_cmp(const void *a, const void *b)
{
    const s_node_t *x = &s_sort_nodes[*(const int *)a], *y = &s_sort_nodes[*(const int *)b];
    int c = strcmp(x->value, y->value);
    return c ? c : (x->start < y->start ? -1 : x->start > y->start);
}

/* A key twice in one mapping: yaml.v3 (mcp2cli) rejects the whole file, so
 * it is refused here too, naming both lines. Keys compare by their text
 * (`py`, "py", 'py' and "p\x79" are the same key). */
static int s_check_duplicates(yaml_block_t *self, int map, char *err, size_t errlen)
{
    s_node_t *m = &self->nodes[map];
    if (m->nchildren < 4)
        return 0;
    int *keys = xmalloc(m->nchildren / 2 * sizeof *keys);
    size_t nk = 0, i = 0;
    for (int c = m->first; c >= 0; c = self->nodes[c].next, i++)
        if (i % 2 == 0 && self->nodes[c].kind == N_SCALAR)
            keys[nk++] = c;
    s_sort_nodes = self->nodes;
    qsort(keys, nk, sizeof *keys, s_key_cmp);
    int rc = 0;
    for (size_t k = 1; k < nk && rc == 0; k++) {
        const s_node_t *a = &self->nodes[keys[k - 1]], *b = &self->nodes[keys[k]];
        if (strcmp(a->value, b->value) == 0) {
            char *q = yaml_block_quote(a->value);
            snprintf(err, errlen, "line %zu: the key %.80s appears twice in one mapping (also on line %zu), "
                                  "which mcp2cli's YAML parser rejects; fix it by hand",
                     b->line, q, a->line);
            free(q);
            rc = -1;
        }
    }
    free(keys);
    return rc;
}

static int s_add_node(yaml_block_t *self, s_kind_t kind, int parent)
{
    if (self->n == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 64;
        self->nodes = xrealloc(self->nodes, (size_t)self->cap * sizeof *self->nodes);
    }
    int i = self->n++;
    self->nodes[i] = (s_node_t){.kind = kind, .parent = parent, .first = -1, .last = -1, .next = -1, .target = -1,
                                .desc_end = i + 1};
    if (parent >= 0) {
        s_node_t *p = &self->nodes[parent];
        if (p->last >= 0)
            self->nodes[p->last].next = i;
        else
            p->first = i;
        p->last = i;
        p->nchildren++;
    }
    return i;
}

static int s_deref(const yaml_block_t *self, int n);

/* Parses self->text into self->nodes. Returns 0, or -1 with err filled. */
static int s_parse(yaml_block_t *self, char *err, size_t errlen)
{
    s_nodes_free(self);
    size_t nchars = 0, bad = 0;
    uint32_t *tab = s_char_table(self, &nchars, &bad);
    if (!tab) {
        snprintf(err, errlen, "line %zu: a line break other than \\n or \\r\\n (a lone \\r, NEL, LS or PS)",
                 s_line_of(self, bad));
        return -1;
    }
#define BYTE(mark) ((size_t)tab[(mark).index <= nchars ? (mark).index : nchars])
    const char *nl = memchr(self->text, '\n', self->len);
    self->crlf = nl && nl > self->text && nl[-1] == '\r';
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
    yaml_parser_set_input_string(&p, (const unsigned char *)self->text, self->len);
    int rc = -1, cur = -1, depth = 0, docs = 0, aliases = 0;
    for (bool done = false; !done;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            snprintf(err, errlen, "line %zu, column %zu: %s%s%s (not valid YAML)", (size_t)p.problem_mark.line + 1,
                     (size_t)p.problem_mark.column + 1, p.problem ? p.problem : "syntax error",
                     p.context ? ", " : "", p.context ? p.context : "");
            goto out;
        }
        size_t s = BYTE(e.start_mark), en = BYTE(e.end_mark);
        int node = -1;
        const char *anchor = NULL;
        switch (e.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                snprintf(err, errlen, "line %zu: a second YAML document; mcp2cli reads one",
                         (size_t)e.start_mark.line + 1);
                yaml_event_delete(&e);
                goto out;
            }
            break;
        case YAML_SCALAR_EVENT:
        case YAML_ALIAS_EVENT:
            if (self->n >= YAML_BLOCK_MAX_NODES)
                break;
            node = s_add_node(self, e.type == YAML_SCALAR_EVENT ? N_SCALAR : N_ALIAS, cur);
            self->nodes[node].end = self->nodes[node].cend = en;
            if (e.type == YAML_SCALAR_EVENT) {
                self->nodes[node].value = xstrndup((const char *)e.data.scalar.value, e.data.scalar.length);
                self->nodes[node].plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
                anchor = (const char *)e.data.scalar.anchor;
            } else {
                /* yaml.v3 rejects an alias to no anchor; libyaml's parser
                 * leaves that check to its loader. */
                self->nodes[node].value = xstrdup((const char *)e.data.alias.anchor);
                if (++aliases <= YAML_BLOCK_MAX_ALIASES)
                    self->nodes[node].target = s_deref(self, node);
                if (aliases > YAML_BLOCK_MAX_ALIASES || self->nodes[node].target < 0) {
                    snprintf(err, errlen, "line %zu: %s", (size_t)e.start_mark.line + 1,
                             aliases > YAML_BLOCK_MAX_ALIASES ? "too many aliases (*name)"
                                                              : "an alias (*name) to no anchor before it");
                    yaml_event_delete(&e);
                    goto out;
                }
            }
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (self->n >= YAML_BLOCK_MAX_NODES || depth >= YAML_BLOCK_MAX_DEPTH)
                break;
            node = s_add_node(self, e.type == YAML_SEQUENCE_START_EVENT ? N_SEQ : N_MAP, cur);
            if (e.type == YAML_SEQUENCE_START_EVENT) {
                self->nodes[node].flow = e.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
                anchor = (const char *)e.data.sequence_start.anchor;
            } else {
                self->nodes[node].flow = e.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
                anchor = (const char *)e.data.mapping_start.anchor;
            }
            self->nodes[node].end = self->nodes[node].open_end = self->nodes[node].cend = en;
            cur = node;
            depth++;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
            s_node_t *c = &self->nodes[cur];
            if (c->flow)
                c->end = c->cend = en;
            else if (c->last >= 0)
                c->cend = self->nodes[c->last].cend;
            c->desc_end = self->n;
            int done_node = cur;
            cur = c->parent;
            depth--;
            if (cur >= 0 && self->nodes[done_node].cend > self->nodes[cur].cend)
                self->nodes[cur].cend = self->nodes[done_node].cend;
            if (e.type == YAML_MAPPING_END_EVENT && s_check_duplicates(self, done_node, err, errlen) < 0) {
                yaml_event_delete(&e);
                goto out;
            }
            break;
        }
        default:
            break;
        }
        if (self->n >= YAML_BLOCK_MAX_NODES || depth >= YAML_BLOCK_MAX_DEPTH) {
            snprintf(err, errlen, "line %zu: more than %d YAML nodes or %d nested levels",
                     (size_t)e.start_mark.line + 1, YAML_BLOCK_MAX_NODES, YAML_BLOCK_MAX_DEPTH);
            yaml_event_delete(&e);
            goto out;
        }
        if (node >= 0) {
            s_node_t *nd = &self->nodes[node];
            nd->start = s;
            nd->line = (size_t)e.start_mark.line + 1;
            nd->anchor = anchor ? xstrdup(anchor) : NULL;
            if (nd->kind == N_SCALAR || nd->kind == N_ALIAS) {
                /* A leaf's content end raises its ancestors'. */
                for (int a = cur; a >= 0; a = self->nodes[a].parent)
                    if (nd->cend > self->nodes[a].cend)
                        self->nodes[a].cend = nd->cend;
            }
            if (nd->parent < 0)
                self->root = node;
        }
        yaml_event_delete(&e);
    }
    if (self->root >= 0) {
        const s_node_t *r = &self->nodes[self->root];
        bool null_root = r->kind == N_SCALAR && r->plain &&
                         (!*r->value || !strcmp(r->value, "~") || !strcasecmp(r->value, "null"));
        if (null_root) {
            self->root = -1;
        } else if (r->kind != N_MAP) {
            snprintf(err, errlen, "line %zu: the document is not a mapping (`key: value` lines)", r->line);
            goto out;
        }
    }
    rc = 0;
out:
#undef BYTE
    yaml_parser_delete(&p);
    free(tab);
    if (rc < 0)
        s_nodes_free(self);
    return rc;
}

/* ------------------------------------------------------------ lookup */

/* The node an alias names (the last anchor of that name before it), or n. */
static int s_deref(const yaml_block_t *self, int n)
{
    if (n < 0 || self->nodes[n].kind != N_ALIAS)
        return n;
    for (int i = n - 1; i >= 0; i--)
        if (self->nodes[i].anchor && strcmp(self->nodes[i].anchor, self->nodes[n].value) == 0)
            return self->nodes[i].kind == N_ALIAS ? -1 : i;
    return -1;
}

/* The key node of `key` in mapping map, or -1. */
static int s_find_key(const yaml_block_t *self, int map, const char *key)
{
    if (map < 0 || self->nodes[map].kind != N_MAP)
        return -1;
    size_t i = 0;
    for (int c = self->nodes[map].first; c >= 0; c = self->nodes[c].next, i++)
        if (i % 2 == 0 && self->nodes[c].kind == N_SCALAR && strcmp(self->nodes[c].value, key) == 0)
            return c;
    return -1;
}

/* The value of `key` in map (aliases followed), or -1. */
static int s_get(const yaml_block_t *self, int map, const char *key)
{
    int k = s_find_key(self, map, key);
    return k >= 0 ? s_deref(self, self->nodes[k].next) : -1;
}

static void s_push(char ***out, size_t *n, char *item)
{
    *out = xrealloc(*out, (*n + 2) * sizeof **out);
    (*out)[(*n)++] = item;
    (*out)[*n] = NULL;
}

bool yaml_block_has(const yaml_block_t *self, const char *section, const char *key)
{
    return s_find_key(self, s_get(self, self->root, section), key) >= 0;
}

size_t yaml_block_keys(const yaml_block_t *self, const char *section, char ***out)
{
    *out = NULL;
    size_t n = 0, i = 0;
    int map = s_get(self, self->root, section);
    if (map < 0 || self->nodes[map].kind != N_MAP)
        return 0;
    for (int c = self->nodes[map].first; c >= 0; c = self->nodes[c].next, i++)
        if (i % 2 == 0 && self->nodes[c].kind == N_SCALAR)
            s_push(out, &n, xstrdup(self->nodes[c].value));
    return n;
}

char *yaml_block_scalar(const yaml_block_t *self, const char *section, const char *key, const char *sub)
{
    int v = s_get(self, s_get(self, s_get(self, self->root, section), key), sub);
    return v >= 0 && self->nodes[v].kind == N_SCALAR ? xstrdup(self->nodes[v].value) : NULL;
}

size_t yaml_block_list(const yaml_block_t *self, const char *section, const char *key, const char *sub,
                       char ***out)
{
    *out = NULL;
    size_t n = 0;
    int v = s_get(self, s_get(self, s_get(self, self->root, section), key), sub);
    if (v < 0 || self->nodes[v].kind != N_SEQ)
        return 0;
    for (int c = self->nodes[v].first; c >= 0; c = self->nodes[c].next) {
        int item = s_deref(self, c);
        if (item >= 0 && self->nodes[item].kind == N_SCALAR)
            s_push(out, &n, xstrdup(self->nodes[item].value));
    }
    return n;
}

/* ------------------------------------------------------------ editing */

/* A mapping this module may add to or remove from: scalar keys only, and no
 * merge key (`<<: *base`), whose entries an edit could shadow or orphan. */
static int s_editable_map(const yaml_block_t *self, int map, const char *what, char *err, size_t errlen)
{
    size_t i = 0;
    for (int c = self->nodes[map].first; c >= 0; c = self->nodes[c].next, i++) {
        const s_node_t *k = &self->nodes[c];
        if (i % 2)
            continue;
        if (k->kind != N_SCALAR) {
            snprintf(err, errlen, "line %zu: %s has a key that is not a plain name (an alias or a collection); "
                                  "edit it by hand",
                     k->line, what);
            return -1;
        }
        if (k->plain && strcmp(k->value, "<<") == 0) {
            snprintf(err, errlen, "line %zu: %s uses a merge key (<<); edit it by hand", k->line, what);
            return -1;
        }
    }
    return 0;
}

/* An entry (key node k and its value) defines an anchor that an alias
 * outside it uses: removing or replacing it would break that alias. */
static bool s_anchor_used_elsewhere(const yaml_block_t *self, int k, const char **name)
{
    int from = k, to = self->nodes[self->nodes[k].next].desc_end;
    for (int j = 0; j < self->n; j++) {
        const s_node_t *a = &self->nodes[j];
        if ((j < from || j >= to) && a->kind == N_ALIAS && a->target >= from && a->target < to) {
            *name = self->nodes[a->target].anchor;
            return true;
        }
    }
    return false;
}

/* The start of the line holding off. */
static size_t s_line_start(const yaml_block_t *self, size_t off)
{
    while (off > 0 && self->text[off - 1] != '\n')
        off--;
    return off;
}

/* After the line break ending the line that holds the content ending at off
 * (off itself when it is already at a line start). */
static size_t s_line_end(const yaml_block_t *self, size_t off)
{
    if (off > 0 && self->text[off - 1] == '\n')
        return off;
    const char *nl = memchr(self->text + off, '\n', self->len - off);
    return nl ? (size_t)(nl - self->text) + 1 : self->len;
}

static bool s_is_null(const s_node_t *v)
{
    return v->kind == N_SCALAR && v->plain && (!*v->value || !strcmp(v->value, "~") || !strcasecmp(v->value, "null"));
}

/* The block lines of `key:` and its fields, at indentation ind (unit more
 * for each level below). */
static void s_block_entry(buf_t *b, const char *key, const yaml_block_field_t *f, size_t nf, int ind, int unit,
                          const char *eol)
{
    char *qk = yaml_block_quote(key);
    buf_printf(b, "%*s%s:%s", ind, "", qk, eol);
    free(qk);
    for (size_t i = 0; i < nf; i++) {
        char *q = yaml_block_quote(f[i].key);
        if (f[i].items) {
            buf_printf(b, "%*s%s:%s", ind + unit, "", q, eol);
            for (size_t j = 0; j < f[i].nitems; j++) {
                char *qi = yaml_block_quote(f[i].items[j]);
                buf_printf(b, "%*s- %s%s", ind + 2 * unit, "", qi, eol);
                free(qi);
            }
        } else {
            char *qv = yaml_block_quote(f[i].scalar);
            buf_printf(b, "%*s%s: %s%s", ind + unit, "", q, qv, eol);
            free(qv);
        }
        free(q);
    }
}

/* `{field: value, list: [a, b]}` */
static void s_flow_value(buf_t *b, const yaml_block_field_t *f, size_t nf)
{
    buf_putc(b, '{');
    for (size_t i = 0; i < nf; i++) {
        char *q = yaml_block_quote(f[i].key);
        buf_printf(b, "%s%s: ", i ? ", " : "", q);
        free(q);
        if (f[i].items) {
            buf_putc(b, '[');
            for (size_t j = 0; j < f[i].nitems; j++) {
                char *qi = yaml_block_quote(f[i].items[j]);
                buf_printf(b, "%s%s", j ? ", " : "", qi);
                free(qi);
            }
            buf_putc(b, ']');
        } else {
            char *qv = yaml_block_quote(f[i].scalar);
            buf_puts(b, qv);
            free(qv);
        }
    }
    buf_putc(b, '}');
}

/* One splice: replace [from, to) with ins. */
typedef struct {
    size_t from, to;
    char *ins;     /* owned */
} s_splice_t;

/* Applies splices (sorted, not overlapping) to a copy of the text, parses
 * the copy and keeps it when check() accepts it. Returns 0, or -1 with err
 * filled and the document unchanged. */
static int s_commit(yaml_block_t *self, s_splice_t *sp, size_t nsp, const char *section, const char *key,
                    const yaml_block_field_t *f, size_t nf, bool removing, char *err, size_t errlen)
{
    buf_t b;
    buf_init(&b, 0);
    size_t at = 0;
    for (size_t i = 0; i < nsp; i++) {
        buf_append(&b, self->text + at, sp[i].from - at);
        /* New lines after a last line without a line break get one first. */
        if (sp[i].ins[0] && sp[i].from == self->len && sp[i].from > 0 && self->text[sp[i].from - 1] != '\n' &&
            strchr(sp[i].ins, '\n'))
            buf_puts(&b, self->crlf ? "\r\n" : "\n");
        buf_puts(&b, sp[i].ins);
        at = sp[i].to;
        free(sp[i].ins);
    }
    buf_append(&b, self->text + at, self->len - at);
    yaml_block_t next = {.len = b.len, .root = -1};
    next.text = buf_take(&b);
    char perr[256];
    int rc = s_parse(&next, perr, sizeof perr);
    bool ok = rc == 0;
    if (ok && removing) {
        ok = !yaml_block_has(&next, section, key);
    } else if (ok) {
        for (size_t i = 0; i < nf && ok; i++) {
            if (f[i].items) {
                char **items = NULL;
                size_t n = yaml_block_list(&next, section, key, f[i].key, &items);
                ok = n == f[i].nitems;
                for (size_t j = 0; j < n && ok; j++)
                    ok = strcmp(items[j], f[i].items[j]) == 0;
                strv_free(items);
            } else {
                char *v = yaml_block_scalar(&next, section, key, f[i].key);
                ok = v && strcmp(v, f[i].scalar) == 0;
                free(v);
            }
        }
    }
    if (!ok) {
        snprintf(err, errlen, "the edited file would not read back as intended (%s); left unchanged",
                 rc < 0 ? perr : "another value");
        s_nodes_free(&next);
        free(next.text);
        return -1;
    }
    s_nodes_free(self);
    free(self->text);
    *self = next;
    return 0;
}

int yaml_block_set(yaml_block_t *self, const char *section, const char *key, const yaml_block_field_t *fields,
                   size_t nfields, char *err, size_t errlen)
{
    const char *eol = self->crlf ? "\r\n" : "\n";
    buf_t b;
    buf_init(&b, 0);
    s_splice_t sp[2];
    size_t nsp = 0;
    int root = self->root;
    if (root < 0) {
        /* Empty document: the section goes at the end (after comments). */
        char *qs = yaml_block_quote(section);
        buf_printf(&b, "%s:%s", qs, eol);
        free(qs);
        s_block_entry(&b, key, fields, nfields, DEFAULT_INDENT, DEFAULT_INDENT, eol);
        sp[nsp++] = (s_splice_t){self->len, self->len, buf_take(&b)};
        return s_commit(self, sp, nsp, section, key, fields, nfields, false, err, errlen);
    }
    if (s_editable_map(self, root, "the top level", err, errlen) < 0)
        goto fail;
    const s_node_t *r = &self->nodes[root];
    int sk = s_find_key(self, root, section);
    if (sk < 0) {
        if (r->flow) {
            /* {version: 1} -> {version: 1, servers: {py: {...}}} */
            char *qs = yaml_block_quote(section), *qk = yaml_block_quote(key);
            buf_printf(&b, "%s%s: {%s: ", r->nchildren ? ", " : "", qs, qk);
            s_flow_value(&b, fields, nfields);
            buf_putc(&b, '}');
            free(qs);
            free(qk);
            size_t at = r->nchildren ? self->nodes[r->last].cend : r->open_end;
            sp[nsp++] = (s_splice_t){at, at, buf_take(&b)};
        } else {
            char *qs = yaml_block_quote(section);
            buf_printf(&b, "%s:%s", qs, eol);
            free(qs);
            s_block_entry(&b, key, fields, nfields, DEFAULT_INDENT, DEFAULT_INDENT, eol);
            size_t at = s_line_end(self, r->cend);
            sp[nsp++] = (s_splice_t){at, at, buf_take(&b)};
        }
        return s_commit(self, sp, nsp, section, key, fields, nfields, false, err, errlen);
    }
    int sv = self->nodes[sk].next;
    const s_node_t *v = &self->nodes[sv];
    bool empty_flow_map = v->kind == N_MAP && v->flow && v->nchildren == 0;
    if (s_is_null(v) || empty_flow_map) {
        if (v->anchor) {
            snprintf(err, errlen, "line %zu: `%s` is empty but carries an anchor (&%s); edit it by hand", v->line,
                     section, v->anchor);
            goto fail;
        }
        if (r->flow) {
            buf_puts(&b, "{");
            char *qk = yaml_block_quote(key);
            buf_printf(&b, "%s: ", qk);
            free(qk);
            s_flow_value(&b, fields, nfields);
            buf_puts(&b, "}");
            sp[nsp++] = (s_splice_t){v->start, v->end, buf_take(&b)};
        } else {
            /* `servers: ~  # note` -> `servers:  # note` and the entry below. */
            if (s_line_start(self, v->end) != s_line_start(self, self->nodes[sk].start)) {
                snprintf(err, errlen, "line %zu: `%s` is empty over several lines; edit it by hand", v->line, section);
                goto fail;
            }
            size_t ks = s_line_start(self, self->nodes[sk].start);
            int ind = (int)(self->nodes[sk].start - ks);
            s_block_entry(&b, key, fields, nfields, ind + DEFAULT_INDENT, DEFAULT_INDENT, eol);
            sp[nsp++] = (s_splice_t){v->start, v->end, xstrdup("")};
            size_t at = s_line_end(self, v->end);
            sp[nsp++] = (s_splice_t){at, at, buf_take(&b)};
        }
        return s_commit(self, sp, nsp, section, key, fields, nfields, false, err, errlen);
    }
    sv = s_deref(self, sv);
    if (sv != self->nodes[sk].next || self->nodes[sv].kind != N_MAP) {
        snprintf(err, errlen, "line %zu: `%s` is not a mapping of its own (an alias, a list or a value); "
                              "edit it by hand",
                 v->line, section);
        goto fail;
    }
    char what[128];
    snprintf(what, sizeof what, "`%.100s`", section);
    if (s_editable_map(self, sv, what, err, errlen) < 0)
        goto fail;
    int kk = s_find_key(self, sv, key);
    if (kk >= 0) {
        const char *anchor = NULL;
        if (s_anchor_used_elsewhere(self, kk, &anchor)) {
            snprintf(err, errlen, "line %zu: `%s.%s` defines the anchor &%s that an alias elsewhere uses; edit it "
                                  "by hand",
                     self->nodes[kk].line, section, key, anchor);
            goto fail;
        }
    }
    if (v->flow) {
        char *qk = yaml_block_quote(key);
        if (kk >= 0) {
            buf_printf(&b, "%s: ", qk);
            s_flow_value(&b, fields, nfields);
            sp[nsp++] = (s_splice_t){self->nodes[kk].start, self->nodes[self->nodes[kk].next].cend, buf_take(&b)};
        } else {
            buf_printf(&b, ", %s: ", qk);
            s_flow_value(&b, fields, nfields);
            size_t at = self->nodes[v->last].cend;
            sp[nsp++] = (s_splice_t){at, at, buf_take(&b)};
        }
        free(qk);
        return s_commit(self, sp, nsp, section, key, fields, nfields, false, err, errlen);
    }
    /* A block mapping: entries are whole lines at one indentation. */
    size_t ks0 = s_line_start(self, self->nodes[v->first].start);
    int ind = (int)(self->nodes[v->first].start - ks0);
    for (size_t i = ks0; i < self->nodes[v->first].start; i++) {
        if (self->text[i] != ' ') {
            snprintf(err, errlen, "line %zu: the entries of `%s` do not start their lines; edit it by hand",
                     self->nodes[v->first].line, section);
            goto fail;
        }
    }
    int unit = ind > 0 ? ind : DEFAULT_INDENT;
    s_block_entry(&b, key, fields, nfields, ind, unit, eol);
    if (kk >= 0) {
        size_t from = s_line_start(self, self->nodes[kk].start);
        for (size_t i = from; i < self->nodes[kk].start; i++) {
            if (self->text[i] != ' ') {
                snprintf(err, errlen, "line %zu: `%s.%s` does not start its line; edit it by hand",
                         self->nodes[kk].line, section, key);
                goto fail;
            }
        }
        size_t to = s_line_end(self, self->nodes[self->nodes[kk].next].cend > self->nodes[kk].cend
                                         ? self->nodes[self->nodes[kk].next].cend
                                         : self->nodes[kk].cend);
        sp[nsp++] = (s_splice_t){from, to, buf_take(&b)};
    } else {
        size_t at = s_line_end(self, v->cend);
        sp[nsp++] = (s_splice_t){at, at, buf_take(&b)};
    }
    return s_commit(self, sp, nsp, section, key, fields, nfields, false, err, errlen);
fail:
    buf_free(&b);
    return -1;
}

int yaml_block_remove(yaml_block_t *self, const char *section, const char *key, char *err, size_t errlen)
{
    int sk = s_find_key(self, self->root, section);
    int sv = sk >= 0 ? self->nodes[sk].next : -1;
    int kk = sv >= 0 ? s_find_key(self, sv, key) : -1;
    if (kk < 0)
        return 0;
    const s_node_t *v = &self->nodes[sv];
    char what[128];
    snprintf(what, sizeof what, "`%.100s`", section);
    if (s_editable_map(self, sv, what, err, errlen) < 0)
        return -1;
    const char *anchor = NULL;
    if (s_anchor_used_elsewhere(self, kk, &anchor)) {
        snprintf(err, errlen, "line %zu: `%s.%s` defines the anchor &%s that an alias elsewhere uses; edit it by hand",
                 self->nodes[kk].line, section, key, anchor);
        return -1;
    }
    int kv = self->nodes[kk].next;
    s_splice_t sp[2];
    size_t nsp = 0;
    if (v->flow) {
        /* Take one neighbouring comma with the entry: the one after it, else
         * the one before it; only blanks may lie between. */
        size_t from = self->nodes[kk].start, to = self->nodes[kv].cend;
        size_t a = to;
        while (a < self->len && strchr(" \t\r\n", self->text[a]))
            a++;
        if (a < self->len && self->text[a] == ',') {
            to = a + 1;
            while (to < self->len && (self->text[to] == ' ' || self->text[to] == '\t'))
                to++;
        } else {
            size_t c = from;
            while (c > 0 && strchr(" \t\r\n", self->text[c - 1]))
                c--;
            if (c > 0 && self->text[c - 1] == ',') {
                from = c - 1;
            } else if (!(c > 0 && self->text[c - 1] == '{')) {
                snprintf(err, errlen, "line %zu: cannot tell where `%s.%s` ends in its flow mapping (a comment?); "
                                      "edit it by hand",
                         self->nodes[kk].line, section, key);
                return -1;
            }
        }
        sp[nsp++] = (s_splice_t){from, to, xstrdup("")};
    } else {
        size_t from = s_line_start(self, self->nodes[kk].start);
        for (size_t i = from; i < self->nodes[kk].start; i++) {
            if (self->text[i] != ' ') {
                snprintf(err, errlen, "line %zu: `%s.%s` does not start its line; edit it by hand",
                         self->nodes[kk].line, section, key);
                return -1;
            }
        }
        size_t to = s_line_end(self, self->nodes[kv].cend > self->nodes[kk].cend ? self->nodes[kv].cend
                                                                                   : self->nodes[kk].cend);
        if (v->nchildren == 2) {
            /* No entries left: say so (`servers: {}`) rather than leave a
             * null, when the key's line has nothing else but a comment. */
            size_t c = self->nodes[sk].end;
            while (c < self->len && self->text[c] == ' ')
                c++;
            if (c < self->len && self->text[c] == ':') {
                size_t after = c + 1, e = after;
                while (e < self->len && (self->text[e] == ' ' || self->text[e] == '\t'))
                    e++;
                if (e >= self->len || strchr("#\r\n", self->text[e]))
                    sp[nsp++] = (s_splice_t){after, after, xstrdup(" {}")};
            }
        }
        sp[nsp++] = (s_splice_t){from, to, xstrdup("")};
    }
    return s_commit(self, sp, nsp, section, key, NULL, 0, true, err, errlen) < 0 ? -1 : 1;
}

/* ------------------------------------------------------------ whole */

yaml_block_t *yaml_block_parse(const char *text, size_t len, char *err, size_t errlen)
{
    if (len > YAML_BLOCK_MAX_TEXT) {
        snprintf(err, errlen, "larger than %u bytes", YAML_BLOCK_MAX_TEXT);
        return NULL;
    }
    if (text && memchr(text, '\0', len)) {
        snprintf(err, errlen, "contains a NUL byte (not a text file)");
        return NULL;
    }
    yaml_block_t *self = xcalloc(1, sizeof *self);
    self->root = -1;
    self->text = xstrndup(text ? text : "", text ? len : 0);
    self->len = text ? len : 0;
    if (s_parse(self, err, errlen) < 0)
        yaml_block_destroy(&self);
    return self;
}

void yaml_block_destroy(yaml_block_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    yaml_block_t *self = *self_p;
    s_nodes_free(self);
    free(self->text);
    free(self);
    *self_p = NULL;
}

char *yaml_block_text(const yaml_block_t *self)
{
    return xstrndup(self->text, self->len);
}

char *yaml_block_quote(const char *s)
{
    /* Plain only for a conservative alphabet, which also keeps YAML 1.1
     * readers from seeing booleans or numbers (yes, no, on, 1.0, ...) and is
     * safe inside flow collections. */
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
