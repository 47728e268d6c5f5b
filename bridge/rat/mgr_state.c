/* mgr_state: the state file shared with the Go `rat` CLI (see mgr_state.h).
 * A circle with mgr_names, kept: one concept, the named runtimes of one
 * state file; an entry is read only with a valid name (mgr_names_valid). */
#include "mgr_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "buf.h"
#include "fileio.h"
#include "mem.h"
#include "mgr_names.h"
#include "mgr_proc.h"
#include "utf8.h"

char *mgr_state_dir(void)
{
    const char *x = getenv("XDG_CONFIG_HOME");
    if (x && *x == '/')
        return xasprintf("%s/rat", x);
    const char *home = getenv("HOME");
    if (home && *home)
        return xasprintf("%s/.config/rat", home);
    return NULL;
}

/* mkdir -p, private. */
static int s_mkdirs(const char *dir)
{
    char *p = xstrdup(dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0700) < 0 && errno != EEXIST ? -1 : 0;
    free(p);
    return rc;
}

/* ------------------------------------------------------------ entries */

static void s_kernel_free(mgr_kernel_t *k)
{
    free(k->name);
    free(k->lang);
    free(k->cwd);
    free(k->venv);
    free(k->status);
    free(k->started);
    free(k->stopped);
    memset(k, 0, sizeof *k);
}

static void s_kv_free(mgr_kv_t *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

static void s_runtime_free(mgr_runtime_t *r)
{
    free(r->name);
    free(r->lang);
    free(r->cwd);
    free(r->venv);
    free(r->runtime_path);
    s_kv_free(r->options, r->noptions);
    s_kv_free(r->env, r->nenv);
    memset(r, 0, sizeof *r);
}

void mgr_state_clear(mgr_state_t *self)
{
    for (size_t i = 0; i < self->nkernels; i++)
        s_kernel_free(&self->kernels[i]);
    for (size_t i = 0; i < self->nruntimes; i++)
        s_runtime_free(&self->runtimes[i]);
    free(self->kernels);
    free(self->runtimes);
    self->kernels = NULL;
    self->runtimes = NULL;
    self->nkernels = self->nruntimes = 0;
}

mgr_kernel_t *mgr_state_kernel(mgr_state_t *self, const char *name)
{
    for (size_t i = 0; i < self->nkernels; i++)
        if (strcmp(self->kernels[i].name, name) == 0)
            return &self->kernels[i];
    return NULL;
}

mgr_runtime_t *mgr_state_runtime(mgr_state_t *self, const char *name)
{
    for (size_t i = 0; i < self->nruntimes; i++)
        if (strcmp(self->runtimes[i].name, name) == 0)
            return &self->runtimes[i];
    return NULL;
}

/* Go's Put and PutRuntime drop the old entry and append the new one. */
mgr_kernel_t *mgr_state_put_kernel(mgr_state_t *self, const char *name)
{
    mgr_state_remove_kernel(self, name);
    self->kernels = xrealloc(self->kernels, (self->nkernels + 1) * sizeof *self->kernels);
    mgr_kernel_t *k = &self->kernels[self->nkernels++];
    memset(k, 0, sizeof *k);
    k->name = xstrdup(name);
    return k;
}

mgr_runtime_t *mgr_state_put_runtime(mgr_state_t *self, const char *name)
{
    mgr_state_remove_runtime(self, name);
    self->runtimes = xrealloc(self->runtimes, (self->nruntimes + 1) * sizeof *self->runtimes);
    mgr_runtime_t *r = &self->runtimes[self->nruntimes++];
    memset(r, 0, sizeof *r);
    r->name = xstrdup(name);
    return r;
}

bool mgr_state_remove_kernel(mgr_state_t *self, const char *name)
{
    for (size_t i = 0; i < self->nkernels; i++) {
        if (strcmp(self->kernels[i].name, name) != 0)
            continue;
        s_kernel_free(&self->kernels[i]);
        memmove(&self->kernels[i], &self->kernels[i + 1], (self->nkernels - i - 1) * sizeof *self->kernels);
        self->nkernels--;
        return true;
    }
    return false;
}

bool mgr_state_remove_runtime(mgr_state_t *self, const char *name)
{
    for (size_t i = 0; i < self->nruntimes; i++) {
        if (strcmp(self->runtimes[i].name, name) != 0)
            continue;
        s_runtime_free(&self->runtimes[i]);
        memmove(&self->runtimes[i], &self->runtimes[i + 1], (self->nruntimes - i - 1) * sizeof *self->runtimes);
        self->nruntimes--;
        return true;
    }
    return false;
}

char *mgr_state_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char date[64], frac[16] = "", zone[48];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    if (ts.tv_nsec) {
        /* Go's RFC3339Nano: the fraction without trailing zeros. */
        snprintf(frac, sizeof frac, ".%09ld", ts.tv_nsec);
        size_t n = strlen(frac);
        while (n > 1 && frac[n - 1] == '0')
            frac[--n] = '\0';
    }
    long off = tm.tm_gmtoff;
    if (off == 0)
        snprintf(zone, sizeof zone, "Z");
    else
        snprintf(zone, sizeof zone, "%c%02d:%02d", off < 0 ? '-' : '+', (int)(labs(off) / 3600 % 100), (int)(labs(off) % 3600 / 60));
    return xasprintf("%s%s%s", date, frac, zone);
}

