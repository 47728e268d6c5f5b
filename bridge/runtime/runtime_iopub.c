/* runtime_iopub: what the kernel sends about a run (iopub messages and the
 * execute_reply) becomes its output, error, assets and outcome. */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

#define TRACEBACK_MAX (64u << 10) /* bytes of cleaned frames kept for structured results */

static long s_find_line(const char *tb, long number);
static void s_record_error(runtime_exec_t *ex, json_object *content);
static void s_output_text(runtime_exec_t *ex, int stream, const char *text, size_t len);
static void s_save_assets(runtime_exec_t *ex, json_object *data, json_object *saved);
static void s_output_bundle(runtime_exec_t *ex, const char *msg_type, json_object *content);
static void s_clear(runtime_exec_t *ex);

/* Finds "Cell In [N], line L" (IPython 8) or "Input In [N]" ... "line L" in
 * a cleaned traceback: the last frame that points into this run's cell. */
static long s_find_line(const char *tb, long number)
{
    long line = 0;
    const char *p = tb;
    while ((p = strstr(p, "In ")) || (p = NULL)) {
        const char *q = p + 3;
        if (*q == ' ')
            q++;
        if (*q != '[') {
            p += 3;
            continue;
        }
        char *end = NULL;
        long cell = strtol(q + 1, &end, 10);
        if (!end || *end != ']') {
            p += 3;
            continue;
        }
        const char *l = strstr(end, "line ");
        const char *nl = strchr(end, '\n');
        if (l && (!nl || l < nl) && (cell == number || number == 0)) {
            long v = strtol(l + 5, NULL, 10);
            if (v > 0)
                line = v;
        }
        p = end;
    }
    return line;
}

