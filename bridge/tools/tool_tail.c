/* tool_tail: the recent activity, for vscode-rat's `tail {n, format}`.
 *
 * vscode-rat's client (written for the Go `rat serve`) has a `tail` call:
 * the last n runs of any session, each with its exec count, code, output,
 * success and time, as text or as a JSON array (the Go server's activity
 * log entries {n, code, output, ok, t}). rat-py keeps the same facts in
 * memory, from the runs it watches (tool_watch.c passes every run event
 * here), and serves them under the same name. The tool is not listed in
 * tools/list (mcp_tool_t.unlisted): rat-py's surface stays run, look and
 * ctl; a client that knows the name calls it.
 *
 * Bounded: TAIL_KEEP entries, each with at most TAIL_TEXT bytes of code and
 * of output (cut at a character boundary, as the Go server cuts at 500). */
#define LOG_MODULE "tail"
#include "tools.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "mem.h"
#include "utf8.h"

#define TAIL_KEEP 100     /* runs remembered (the most n asks for) */
#define TAIL_TEXT 500     /* bytes of code, and of output, per run */

typedef struct {
    unsigned long run;    /* runtime_exec_id: 0 for a free slot */
    long exec;
    buf_t code, output;
    bool done, ok;
    time_t t;
} s_entry_t;

typedef struct tool_tail {
    s_entry_t ring[TAIL_KEEP];
    size_t next;          /* the slot the next run takes */
} tool_tail_t;

static const char s_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":10,\"description\":"
    "\"How many recent runs (the last n, oldest first).\"},"
    "\"format\":{\"type\":\"string\",\"enum\":[\"text\",\"json\"],\"default\":\"text\"}},"
    "\"additionalProperties\":false}";

tool_tail_t *tool_tail_new(void)
{
    return xcalloc(1, sizeof(tool_tail_t));
}

void tool_tail_destroy(tool_tail_t **self_p)
{
    tool_tail_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < TAIL_KEEP; i++) {
        buf_free(&self->ring[i].code);
        buf_free(&self->ring[i].output);
    }
    free(self);
    *self_p = NULL;
}

/* Appends what fits of text to b (at most TAIL_TEXT bytes in all). */
static void s_keep(buf_t *b, const char *text, size_t len)
{
    if (b->len >= TAIL_TEXT)
        return;
    size_t room = TAIL_TEXT - b->len;
    buf_append(b, text, len > room ? utf8_floor(text, len, room) : len);
}

static s_entry_t *s_find(tool_tail_t *self, unsigned long run)
{
    for (size_t i = 0; i < TAIL_KEEP; i++)
        if (self->ring[i].run == run)
            return &self->ring[i];
    return NULL;
}

/* See tools.h. */
void tool_tail_note(tool_tail_t *self, const runtime_ev_t *ev)
{
    if (!self || !ev->ex)
        return;
    unsigned long run = runtime_exec_id(ev->ex);
    if (ev->kind == RUNTIME_EV_START) {
        s_entry_t *e = &self->ring[self->next];
        self->next = (self->next + 1) % TAIL_KEEP;
        buf_reset_shrink(&e->code, 0);
        buf_reset_shrink(&e->output, 0);
        e->run = run;
        e->exec = runtime_exec_number(ev->ex);
        e->done = e->ok = false;
        e->t = time(NULL);
        const char *code = runtime_exec_code(ev->ex);
        s_keep(&e->code, code ? code : "", code ? strlen(code) : 0);
        return;
    }
    s_entry_t *e = s_find(self, run);
    if (!e)
        return;
    if (ev->kind == RUNTIME_EV_OUTPUT) {
        if (ev->stream >= 0) {
            s_keep(&e->output, ev->text, ev->len);
        } else if (ev->item) {
            json_object *data = NULL, *plain = NULL;
            if (json_object_object_get_ex(ev->item, "data", &data) &&
                json_object_object_get_ex(data, "text/plain", &plain)) {
                s_keep(&e->output, json_object_get_string(plain), (size_t)json_object_get_string_len(plain));
                s_keep(&e->output, "\n", 1);
            }
        }
    } else if (ev->kind == RUNTIME_EV_END) {
        e->done = true;
        e->ok = strcmp(tool_run_status_word(ev->ex), "ok") == 0;
        e->exec = runtime_exec_number(ev->ex);
        e->t = time(NULL);
        if (runtime_exec_outcome(ev->ex) == RUNTIME_ERROR) {
            runtime_error_t er;
            runtime_exec_error(ev->ex, &er);
            char *line = xasprintf("%s%s: %s", e->output.len && e->output.data[e->output.len - 1] != '\n' ? "\n" : "",
                                   er.ename ? er.ename : "Error", er.evalue ? er.evalue : "");
            s_keep(&e->output, line, strlen(line));
            free(line);
        }
    }
}