void mgr_state_mark_stopped(mgr_kernel_t *k)
{
    free(k->status);
    k->status = xstrdup("stopped");
    k->pid = 0;
    k->port = 0;
    memset(&k->proc, 0, sizeof k->proc);
    free(k->stopped);
    k->stopped = mgr_state_now();
}

mgr_proc_t mgr_state_proc(const mgr_kernel_t *k, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = '\0';
    if (!k->status || strcmp(k->status, "running") != 0)
        return MGR_PROC_GONE;
    return mgr_proc_check(k->pid, k->port, &k->proc, why, whylen);
}

bool mgr_state_alive(const mgr_kernel_t *k)
{
    return mgr_state_proc(k, NULL, 0) != MGR_PROC_GONE;
}

bool mgr_state_normalize(mgr_state_t *self)
{
    bool changed = false;
    for (size_t i = 0; i < self->nkernels; i++) {
        mgr_kernel_t *k = &self->kernels[i];
        if (!k->status) {
            k->status = xstrdup(k->pid > 0 ? "running" : "stopped");
            changed = true;
        }
        char why[256];
        if (strcmp(k->status, "running") == 0 && mgr_state_proc(k, why, sizeof why) == MGR_PROC_GONE) {
            /* Only the entry changes: no process is signalled here. */
            if (why[0])
                fprintf(stderr, "rat: %s: %s; marked stopped\n", k->name, why);
            mgr_state_mark_stopped(k);
            changed = true;
        }
        if (strcmp(k->status, "stopped") == 0) {
            if (k->pid || k->port || k->proc.start) {
                k->pid = k->port = 0;
                memset(&k->proc, 0, sizeof k->proc);
                changed = true;
            }
            if (!k->stopped) {
                k->stopped = mgr_state_now();
                changed = true;
            }
        }
    }
    return changed;
}

/* ------------------------------------------------------------ reading */

static const char *s_scalar(yaml_document_t *d, yaml_node_t *n)
{
    if (!n || n->type != YAML_SCALAR_NODE)
        return NULL;
    (void)d;
    return (const char *)n->data.scalar.value;
}

/* A string field: a scalar of at most MGR_STATE_MAX_STR bytes, valid UTF-8,
 * no NUL. YAML's null (~, null, empty plain) is absent. */
