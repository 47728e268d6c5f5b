/* tool_look: the `look` tool: variables overview, inspect with dot-path
 * drill-down, completions. */
#define LOG_MODULE "look"
#include "tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "heaptrim.h"
#include "lookpath.h"
#include "log.h"
#include "mem.h"
#include "output.h"
#include "textfmt.h"
#include "utf8.h"

#define COMPLETE_ROWS 20
#define COMPLETE_ROWS_GUI 500   /* rows for a GUI that filters them itself (vscode-rat) */

static const char s_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"at\":{\"type\":\"string\",\"description\":\"A variable or a path into it to inspect: data, data.scores.0, "
    "data['two words'], model.layers.0.type, math.sqrt.\"},"
    "\"code\":{\"type\":\"string\",\"description\":\"Code to complete (with cursor).\"},"
    "\"cursor\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Cursor position in code, in characters "
    "(default: the end).\"},"
    "\"full\":{\"type\":\"boolean\",\"description\":\"Accepted for vscode-rat: look(at) is always the full "
    "inspection.\"}},"
    "\"additionalProperties\":false}";

typedef struct {
    tools_op_t base;        /* first: the runtime calls back with the op */
    char *path;             /* inspect: the path as given */
    char *code;             /* complete: the code */
    long cursor;            /* complete: code points */
} s_op_t;