/* The last n finished runs, oldest first, in *out (borrowed); returns how
 * many. */
static size_t s_last(tool_tail_t *self, size_t n, s_entry_t **out)
{
    size_t k = 0;
    for (size_t i = 1; i <= TAIL_KEEP && k < n; i++) {
        s_entry_t *e = &self->ring[(self->next + TAIL_KEEP - i) % TAIL_KEEP];
        if (e->run && e->done)
            out[k++] = e;
    }
    for (size_t i = 0; i < k / 2; i++) { /* newest first -> oldest first */
        s_entry_t *x = out[i];
        out[i] = out[k - 1 - i];
        out[k - 1 - i] = x;
    }
    return k;
}

/* Up to max non-blank lines of text, each indented, onto b. */
static void s_lines(buf_t *b, const char *text, int max)
{
    int shown = 0;
    for (const char *p = text; *p && shown < max;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n && strspn(p, " \t") < n) {
            buf_puts(b, "  ");
            buf_append(b, p, n);
            buf_putc(b, '\n');
            shown++;
        }
        p = e ? e + 1 : p + n;
    }
}

static void s_tail(mcp_call_t *call, json_object *args, void *ud)
{
    tools_ctx_t *ctx = ud;
    json_object *v = NULL;
    long n = json_object_object_get_ex(args, "n", &v) ? (long)json_object_get_int64(v) : 10;
    bool json = json_object_object_get_ex(args, "format", &v) && strcmp(json_object_get_string(v), "json") == 0;
    if (n < 1)
        n = 10;
    if (n > TAIL_KEEP)
        n = TAIL_KEEP;
    s_entry_t *last[TAIL_KEEP];
    size_t k = ctx->tail ? s_last(ctx->tail, (size_t)n, last) : 0;
    if (json) {
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < k; i++) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "n", json_object_new_int64(last[i]->exec));
            json_object_object_add(o, "code", json_object_new_string(buf_str(&last[i]->code)));
            json_object_object_add(o, "output", json_object_new_string(buf_str(&last[i]->output)));
            json_object_object_add(o, "ok", json_object_new_boolean(last[i]->ok));
            json_object_object_add(o, "t", json_object_new_int64((int64_t)last[i]->t));
            json_object_array_add(arr, o);
        }
        mcp_call_text(call, json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                                    JSON_C_TO_STRING_NOSLASHESCAPE),
                      false);
        json_object_put(arr);
        return;
    }
    if (!k) {
        mcp_call_text(call, "no recent activity", false);
        return;
    }
    buf_t b;
    buf_init(&b, 0);
    for (size_t i = 0; i < k; i++) {
        buf_printf(&b, "%sexec #%ld %s\n", i ? "\n" : "", last[i]->exec, last[i]->ok ? "✓" : "✗");
        s_lines(&b, buf_str(&last[i]->code), 6);
        s_lines(&b, buf_str(&last[i]->output), 6);
    }
    while (b.len && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    mcp_call_text(call, buf_str(&b), false);
    buf_free(&b);
}

void tool_tail_register(mcp_server_t *srv, tools_ctx_t *ctx)
{
    mcp_tool_t t = {
        .name = "tail",
        .title = "Recent activity",
        .description = "The last n runs of any session: exec count, code, output, success, time (text or JSON).",
        .input_schema = s_schema,
        .read_only = true,
        .idempotent = true,
        .unlisted = true,
        .fn = s_tail,
        .ud = ctx,
    };
    mcp_server_add_tool(srv, &t);
}