static void s_record_error(runtime_exec_t *ex, json_object *content)
{
    const char *ename = wire_get_str(content, "ename");
    const char *evalue = wire_get_str(content, "evalue");
    free(ex->ename);
    free(ex->evalue);
    ex->ename = xstrdup(ename ? ename : "Error");
    ex->evalue = xstrdup(evalue ? evalue : "");
    if (ex->rt->lang && ex->rt->lang->clean_error)
        ex->rt->lang->clean_error(&ex->ename, &ex->evalue);
    json_object *tb = NULL;
    if (!json_object_object_get_ex(content, "traceback", &tb) || !json_object_is_type(tb, json_type_array))
        return;
    buf_t clean;
    buf_init(&clean, 1u << 20);
    /* The frames, cleaned, for structured results: at most TRACEBACK_MAX
     * bytes of them (the deepest frames are the ones cut). */
    json_object_put(ex->traceback);
    json_object_put(ex->traceback_ansi);
    ex->traceback = json_object_new_array();
    ex->traceback_ansi = json_object_new_array();
    size_t raw = 0;
    for (size_t i = 0; i < json_object_array_length(tb); i++) {
        json_object *t = json_object_array_get_idx(tb, i);
        if (json_object_is_type(t, json_type_string)) {
            /* As sent, for a client that shows the colours (a notebook):
             * bounded like the cleaned frames. */
            raw += (size_t)json_object_get_string_len(t) + 1;
            if (raw <= TRACEBACK_MAX)
                json_object_array_add(ex->traceback_ansi, json_object_get(t));
            size_t at = clean.len;
            output_clean_text(json_object_get_string(t), (size_t)json_object_get_string_len(t), &clean);
            if (clean.len <= TRACEBACK_MAX)
                json_object_array_add(ex->traceback, json_object_new_string_len(clean.data + at, (int)(clean.len - at)));
            buf_putc(&clean, '\n');
        }
    }
    long line = s_find_line(buf_str(&clean), ex->number);
    buf_free(&clean);
    if (line <= 0 || !ex->code)
        return;
    /* The source line, from the code we sent. */
    const char *p = ex->code;
    for (long i = 1; i < line && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        return;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    while (n && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    if (n > 200)
        n = 200;
    ex->line = line;
    free(ex->source);
    ex->source = xstrndup(p, n);
}

static void s_output_text(runtime_exec_t *ex, int stream, const char *text, size_t len)
{
    if (ex->clear_pending) {
        ex->clear_pending = false;
        s_clear(ex);
    }
    buf_t clean;
    buf_init(&clean, 0);
    output_write(ex->out, text, len, &clean);
    outitems_stream(ex->items, stream, clean.data, clean.len);
    if (clean.len)
        rt_emit(ex->rt, ex, RUNTIME_EV_OUTPUT, stream, clean.data, clean.len, NULL);
    if (clean.len && ex->has_obs && ex->obs.on_output)
        ex->obs.on_output(ex->obs_ud, ex, stream, clean.data, clean.len);
    buf_free(&clean);
}

/* One saved asset (or why it was not saved) for structured results. */
static json_object *s_asset_json(assets_t *store, const char *mime, const char *id, const char *err)
{
    json_object *a = json_object_new_object();
    json_object_object_add(a, "mime", json_object_new_string(mime));
    if (!id) {
        json_object_object_add(a, "error", json_object_new_string(err));
        return a;
    }
    json_object_object_add(a, "id", json_object_new_string(id));
    char *uri = xasprintf("rat://assets/%s", id);
    json_object_object_add(a, "uri", json_object_new_string(uri));
    free(uri);
    if (assets_http(store)) {
        char *url = xasprintf("/assets/%s", id);
        json_object_object_add(a, "url", json_object_new_string(url));
        free(url);
    } else {
        char *path = assets_path(store, id, NULL);
        if (path)
            json_object_object_add(a, "file", json_object_new_string(path));
        free(path);
    }
    return a;
}

/* Saves the rich parts of a MIME bundle (images, HTML) as assets and adds
 * a line naming each to the output; a part that cannot be saved says why.
 * Each is also appended to saved (a JSON array). */
static void s_save_assets(runtime_exec_t *ex, json_object *data, json_object *saved)
{
    static const char *mimes[] = {"image/png", "image/jpeg", "image/svg+xml", "text/html"};
    assets_t *store = ex->rt->assets;
    if (!store)
        return;
    for (size_t i = 0; i < sizeof mimes / sizeof mimes[0]; i++) {
        json_object *v = NULL;
        if (!json_object_object_get_ex(data, mimes[i], &v))
            continue;
        if (strcmp(mimes[i], "text/html") == 0 && json_object_object_get_ex(data, "text/plain", NULL) &&
            !(ex->rt->lang && ex->rt->lang->html_with_plain_is_asset))
            continue;
        const char *text = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        size_t tlen = text ? (size_t)json_object_get_string_len(v) : 0;
        if (!text) {
            if (!json_object_is_type(v, json_type_array))
                continue;
            text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN); /* list of lines: rare */
            tlen = strlen(text);
        }
        unsigned char *bin = NULL;
        size_t blen = tlen;
        const void *bytes = text;
        bool binary = strncmp(mimes[i], "image/png", 9) == 0 || strncmp(mimes[i], "image/jpeg", 10) == 0;
        if (binary) {
            /* Binary outputs travel base64-encoded (with line breaks at times). */
            bin = xmalloc(tlen / 4 * 3 + 4);
            if (sodium_base642bin(bin, tlen / 4 * 3 + 4, text, tlen, "\n\r ", &blen, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) != 0) {
                free(bin);
                output_write_block(ex->out, "[image not saved: invalid base64 data]", 38);
                json_object_array_add(saved, s_asset_json(store, mimes[i], NULL, "invalid base64 data"));
                continue;
            }
            bytes = bin;
        }
        char id[ASSETS_ID_MAX], err[256];
        char *line;
        if (assets_put(store, mimes[i], bytes, blen, id, err, sizeof err) == 0) {
            char *link = assets_link(store, id);
            line = xasprintf("[%s: %s]", strcmp(mimes[i], "text/html") == 0 ? "html" : "image", link);
            free(link);
            ex->assets++;
            json_object_array_add(saved, s_asset_json(store, mimes[i], id, NULL));
        } else {
            line = xasprintf("[%s]", err);
            json_object_array_add(saved, s_asset_json(store, mimes[i], NULL, err));
        }
        output_write_block(ex->out, line, strlen(line));
        free(line);
        free(bin);
    }
}

static void s_output_bundle(runtime_exec_t *ex, const char *msg_type, json_object *content)
{
    json_object *data = NULL, *plain = NULL;
    if (!json_object_object_get_ex(content, "data", &data) || !json_object_is_type(data, json_type_object))
        return;
    if (ex->clear_pending) {
        ex->clear_pending = false;
        s_clear(ex);
    }
    if (json_object_object_get_ex(data, "text/plain", &plain) && json_object_is_type(plain, json_type_string)) {
        const char *t = json_object_get_string(plain);
        size_t n = (size_t)json_object_get_string_len(plain);
        output_write_block(ex->out, t, n);
        if (ex->has_obs && ex->obs.on_output) {
            buf_t clean;
            buf_init(&clean, 0);
            output_clean_text(t, n, &clean);
            buf_putc(&clean, '\n');
            ex->obs.on_output(ex->obs_ud, ex, 0, clean.data, clean.len);
            buf_free(&clean);
        }
    }
    json_object *saved = json_object_new_array();
    s_save_assets(ex, data, saved);
    json_object *item = outitems_bundle(ex->items, msg_type, content, saved);
    if (item)
        rt_emit(ex->rt, ex, RUNTIME_EV_OUTPUT, -1, NULL, 0, item);
}

/* clear_output, now or (wait=True) at the next output. */
static void s_clear(runtime_exec_t *ex)
{
    output_clear(ex->out);
    json_object *item = outitems_clear(ex->items);
    rt_emit(ex->rt, ex, RUNTIME_EV_OUTPUT, -1, NULL, 0, item);
}

void rt_exec_iopub(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m)
{
    const char *t = m->msg_type;
    json_object *c = m->content;
    if (strcmp(t, "stream") == 0) {
        const char *name = wire_get_str(c, "name");
        const char *text;
        size_t len;
        /* In pieces: a flood's message is never copied whole (wire.h). */
        while (wire_stream_next(m, &text, &len))
            s_output_text(ex, name && strcmp(name, "stderr") == 0 ? 1 : 0, text, len);
    } else if (strcmp(t, "execute_result") == 0 || strcmp(t, "display_data") == 0 ||
               strcmp(t, "update_display_data") == 0) {
        json_object *n = NULL;
        if (json_object_object_get_ex(c, "execution_count", &n) && json_object_is_type(n, json_type_int))
            ex->number = (long)json_object_get_int64(n);
        s_output_bundle(ex, t, c);
    } else if (strcmp(t, "error") == 0) {
        s_record_error(ex, c);
    } else if (strcmp(t, "clear_output") == 0) {
        json_object *w = NULL;
        if (json_object_object_get_ex(c, "wait", &w) && json_object_get_boolean(w))
            ex->clear_pending = true;
        else
            s_clear(ex);
    } else if (strcmp(t, "execute_input") == 0) {
        json_object *n = NULL;
        if (json_object_object_get_ex(c, "execution_count", &n) && json_object_is_type(n, json_type_int))
            ex->number = (long)json_object_get_int64(n);
        rt_exec_acknowledged(self, ex);
        rt_emit(self, ex, RUNTIME_EV_START, -1, NULL, 0, NULL);
    } else if (strcmp(t, "status") == 0) {
        const char *st = wire_get_str(c, "execution_state");
        if (st && strcmp(st, "busy") == 0) {
            rt_exec_acknowledged(self, ex);
        } else if (st && strcmp(st, "idle") == 0) {
            ex->got_idle = true;
            if (!ex->got_reply)
                rt_watch(ex, LOST_PROBE_MS); /* idle without a reply: is it coming? */
            rt_maybe_done(self, ex);
        }
    }
}

void rt_exec_reply(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m)
{
    json_object *c = m->content, *n = NULL;
    const char *status = wire_get_str(c, "status");
    if (json_object_object_get_ex(c, "execution_count", &n) && json_object_is_type(n, json_type_int)) {
        ex->number = (long)json_object_get_int64(n);
        self->exec_count = ex->number;
    }
    ex->got_reply = true;
    bool ok = status && strcmp(status, "ok") == 0;
    bool have_snapshot = rt_helper_reply_snapshot(self, c, ok);
    if (ok) {
        ex->outcome = RUNTIME_OK;
        ex->vars = self->vars;
    } else if (status && strcmp(status, "aborted") == 0) {
        ex->outcome = RUNTIME_ABORTED;
        ex->vars = self->vars;
    } else {
        ex->outcome = RUNTIME_ERROR;
        if (!ex->ename && status && strcmp(status, "abort") == 0) {
            /* IRkernel's answer to an interrupt. */
            ex->ename = xstrdup("");
            ex->evalue = xstrdup("Interrupted");
        }
        if (!ex->ename)
            s_record_error(ex, c);
        ex->vars = self->vars;
    }
    rt_helper_run_snapshot(self, ex, have_snapshot);
    if (!ex->got_idle)
        rt_watch(ex, LOST_PROBE_MS); /* a reply without idle: is the status coming? */
    rt_maybe_done(self, ex);
}