/* The string member key of the helper's answer r, or NULL. */
static const char *s_get_str(json_object *r, const char *key)
{
    json_object *v = NULL;
    if (r && json_object_object_get_ex(r, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

static void s_op_free(tools_op_t *base)
{
    s_op_t *op = (s_op_t *)base;
    free(op->path);
    free(op->code);
    free(op);
}

static s_op_t *s_op_new(tools_ctx_t *ctx, mcp_call_t *call)
{
    s_op_t *op = xcalloc(1, sizeof *op);
    tools_op_start(&op->base, ctx, call, NULL, s_op_free);
    return op;
}

static void s_finish(s_op_t *op, const char *text, bool is_error, json_object *structured)
{
    /* A large look (a big frame's repr, a long listing) leaves freed heap
     * behind: give it back once things are quiet. */
    heaptrim_soon(op->base.ctx->loop);
    tools_op_finish(&op->base, text, is_error, structured);
}

/* Appends rows as aligned columns: indent, then for each row its cells
 * separated by two spaces. marks (may be NULL) gives a per-row prefix. */
static void s_table(buf_t *b, json_object *rows, size_t nrows, size_t ncols, const char *indent,
                    const char *const *marks)
{
    size_t width[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < nrows; i++) {
        json_object *r = json_object_array_get_idx(rows, i);
        for (size_t c = 0; c + 1 < ncols; c++) {
            const char *s = json_object_get_string(json_object_array_get_idx(r, c));
            size_t w = s ? utf8_width(s, strlen(s)) : 0;
            if (w > width[c])
                width[c] = w;
        }
    }
    for (size_t i = 0; i < nrows; i++) {
        json_object *r = json_object_array_get_idx(rows, i);
        buf_puts(b, indent);
        if (marks)
            buf_puts(b, marks[i]);
        for (size_t c = 0; c < ncols; c++) {
            const char *s = json_object_get_string(json_object_array_get_idx(r, c));
            if (c + 1 < ncols) {
                textfmt_pad(b, s ? s : "", width[c]);
                buf_puts(b, "  ");
            } else {
                buf_puts(b, s ? s : "");
            }
        }
        while (b->len && b->data[b->len - 1] == ' ')
            b->len--;
        buf_putc(b, '\n');
    }
}

/* ------------------------------------------------------------ overview */

static void s_render_overview(tools_ctx_t *ctx, json_object *snap, long snap_exec, buf_t *b)
{
    runtime_status_t st;
    runtime_status(ctx->rt, &st);
    const char *lang = st.language ? st.language : "kernel";
    json_object *vars = NULL, *rows = NULL;
    long nvars = snap && json_object_object_get_ex(snap, "vars", &vars) ? (long)json_object_get_int64(vars) : -1;
    if (st.running) {
        /* st.state: busy, or waiting_for_input (the same word ctl status says) */
        buf_printf(b, "%s %s | exec #%ld running %llds", lang, st.state, runtime_exec_number(st.running),
                   (long long)(runtime_exec_elapsed_ms(st.running) / 1000));
    } else {
        buf_printf(b, "%s %s", lang, st.state);
        if (nvars >= 0) {
            buf_puts(b, " | ");
            textfmt_count(b, nvars, "var", "vars");
        }
        buf_printf(b, " | exec #%ld", st.exec_count);
    }
    buf_puts(b, "\n\n");
    /* Every line below the header that is not a variable starts with "(":
     * a GUI that reads `name  type  preview` rows (vscode-rat: any line
     * starting with a word is a row) finds no variable in it. */
    if (!runtime_has_helper(ctx->rt) && !snap) {
        if (!strcmp(st.state, "starting") || !strcmp(st.state, "restarting"))
            buf_puts(b, "(the kernel is starting)");
        else
            buf_printf(b, "(variables are not available for %s kernels: look(at=\"name\") inspects and "
                          "look(code=..., cursor=...) completes)", lang);
        return;
    }
    if (!snap) {
        buf_puts(b, st.running ? "(no variables known yet: the first run is still going)" : "(no variables)");
        return;
    }
    if (st.running)
        buf_printf(b, "(variables as of exec #%ld, before the running code)\n", snap_exec);
    if (nvars == 0 || !json_object_object_get_ex(snap, "rows", &rows) || json_object_array_length(rows) == 0) {
        buf_puts(b, "(no variables)");
        return;
    }
    /* Rows name, type, preview with a one-word type (the seed's overview):
     * a size the helper put in the type (`list (100 items)`, `ndarray
     * float64 (1000, 3)`) opens the preview instead. The names left out
     * are a last row of the table, `…  more  N more variables: ...`, so a
     * GUI listing rows shows that some are hidden. */
    size_t n = json_object_array_length(rows);
    json_object *table = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(rows, i), *row = json_object_new_array();
        const char *name = json_object_get_string(json_object_array_get_idx(r, 0));
        const char *type = json_object_get_string(json_object_array_get_idx(r, 1));
        const char *value = json_object_get_string(json_object_array_get_idx(r, 2));
        /* The bare type: the helper's 4th cell (Python), else what comes
         * before " (" (R's `data.frame (100 rows × 2 cols)`). */
        json_object *bare = json_object_array_get_idx(r, 3);
        const char *tn = json_object_is_type(bare, json_type_string) ? json_object_get_string(bare) : type;
        const char *paren = !json_object_is_type(bare, json_type_string) && type ? strstr(type, " (") : NULL;
        size_t tl = paren ? (size_t)(paren - type) : tn ? strlen(tn) : 0;
        json_object_array_add(row, json_object_new_string(name ? name : ""));
        if (type && tl && strncmp(type, tn, tl) == 0 && type[tl] == ' ') {
            json_object_array_add(row, json_object_new_string_len(tn, (int)tl));
            char *pv = xasprintf("%s %s", type + tl + 1, value ? value : "");
            json_object_array_add(row, json_object_new_string(pv));
            free(pv);
        } else {
            json_object_array_add(row, json_object_new_string(type ? type : ""));
            json_object_array_add(row, json_object_new_string(value ? value : ""));
        }
        json_object_array_add(table, row);
    }
    if (nvars > (long)n) {
        json_object *row = json_object_new_array();
        char *more = xasprintf("%ld variables not listed: look(at=\"name\") inspects any", nvars - (long)n);
        json_object_array_add(row, json_object_new_string("…"));
        json_object_array_add(row, json_object_new_string("more"));
        json_object_array_add(row, json_object_new_string(more));
        json_object_array_add(table, row);
        free(more);
    }
    s_table(b, table, json_object_array_length(table), 3, "  ", NULL);
    json_object_put(table);
    while (b->len && b->data[b->len - 1] == '\n')
        b->data[--b->len] = '\0';
}

/* The overview's structuredContent (look's schema, view "overview"). */
static json_object *s_overview_json(tools_ctx_t *ctx, json_object *snap, long snap_exec)
{
    runtime_status_t st;
    runtime_status(ctx->rt, &st);
    json_object *o = json_object_new_object(), *v = NULL, *rows = NULL;
    json_object_object_add(o, "view", json_object_new_string("overview"));
    if (st.language)
        json_object_object_add(o, "language", json_object_new_string(st.language));
    json_object_object_add(o, "state", json_object_new_string(st.state));
    json_object_object_add(o, "exec_count", json_object_new_int64(st.exec_count));
    long nvars = snap && json_object_object_get_ex(snap, "vars", &v) ? (long)json_object_get_int64(v) : -1;
    if (nvars >= 0)
        json_object_object_add(o, "vars", json_object_new_int64(nvars));
    json_object_object_add(o, "available", json_object_new_boolean(snap || runtime_has_helper(ctx->rt)));
    if (snap) {
        json_object_object_add(o, "snapshot_exec", json_object_new_int64(snap_exec));
        json_object_object_add(o, "stale", json_object_new_boolean(st.running != NULL));
    }
    json_object *out = json_object_new_array();
    size_t n = 0;
    if (snap && json_object_object_get_ex(snap, "rows", &rows) && json_object_is_type(rows, json_type_array)) {
        n = json_object_array_length(rows);
        for (size_t i = 0; i < n; i++) {
            json_object *r = json_object_array_get_idx(rows, i), *row = json_object_new_object();
            static const char *const keys[] = {"name", "type", "preview", "type_name", "size"};
            static const int cols[] = {0, 1, 2, 3, 4};
            for (int k = 0; k < 5; k++) {
                json_object *c = json_object_array_get_idx(r, (size_t)cols[k]);
                if (json_object_is_type(c, json_type_string))
                    json_object_object_add(row, keys[k], json_object_new_string(json_object_get_string(c)));
                else if (k < 3)
                    json_object_object_add(row, keys[k], json_object_new_string(""));
            }
            json_object *e = json_object_array_get_idx(r, 5);
            if (json_object_is_type(e, json_type_boolean))
                json_object_object_add(row, "expandable", json_object_new_boolean(json_object_get_boolean(e)));
            json_object_array_add(out, row);
        }
    }
    json_object_object_add(o, "rows", out);
    json_object_object_add(o, "more", json_object_new_int64(nvars > (long)n ? nvars - (long)n : 0));
    return o;
}

json_object *tool_look_overview_json(tools_ctx_t *ctx)
{
    long snap_exec = 0;
    json_object *snap = runtime_snapshot(ctx->rt, &snap_exec);
    return s_overview_json(ctx, snap, snap_exec);
}

static void s_overview_fresh(void *ud, const char *text, const char *err)
{
    s_op_t *op = ud;
    json_object *snap = text ? json_tokener_parse(text) : NULL;
    buf_t b;
    buf_init(&b, 0);
    long snap_exec = 0;
    json_object *cached = runtime_snapshot(op->base.ctx->rt, &snap_exec);
    s_render_overview(op->base.ctx, snap ? snap : cached, snap_exec, &b);
    json_object *sc = s_overview_json(op->base.ctx, snap ? snap : cached, snap_exec);
    s_finish(op, buf_str(&b), false, sc);
    json_object_put(sc);
    buf_free(&b);
    json_object_put(snap);
}

static void s_overview(tools_ctx_t *ctx, mcp_call_t *call)
{
    long snap_exec = 0;
    json_object *snap = runtime_snapshot(ctx->rt, &snap_exec);
    runtime_status_t st;
    runtime_status(ctx->rt, &st);
    /* The snapshot taken after every run is current for a kernel only we
     * use. Ask afresh when there is none yet, or when others share the kernel. */
    bool fetch = runtime_has_helper(ctx->rt) && runtime_idle(ctx->rt) && (!snap || st.attached);
    if (!fetch && !(snap == NULL && !strcmp(st.state, "starting"))) {
        buf_t b;
        buf_init(&b, 0);
        s_render_overview(ctx, snap, snap_exec, &b);
        json_object *sc = s_overview_json(ctx, snap, snap_exec);
        mcp_call_text_structured(call, buf_str(&b), false, sc);
        json_object_put(sc);
        buf_free(&b);
        return;
    }
    s_op_t *op = s_op_new(ctx, call);
    runtime_call_helper(ctx->rt, "snap", NULL, s_overview_fresh, op);
}

/* ------------------------------------------------------------ inspect */

static void s_render_inspect(json_object *r, buf_t *b)
{
    const char *type = s_get_str(r, "type");
    const char *kind = s_get_str(r, "kind");
    const char *size = s_get_str(r, "size");
    buf_printf(b, "%s: %s", s_get_str(r, "path"), type ? type : "?");
    if (kind && strcmp(kind, "variable") != 0)
        buf_printf(b, " (%s)", kind);
    if (size)
        buf_printf(b, " %s", size);
    const char *repr = s_get_str(r, "repr");
    json_object *children = NULL, *more = NULL;
    bool has_children = json_object_object_get_ex(r, "children", &children) && json_object_array_length(children);
    /* A leaf reads as one line, `x: int = 42`, when it fits. */
    if (repr && !has_children && b->len + 3 + strlen(repr) <= 120 && !strchr(repr, '\n')) {
        buf_printf(b, " = %s", repr);
        return;
    }
    if (repr)
        buf_printf(b, "\n    = %s", repr);
    const char *sig = s_get_str(r, "signature");
    if (sig)
        buf_printf(b, "\n    %s", sig);
    /* "Defined in: <file>:<line>" names a file a GUI can open (vscode-rat's
     * go to definition). Code from a run has none: "Defined in exec #19,
     * line 6", without the colon, so no client takes it for a path. */
    const char *def = s_get_str(r, "defined_in");
    if (def)
        buf_printf(b, "\n    Defined in%s %s", strncmp(def, "exec #", 6) == 0 ? "" : ":", def);
    const char *doc = s_get_str(r, "doc");
    if (doc) {
        for (const char *p = doc; *p;) {
            const char *e = strchr(p, '\n');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            buf_puts(b, "\n");
            if (n)
                buf_puts(b, "    ");
            buf_append(b, p, n);
            p = e ? e + 1 : p + n;
        }
    }
    if (has_children) {
        size_t n = json_object_array_length(children);
        const char **marks = xcalloc(n, sizeof *marks);
        for (size_t i = 0; i < n; i++) {
            json_object *row = json_object_array_get_idx(children, i);
            marks[i] = json_object_get_boolean(json_object_array_get_idx(row, 3)) ? "▸ " : "  ";
        }
        buf_puts(b, "\n\n");
        /* Columns: name, type, value (the 4th cell is the expandable flag). */
        json_object *rows3 = json_object_new_array();
        for (size_t i = 0; i < n; i++) {
            json_object *row = json_object_array_get_idx(children, i), *r3 = json_object_new_array();
            for (int c = 0; c < 3; c++)
                json_object_array_add(r3, json_object_get(json_object_array_get_idx(row, c)));
            json_object_array_add(rows3, r3);
        }
        s_table(b, rows3, n, 3, "    ", marks);
        json_object_put(rows3);
        free(marks);
        if (json_object_object_get_ex(r, "more", &more) && json_object_get_int64(more) > 0)
            buf_printf(b, "      … %lld more\n", (long long)json_object_get_int64(more));
        while (b->len && b->data[b->len - 1] == '\n')
            b->data[--b->len] = '\0';
    }
}

/* The path that opens child `name` of path (Python's path syntax). */
static char *s_child_path(const char *path, const char *name)
{
    if (name[0] == '[')
        return xasprintf("%s%s", path, name);
    if (name[0] == '\'' || name[0] == '"')
        return xasprintf("%s[%s]", path, name);
    return xasprintf("%s.%s", path, name);
}

/* The helper's answer as look's structuredContent (view "inspect"). */
static json_object *s_inspect_json(tools_ctx_t *ctx, json_object *r)
{
    json_object *o = json_object_new_object(), *children = NULL, *more = NULL;
    json_object_object_add(o, "view", json_object_new_string("inspect"));
    const char *path = s_get_str(r, "path");
    json_object_object_add(o, "path", json_object_new_string(path ? path : ""));
    json_object_object_add(o, "source", json_object_new_string("helper"));
    static const char *const from[] = {"type", "kind", "size", "repr", "signature", "doc", "defined_in"};
    static const char *const to[] = {"type", "kind", "size", "value", "signature", "doc", "defined_in"};
    for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
        const char *v = s_get_str(r, from[i]);
        if (v)
            json_object_object_add(o, to[i], json_object_new_string(v));
    }
    runtime_status_t st;
    runtime_status(ctx->rt, &st);
    bool python = st.language && strcmp(st.language, "python") == 0;
    json_object *arr = json_object_new_array();
    if (json_object_object_get_ex(r, "children", &children) && json_object_is_type(children, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(children); i++) {
            json_object *row = json_object_array_get_idx(children, i), *c = json_object_new_object();
            const char *name = json_object_get_string(json_object_array_get_idx(row, 0));
            const char *type = json_object_get_string(json_object_array_get_idx(row, 1));
            const char *value = json_object_get_string(json_object_array_get_idx(row, 2));
            bool exp = json_object_get_boolean(json_object_array_get_idx(row, 3));
            json_object_object_add(c, "name", json_object_new_string(name ? name : ""));
            json_object_object_add(c, "type", json_object_new_string(type ? type : ""));
            json_object_object_add(c, "value", json_object_new_string(value ? value : ""));
            json_object_object_add(c, "expandable", json_object_new_boolean(exp));
            if (python && path && name && *name) {
                char *p = s_child_path(path, name);
                json_object_object_add(c, "path", json_object_new_string(p));
                free(p);
            }
            json_object_array_add(arr, c);
        }
    }
    json_object_object_add(o, "children", arr);
    if (json_object_object_get_ex(r, "more", &more) && json_object_is_type(more, json_type_int))
        json_object_object_add(o, "more", json_object_new_int64(json_object_get_int64(more)));
    return o;
}

static void s_inspect_reply(void *ud, const char *text, size_t len, const char *err)
{
    s_op_t *op = ud;
    if (!text) {
        char *msg = err ? xasprintf("%s: %s", op->path, err) : xasprintf("%s: not found", op->path);
        s_finish(op, msg, true, NULL);
        free(msg);
        return;
    }
    buf_t b;
    buf_init(&b, 0);
    runtime_status_t st;
    runtime_status(op->base.ctx->rt, &st);
    if (st.running && runtime_has_helper(op->base.ctx->rt))
        buf_printf(&b, "(%s busy: the kernel's own inspector answers while code runs; drill-down works when it "
                       "is idle)\n",
                   st.language);
    size_t at = b.len;
    output_clean_text(text, len, &b);
    while (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "view", json_object_new_string("inspect"));
    json_object_object_add(sc, "path", json_object_new_string(op->path));
    json_object_object_add(sc, "source", json_object_new_string("kernel"));
    json_object_object_add(sc, "children", json_object_new_array());
    json_object_object_add(sc, "text", json_object_new_string(buf_str(&b) + at));
    s_finish(op, buf_str(&b), false, sc);
    json_object_put(sc);
    buf_free(&b);
}

/* Falls back to the protocol's inspect_request (any kernel; on control while
 * ipykernel is busy). */
static void s_inspect_protocol(s_op_t *op)
{
    runtime_inspect(op->base.ctx->rt, op->path, s_inspect_reply, op);
}

static void s_inspect_helper(void *ud, const char *text, const char *err)
{
    s_op_t *op = ud;
    json_object *r = text ? json_tokener_parse(text) : NULL;
    if (!r) {
        if ((err && !strcmp(err, "busy")) || !runtime_has_helper(op->base.ctx->rt)) {
            s_inspect_protocol(op); /* code started meanwhile, or no helper for this language */
            return;
        }
        char *msg = xasprintf("%s: %s", op->path, err ? err : "the helper gave no answer");
        s_finish(op, msg, true, NULL);
        free(msg);
        return;
    }
    json_object *ok = NULL;
    if (!json_object_object_get_ex(r, "ok", &ok) || !json_object_get_boolean(ok)) {
        const char *e = s_get_str(r, "error");
        s_finish(op, e ? e : "not found", true, NULL);
    } else {
        buf_t b;
        buf_init(&b, 0);
        s_render_inspect(r, &b);
        json_object *sc = s_inspect_json(op->base.ctx, r);
        s_finish(op, buf_str(&b), false, sc);
        json_object_put(sc);
        buf_free(&b);
    }
    json_object_put(r);
}

static void s_inspect(tools_ctx_t *ctx, mcp_call_t *call, const char *at)
{
    char err[512];
    char *segs = lookpath_parse(at, err, sizeof err);
    if (!segs) {
        char *msg = xasprintf("look: %s", err);
        mcp_call_text(call, msg, true);
        free(msg);
        return;
    }
    s_op_t *op = s_op_new(ctx, call);
    op->path = xstrdup(at);
    /* While the kernel starts (or is being attached to) its language, hence
     * whether it has a helper, is not known yet: the helper call waits for
     * readiness, and s_inspect_helper falls back to the protocol if there is
     * no helper after all. Deciding now sent the first look after --existing
     * to IPython's raw inspector. */
    runtime_status_t st;
    runtime_status(ctx->rt, &st);
    bool starting = !strcmp(st.state, "starting") || !strcmp(st.state, "restarting");
    if ((runtime_has_helper(ctx->rt) && runtime_idle(ctx->rt)) || starting) {
        runtime_call_helper(ctx->rt, "inspect", segs, s_inspect_helper, op);
    } else {
        s_inspect_protocol(op);
    }
    free(segs);
}

/* ------------------------------------------------------------ complete */

static void s_complete_reply(void *ud, const runtime_completions_t *c, const char *err)
{
    s_op_t *op = ud;
    if (!c) {
        char *msg = xasprintf("look: completion failed: %s", err);
        s_finish(op, msg, true, NULL);
        free(msg);
        return;
    }
    size_t total = c->n;
    /* vscode-rat reads `label<2+ spaces>kind` rows (a third column makes
     * the whole row its label) and filters them itself: its sessions get
     * two columns, all the items up to COMPLETE_ROWS_GUI, and no "… N
     * more" line (it would become an item). Others get the seed's
     * `label  kind  signature`. */
    bool gui = op->base.call && tool_run_holds(mcp_call_session(op->base.call));
    size_t shown = gui ? COMPLETE_ROWS_GUI : COMPLETE_ROWS;
    long cs = c->cursor_start >= 0 ? c->cursor_start : op->cursor;
    long ce = c->cursor_end >= 0 ? c->cursor_end : op->cursor;
    json_object *items = json_object_new_array();
    json_object *rows = json_object_new_array();
    for (size_t i = 0; i < total; i++) {
        const char *label = c->items[i].label;
        const char *kind = c->items[i].kind;
        const char *jsig = c->items[i].signature;
        buf_t sig;
        buf_init(&sig, 0);
        if (label && jsig)
            textfmt_signature(&sig, label, jsig);
        json_object *it = json_object_new_object();
        json_object_object_add(it, "label", json_object_new_string(label ? label : ""));
        json_object_object_add(it, "kind", kind ? json_object_new_string(kind) : NULL);
        json_object_object_add(it, "signature", sig.len ? json_object_new_string(sig.data) : NULL);
        json_object_array_add(items, it);
        if (i < shown) {
            json_object *row = json_object_new_array();
            json_object_array_add(row, json_object_new_string(label ? label : ""));
            json_object_array_add(row, json_object_new_string(kind && strcmp(kind, "<unknown>") ? kind : ""));
            if (!gui)
                json_object_array_add(row, json_object_new_string(buf_str(&sig)));
            json_object_array_add(rows, row);
        }
        buf_free(&sig);
    }
    buf_t b;
    buf_init(&b, 0);
    if (total == 0) {
        buf_puts(&b, "No completions.");
    } else {
        s_table(&b, rows, json_object_array_length(rows), gui ? 2 : 3, "", NULL);
        if (total > shown && !gui)
            buf_printf(&b, "… %zu more\n", total - shown);
        while (b.len && b.data[b.len - 1] == '\n')
            b.data[--b.len] = '\0';
    }
    /* Offsets back to the client's unit: characters (code points), the
     * unit of the cursor argument; and UTF-16 code units, JavaScript's
     * string indices (they differ past U+FFFF). */
    size_t clen = strlen(op->code);
    size_t cs16 = utf8_utf16_count(op->code, utf8_offset(op->code, clen, (size_t)cs));
    size_t ce16 = utf8_utf16_count(op->code, utf8_offset(op->code, clen, (size_t)ce));
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "view", json_object_new_string("completions"));
    json_object_object_add(sc, "items", items);
    json_object_object_add(sc, "cursor_start", json_object_new_int64(cs));
    json_object_object_add(sc, "cursor_end", json_object_new_int64(ce));
    json_object_object_add(sc, "replace_start", json_object_new_int64(cs));
    json_object_object_add(sc, "replace_end", json_object_new_int64(ce));
    json_object_object_add(sc, "replace_start_utf16", json_object_new_int64((int64_t)cs16));
    json_object_object_add(sc, "replace_end_utf16", json_object_new_int64((int64_t)ce16));
    s_finish(op, buf_str(&b), false, sc);
    json_object_put(sc);
    json_object_put(rows);
    buf_free(&b);
}