static bool s_str(yaml_node_t *n, char **out, const char **why)
{
    if (!n || n->type != YAML_SCALAR_NODE) {
        *why = "is not a scalar";
        return false;
    }
    const char *v = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (len == 0 || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0)) {
        *out = NULL;
        return true;
    }
    if (len > MGR_STATE_MAX_STR || strlen(v) != len || utf8_valid_prefix(v, len) != len) {
        *why = "is too long or not text";
        return false;
    }
    free(*out);
    *out = xstrndup(v, len);
    return true;
}

static bool s_long(yaml_node_t *n, long lo, long hi, long *out, const char **why)
{
    const char *v = n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
    char *end = NULL;
    errno = 0;
    long x = v && *v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        *why = "is not a number in range";
        return false;
    }
    *out = x;
    return true;
}

/* A decimal number of 64 bits at most, digits only. */
static bool s_ull(yaml_node_t *n, unsigned long long *out, const char **why)
{
    const char *v = n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
    char *end = NULL;
    errno = 0;
    unsigned long long x = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
    if (!v || *v < '0' || *v > '9' || *end || errno) {
        *why = "is not a number in range";
        return false;
    }
    *out = x;
    return true;
}

static bool s_map(yaml_document_t *d, yaml_node_t *n, mgr_kv_t **out, size_t *nout, const char **why)
{
    if (n->type == YAML_SCALAR_NODE && n->data.scalar.length == 0)
        return true;
    if (n->type != YAML_MAPPING_NODE) {
        *why = "is not a mapping";
        return false;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        if (*nout >= 256) {
            *why = "has too many keys";
            return false;
        }
        char *k = NULL, *v = NULL;
        if (!s_str(yaml_document_get_node(d, p->key), &k, why) || !k ||
            !s_str(yaml_document_get_node(d, p->value), &v, why)) {
            free(k);
            free(v);
            return false;
        }
        *out = xrealloc(*out, (*nout + 1) * sizeof **out);
        (*out)[(*nout)++] = (mgr_kv_t){k, v ? v : xstrdup("")};
    }
    return true;
}

static void s_drop(const char *list, size_t index, const char *field, const char *why)
{
    fprintf(stderr, "rat: state.yaml: %s item %zu dropped: %s %s\n", list, index + 1, field, why);
}

/* The fields of an item: key, kind and where it goes in the entry. */
typedef enum { F_STR, F_PORT, F_PID, F_ULL, F_MAP } s_kind_t;
typedef struct {
    const char *key;
    s_kind_t kind;
    size_t off, off_n;   /* F_MAP: the array and its count */
} s_field_t;

static const s_field_t s_kernel_fields[] = {
    {"name", F_STR, offsetof(mgr_kernel_t, name), 0},       {"lang", F_STR, offsetof(mgr_kernel_t, lang), 0},
    {"cwd", F_STR, offsetof(mgr_kernel_t, cwd), 0},         {"venv", F_STR, offsetof(mgr_kernel_t, venv), 0},
    {"status", F_STR, offsetof(mgr_kernel_t, status), 0},   {"started", F_STR, offsetof(mgr_kernel_t, started), 0},
    {"stopped", F_STR, offsetof(mgr_kernel_t, stopped), 0}, {"port", F_PORT, offsetof(mgr_kernel_t, port), 0},
    {"pid", F_PID, offsetof(mgr_kernel_t, pid), 0},
    {"proc_start", F_ULL, offsetof(mgr_kernel_t, proc.start), 0},
    {"proc_dev", F_ULL, offsetof(mgr_kernel_t, proc.dev), 0},
    {"proc_ino", F_ULL, offsetof(mgr_kernel_t, proc.ino), 0},
};
static const s_field_t s_runtime_fields[] = {
    {"name", F_STR, offsetof(mgr_runtime_t, name), 0},
    {"lang", F_STR, offsetof(mgr_runtime_t, lang), 0},
    {"cwd", F_STR, offsetof(mgr_runtime_t, cwd), 0},
    {"venv", F_STR, offsetof(mgr_runtime_t, venv), 0},
    {"runtime_path", F_STR, offsetof(mgr_runtime_t, runtime_path), 0},
    {"options", F_MAP, offsetof(mgr_runtime_t, options), offsetof(mgr_runtime_t, noptions)},
    {"env", F_MAP, offsetof(mgr_runtime_t, env), offsetof(mgr_runtime_t, nenv)},
};

/* Reads the mapping item into entry by the table (unknown keys are
 * skipped). false with *field and *why at the first bad value. */
static bool s_read_fields(yaml_document_t *d, yaml_node_t *item, void *entry, const s_field_t *t, size_t nt,
                          const char **field, const char **why)
{
    if (item->type != YAML_MAPPING_NODE) {
        *field = "the item";
        *why = "is not a mapping";
        return false;
    }
    char *base = entry;
    for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top; p++) {
        const char *key = s_scalar(d, yaml_document_get_node(d, p->key));
        yaml_node_t *v = yaml_document_get_node(d, p->value);
        for (size_t i = 0; key && i < nt; i++) {
            if (strcmp(key, t[i].key) != 0)
                continue;
            bool ok = t[i].kind == F_STR    ? s_str(v, (char **)(base + t[i].off), why)
                      : t[i].kind == F_PORT ? s_long(v, 0, 65535, (long *)(base + t[i].off), why)
                      : t[i].kind == F_PID  ? s_long(v, 0, 0x7fffffff, (long *)(base + t[i].off), why)
                      : t[i].kind == F_ULL  ? s_ull(v, (unsigned long long *)(base + t[i].off), why)
                                            : s_map(d, v, (mgr_kv_t **)(base + t[i].off), (size_t *)(base + t[i].off_n),
                                                    why);
            if (!ok) {
                *field = t[i].key;
                return false;
            }
        }
    }
    return true;
}

static void s_read_kernel(mgr_state_t *self, yaml_document_t *d, yaml_node_t *item, size_t index)
{
    mgr_kernel_t k = {0};
    const char *why = NULL, *field = NULL;
    bool ok = s_read_fields(d, item, &k, s_kernel_fields, sizeof s_kernel_fields / sizeof s_kernel_fields[0],
                            &field, &why);
    if (ok && (!k.name || !mgr_names_valid(k.name)))
        ok = false, field = "name", why = "is missing or not a valid runtime name";
    else if (ok && k.status && strcmp(k.status, "running") && strcmp(k.status, "stopped"))
        ok = false, field = "status", why = "is neither running nor stopped";
    else if (ok && mgr_state_kernel(self, k.name))
        ok = false, field = "name", why = "repeats an earlier item";
    if (!ok) {
        s_drop("kernels", index, field, why);
        s_kernel_free(&k);
        return;
    }
    if (!k.lang)
        k.lang = xstrdup("");
    if (!k.cwd)
        k.cwd = xstrdup("");
    self->kernels = xrealloc(self->kernels, (self->nkernels + 1) * sizeof *self->kernels);
    self->kernels[self->nkernels++] = k;
}

static void s_read_runtime(mgr_state_t *self, yaml_document_t *d, yaml_node_t *item, size_t index)
{
    mgr_runtime_t r = {0};
    const char *why = NULL, *field = NULL;
    bool ok = s_read_fields(d, item, &r, s_runtime_fields, sizeof s_runtime_fields / sizeof s_runtime_fields[0],
                            &field, &why);
    if (ok && (!r.name || !mgr_names_valid(r.name)))
        ok = false, field = "name", why = "is missing or not a valid runtime name";
    else if (ok && mgr_state_runtime(self, r.name))
        ok = false, field = "name", why = "repeats an earlier item";
    if (!ok) {
        s_drop("runtimes", index, field, why);
        s_runtime_free(&r);
        return;
    }
    if (!r.lang)
        r.lang = xstrdup("");
    self->runtimes = xrealloc(self->runtimes, (self->nruntimes + 1) * sizeof *self->runtimes);
    self->runtimes[self->nruntimes++] = r;
}