static void s_complete(tools_ctx_t *ctx, mcp_call_t *call, const char *code, long cursor)
{
    size_t nchars = utf8_count(code, strlen(code));
    if (cursor < 0)
        cursor = (long)nchars;
    if ((size_t)cursor > nchars) {
        char *msg = xasprintf("look: cursor %ld is past the end of the code (%zu characters)", cursor, nchars);
        mcp_call_text(call, msg, true);
        free(msg);
        return;
    }
    s_op_t *op = s_op_new(ctx, call);
    op->cursor = cursor;
    op->code = xstrdup(code);
    /* Jupyter counts cursor_pos in Unicode code points, as our clients do. */
    runtime_complete(ctx->rt, code, (size_t)cursor, s_complete_reply, op);
}

static void s_look(mcp_call_t *call, json_object *args, void *ud)
{
    tools_ctx_t *ctx = ud;
    json_object *v = NULL;
    const char *at = json_object_object_get_ex(args, "at", &v) ? json_object_get_string(v) : NULL;
    const char *code = json_object_object_get_ex(args, "code", &v) ? json_object_get_string(v) : NULL;
    long cursor = json_object_object_get_ex(args, "cursor", &v) ? (long)json_object_get_int64(v) : -1;
    if (at && code) {
        mcp_call_text(call, "look: give either at (to inspect) or code (to complete), not both", true);
        return;
    }
    if (code) {
        s_complete(ctx, call, code, cursor);
    } else if (cursor >= 0) {
        mcp_call_text(call, "look: cursor needs code (the text to complete)", true);
    } else if (at) {
        s_inspect(ctx, call, at);
    } else {
        s_overview(ctx, call);
    }
}

void tool_look_describe(mcp_tool_t *out)
{
    *out = (mcp_tool_t){
        .name = "look",
        .title = "Look at the kernel's state",
        .description = "See the kernel's state without changing it: with no arguments, the variables; with `at`, "
                       "one variable or a path into it (data.scores.0, model.layers.0.type) with its value and "
                       "children, or a function's signature and docs; with `code` and `cursor`, completions.",
        .input_schema = s_schema,
        .output_schema = tools_schema("look"),
        .read_only = true,
        .idempotent = true,
    };
}

void tool_look_register(mcp_server_t *srv, tools_ctx_t *ctx)
{
    mcp_tool_t t;
    tool_look_describe(&t);
    t.fn = s_look;
    t.ud = ctx;
    mcp_server_add_tool(srv, &t);
}