int mgr_state_parse(mgr_state_t *self, const char *text, size_t len, char *err, size_t errlen)
{
    if (len > MGR_STATE_MAX) {
        snprintf(err, errlen, "larger than %u bytes", MGR_STATE_MAX);
        return -1;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "line %zu: %s", parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "not YAML");
        yaml_parser_delete(&parser);
        return -1;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    int rc = 0;
    if (root && root->type != YAML_MAPPING_NODE) {
        snprintf(err, errlen, "the top level is not a mapping");
        rc = -1;
    }
    for (yaml_node_pair_t *p = root && rc == 0 ? root->data.mapping.pairs.start : NULL;
         p && p < root->data.mapping.pairs.top; p++) {
        const char *key = s_scalar(&doc, yaml_document_get_node(&doc, p->key));
        yaml_node_t *v = yaml_document_get_node(&doc, p->value);
        bool kernels = key && !strcmp(key, "kernels"), runtimes = key && !strcmp(key, "runtimes");
        if (!kernels && !runtimes)
            continue;
        if (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0)
            continue; /* `kernels:` with nothing (null) */
        if (v->type != YAML_SEQUENCE_NODE) {
            fprintf(stderr, "rat: state.yaml: %s is not a list; ignored\n", key);
            continue;
        }
        size_t i = 0;
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++, i++) {
            if (i >= MGR_STATE_MAX_ENTRIES) {
                fprintf(stderr, "rat: state.yaml: %s: items past %d ignored\n", key, MGR_STATE_MAX_ENTRIES);
                break;
            }
            yaml_node_t *item = yaml_document_get_node(&doc, *it);
            if (kernels)
                s_read_kernel(self, &doc, item, i);
            else
                s_read_runtime(self, &doc, item, i);
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

/* ------------------------------------------------------------ writing */

/* Whether a plain s would read back as something other than a string
 * (YAML 1.1 and 1.2 booleans, nulls, numbers, base-60 numbers, dates):
 * go-yaml writes those double-quoted ("8717", "yes", ""). */
static bool s_resolves_other(const char *s)
{
    if (!*s)
        return true;
    static const char *const words[] = {"~",    "null", "Null",  "NULL", "y",     "Y",     "yes",  "Yes",  "YES",
                                        "n",    "N",    "no",    "No",   "NO",    "true",  "True", "TRUE", "false",
                                        "False", "FALSE", "on",  "On",   "ON",    "off",   "Off",  "OFF",  ".inf",
                                        ".Inf", ".INF", "-.inf", "-.Inf", "-.INF", "+.inf", ".nan", ".NaN", ".NAN",
                                        "<<"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(s, words[i]) == 0)
            return true;
    /* Numbers and dates, broadly: only digits and number punctuation,
     * starting with a digit, a sign or a dot. Doubt means quotes, which
     * every reader takes. */
    if (!strchr("0123456789+-.", s[0]))
        return false;
    for (const char *p = s; *p; p++)
        if (!strchr("0123456789+-._:eExXoObB", *p) && !((*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
            return false;
    return true;
}

/* Whether the emitter may write s plain (libyaml's analysis, as go-yaml's
 * emitter does it): no indicator first, no ": " or " #", no space at
 * either end, printable. Otherwise go-yaml single-quotes it. */
static bool s_plain_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || strchr("-?:,[]{}#&*!|>'\"%@`", s[0]) || s[0] == ' ' || s[n - 1] == ' ')
        return false;
    for (const char *p = s; *p; p++)
        if ((*p == ':' && (p[1] == ' ' || !p[1])) || (*p == '#' && p > s && p[-1] == ' '))
            return false;
    return true;
}

/* The code point that starts at p (valid UTF-8: s_put_scalar checked), its
 * length in *n. */
static unsigned s_code_point(const unsigned char *p, size_t *n)
{
    if (p[0] < 0x80)
        return *n = 1, p[0];
    if (p[0] < 0xE0)
        return *n = 2, (unsigned)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    if (p[0] < 0xF0)
        return *n = 3, (unsigned)(p[0] & 0x0F) << 12 | (unsigned)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    return *n = 4, (unsigned)(p[0] & 0x07) << 18 | (unsigned)(p[1] & 0x3F) << 12 | (unsigned)(p[2] & 0x3F) << 6 |
                       (p[3] & 0x3F);
}

/* Whether c must be written as an escape in a double-quoted scalar:
 * controls (C0 but tab, DEL, C1), YAML's line breaks besides \n (NEL
 * U+0085 is C1; LS U+2028, PS U+2029: a reader folds or breaks the line
 * there, and the value read back is another), the BOM, and the
 * noncharacters U+FFFE, U+FFFF (libyaml refuses to read those raw: the
 * whole file would be unreadable). */
static bool s_escaped(unsigned c)
{
    return (c < 0x20 && c != '\t') || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029 || c == 0xFEFF ||
           c == 0xFFFE || c == 0xFFFF;
}

static bool s_printable(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n;
        if (s_escaped(s_code_point(p, &n)))
            return false;
        p += n;
    }
    return true;
}

/* s double-quoted, with escapes that YAML (libyaml, go-yaml) and JSON read
 * alike: vscode-rat reads a double-quoted value with JSON.parse. */
static void s_put_double_quoted(buf_t *b, const char *s)
{
    buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n;
        unsigned c = s_code_point(p, &n);
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", (char)c);
        else if (c == '\n')
            buf_puts(b, "\\n");
        else if (c == '\t')
            buf_puts(b, "\\t");
        else if (s_escaped(c))
            buf_printf(b, "\\u%04x", c);
        else
            buf_append(b, (const char *)p, n);
        p += n;
    }
    buf_putc(b, '"');
}

static int s_put_scalar(buf_t *b, const char *s, char *err, size_t errlen)
{
    if (utf8_valid_prefix(s, strlen(s)) != strlen(s)) {
        snprintf(err, errlen, "a value is not UTF-8 text: %.80s", s);
        return -1;
    }
    if (!s_printable(s) || s_resolves_other(s)) {
        s_put_double_quoted(b, s);
    } else if (!s_plain_ok(s) || strchr(s, '\t')) {
        buf_putc(b, '\'');
        for (const char *p = s; *p; p++) {
            if (*p == '\'')
                buf_putc(b, '\'');
            buf_putc(b, *p);
        }
        buf_putc(b, '\'');
    } else {
        buf_puts(b, s);
    }
    return 0;
}

/* `<indent>key: value` (the first field of an item is written by the caller
 * after "- "). */
static int s_field(buf_t *b, const char *indent, const char *key, const char *value, char *err, size_t errlen)
{
    buf_printf(b, "%s%s: ", indent, key);
    if (s_put_scalar(b, value, err, errlen) < 0)
        return -1;
    buf_putc(b, '\n');
    return 0;
}

static int s_kvs(buf_t *b, const char *key, const mgr_kv_t *kv, size_t n, char *err, size_t errlen)
{
    if (!n)
        return 0;
    /* go-yaml sorts map keys. */
    const mgr_kv_t **order = xcalloc(n, sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = &kv[i];
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(order[j - 1]->key, order[j]->key) > 0; j--) {
            const mgr_kv_t *t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    buf_printf(b, "      %s:\n", key);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        /* A key past 128 bytes as go-yaml writes it, explicit (`? KEY`
         * then `: VALUE`): a reader takes an implicit key of at most 1024
         * characters, and libyaml refuses the whole file past that. */
        bool explicit_key = strlen(order[i]->key) > 128;
        buf_puts(b, explicit_key ? "        ? " : "        ");
        if ((rc = s_put_scalar(b, order[i]->key, err, errlen)) == 0) {
            buf_puts(b, explicit_key ? "\n        : " : ": ");
            rc = s_put_scalar(b, order[i]->value, err, errlen);
            buf_putc(b, '\n');
        }
    }
    free(order);
    return rc;
}

char *mgr_state_text(const mgr_state_t *self, char *err, size_t errlen)
{
    buf_t b;
    buf_init(&b, 0);
    int rc = 0;
    const char *I = "      ";
    if (!self->nkernels)
        buf_puts(&b, "kernels: []\n");
    else
        buf_puts(&b, "kernels:\n");
    for (size_t i = 0; i < self->nkernels && rc == 0; i++) {
        const mgr_kernel_t *k = &self->kernels[i];
        char port[24], pid[24];
        snprintf(port, sizeof port, "%ld", k->port);
        snprintf(pid, sizeof pid, "%ld", k->pid);
        rc = s_field(&b, "    - ", "name", k->name, err, errlen);
        rc = rc ? rc : s_field(&b, I, "lang", k->lang ? k->lang : "", err, errlen);
        if (rc == 0)
            buf_printf(&b, "%sport: %s\n%spid: %s\n", I, port, I, pid);
        rc = rc ? rc : s_field(&b, I, "cwd", k->cwd ? k->cwd : "", err, errlen);
        if (rc == 0 && k->venv && *k->venv)
            rc = s_field(&b, I, "venv", k->venv, err, errlen);
        rc = rc ? rc : s_field(&b, I, "status", k->status ? k->status : "stopped", err, errlen);
        if (rc == 0) {
            /* A time as go-yaml writes one (plain); the zero time for none. */
            buf_printf(&b, "%sstarted: %s\n", I, k->started && *k->started ? k->started : "0001-01-01T00:00:00Z");
            if (k->stopped && *k->stopped)
                buf_printf(&b, "%sstopped: %s\n", I, k->stopped);
            /* rat-py's own keys, last: go-yaml and vscode-rat skip keys
             * they do not know. */
            if (k->proc.start)
                buf_printf(&b, "%sproc_start: %llu\n%sproc_dev: %llu\n%sproc_ino: %llu\n", I, k->proc.start, I,
                           k->proc.dev, I, k->proc.ino);
        }
    }
    if (self->nruntimes)
        buf_puts(&b, "runtimes:\n");
    for (size_t i = 0; i < self->nruntimes && rc == 0; i++) {
        const mgr_runtime_t *r = &self->runtimes[i];
        rc = s_field(&b, "    - ", "name", r->name, err, errlen);
        rc = rc ? rc : s_field(&b, I, "lang", r->lang ? r->lang : "", err, errlen);
        if (rc == 0 && r->cwd && *r->cwd)
            rc = s_field(&b, I, "cwd", r->cwd, err, errlen);
        if (rc == 0 && r->venv && *r->venv)
            rc = s_field(&b, I, "venv", r->venv, err, errlen);
        if (rc == 0 && r->runtime_path && *r->runtime_path)
            rc = s_field(&b, I, "runtime_path", r->runtime_path, err, errlen);
        rc = rc ? rc : s_kvs(&b, "options", r->options, r->noptions, err, errlen);
        rc = rc ? rc : s_kvs(&b, "env", r->env, r->nenv, err, errlen);
    }
    if (rc < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_take(&b);
}

/* Times read from a file must stay times a Go reader takes: a value that
 * is not one is dropped (the zero time is written instead). */
static void s_check_times(mgr_state_t *self)
{
    for (size_t i = 0; i < self->nkernels; i++) {
        char **t[2] = {&self->kernels[i].started, &self->kernels[i].stopped};
        for (int j = 0; j < 2; j++) {
            const char *v = *t[j];
            if (!v)
                continue;
            size_t n = strlen(v);
            bool ok = n >= 20 && n <= 40 && v[4] == '-' && v[7] == '-' && v[10] == 'T' && v[13] == ':' &&
                      v[16] == ':' && strspn(v, "0123456789-T:.Z+") == n;
            if (!ok) {
                free(*t[j]);
                *t[j] = NULL;
            }
        }
    }
}

/* ------------------------------------------------------------ the file */

static int s_lock(const char *path, char *err, size_t errlen)
{
    char *lp = xasprintf("%s.lock", path);
    int fd = fileio_open_regular(lp, O_RDWR | O_CREAT | O_NOFOLLOW, 0600, NULL);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", lp, fileio_strerror(errno));
        free(lp);
        return -1;
    }
    for (int waited = 0;; waited += 20) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            break;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            snprintf(err, errlen, "cannot lock %s: %s", lp, strerror(errno));
            close(fd);
            free(lp);
            return -1;
        }
        if (waited >= MGR_STATE_LOCK_MS) {
            snprintf(err, errlen, "%s stays locked by another rat (waited %d s); try again", lp,
                     MGR_STATE_LOCK_MS / 1000);
            close(fd);
            free(lp);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    free(lp);
    return fd;
}

mgr_state_t *mgr_state_open(char *err, size_t errlen)
{
    char *dir = mgr_state_dir();
    if (!dir) {
        snprintf(err, errlen, "neither XDG_CONFIG_HOME nor HOME is set: no place for the state file");
        return NULL;
    }
    if (s_mkdirs(dir) < 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        free(dir);
        return NULL;
    }
    mgr_state_t *self = xcalloc(1, sizeof *self);
    self->lock_fd = -1;
    self->path = xasprintf("%s/state.yaml", dir);
    free(dir);
    self->lock_fd = s_lock(self->path, err, errlen);
    if (self->lock_fd < 0) {
        mgr_state_close(&self);
        return NULL;
    }
    size_t len = 0;
    char *text = fileio_read(self->path, MGR_STATE_MAX, &len);
    if (!text && errno != ENOENT) {
        snprintf(err, errlen, "cannot read %s: %s", self->path, fileio_strerror(errno));
        mgr_state_close(&self);
        return NULL;
    }
    char perr[256];
    if (text && mgr_state_parse(self, text, len, perr, sizeof perr) < 0) {
        /* Not lost: kept aside, and the state starts empty. */
        char *aside = xasprintf("%s.bad-%ld", self->path, (long)time(NULL));
        rename(self->path, aside);
        fprintf(stderr, "rat: %s is not a state file (%s); moved to %s, starting empty\n", self->path, perr, aside);
        free(aside);
        mgr_state_clear(self);
    }
    free(text);
    s_check_times(self);
    if (mgr_state_normalize(self)) {
        char werr[256];
        if (mgr_state_save(self, werr, sizeof werr) < 0)
            fprintf(stderr, "rat: %s\n", werr);
    }
    return self;
}

int mgr_state_save(mgr_state_t *self, char *err, size_t errlen)
{
    if (self->lock_fd < 0) {
        snprintf(err, errlen, "internal: state saved without its lock");
        return -1;
    }
    char *text = mgr_state_text(self, err, errlen);
    if (!text)
        return -1;
    int rc = fileio_write_atomic(self->path, text, strlen(text), 0600);
    if (rc < 0)
        snprintf(err, errlen, "cannot write %s: %s", self->path, strerror(errno));
    free(text);
    return rc;
}

void mgr_state_unlock(mgr_state_t *self)
{
    if (self->lock_fd >= 0) {
        flock(self->lock_fd, LOCK_UN);
        close(self->lock_fd);
        self->lock_fd = -1;
    }
}

void mgr_state_close(mgr_state_t **self_p)
{
    mgr_state_t *self = *self_p;
    if (!self)
        return;
    mgr_state_unlock(self);
    mgr_state_clear(self);
    free(self->path);
    free(self);
    *self_p = NULL;
}
