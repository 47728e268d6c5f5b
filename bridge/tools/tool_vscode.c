/* tool_vscode: the result shapes vscode-rat (clientInfo "rat-vscode") reads.
 *
 * vscode-rat was written for the Go `rat serve`, whose run result says
 * `status: "✓ 150ms | 2 vars"` (the trailer it prints on the output fence,
 * an error when it starts with ✗), `error: "<output>\n<traceback>"` (a
 * string it shows whole; its .py view shows the last line), and marks a
 * figure with a `__RAT_PLOT__:<file>` line (it copies the file and shows
 * it). rat-py's run_result says `status: "error"`, `error: {ename, evalue,
 * traceback}` and names images `[image: /assets/<id>]`: right for every
 * other client, misread by vscode-rat. So for its sessions only (they are
 * known by tool_run_holds) the result is reshaped here, within the
 * outputSchema (schemas.json: status and error each allow both forms). */
#include "tools.h"

#include <stdlib.h>
#include <string.h>

#include "assets.h"
#include "buf.h"
#include "mem.h"
#include "outitems.h"
#include "output.h"
#include "utf8.h"

#define VSCODE_ERROR_MAX (64u << 10)   /* bytes of the error string */
#define VSCODE_ERROR_HEAD (16u << 10)  /* kept from its start when cut (the rest from its end) */

/* See tools.h. */
const char *tool_vscode_image_id(json_object *asset)
{
    json_object *mime = NULL, *id = NULL;
    if (!json_object_object_get_ex(asset, "mime", &mime) || !json_object_object_get_ex(asset, "id", &id) ||
        strncmp(json_object_get_string(mime), "image/", 6) != 0)
        return NULL;
    return json_object_get_string(id);
}

/* Replaces, in text, the first line equal to `line` (a whole line) by
 * `with`; when the block just before it equals `before` (may be NULL), that
 * goes too. Returns whether a line was replaced. */
static bool s_replace_line(buf_t *text, const char *line, const char *before, const char *with)
{
    size_t ll = strlen(line);
    const char *t = buf_str(text);
    for (const char *p = t; (p = strstr(p, line)) != NULL; p++) {
        bool starts = p == t || p[-1] == '\n';
        bool ends = p[ll] == '\0' || p[ll] == '\n';
        if (!starts || !ends)
            continue;
        size_t from = (size_t)(p - t), to = from + ll;
        size_t bl = before ? strlen(before) : 0;
        if (bl && from >= bl + 1 && memcmp(t + from - bl - 1, before, bl) == 0 &&
            (from == bl + 1 || t[from - bl - 2] == '\n'))
            from -= bl + 1;
        buf_t out;
        buf_init(&out, 0);
        buf_append(&out, t, from);
        buf_puts(&out, with);
        buf_puts(&out, t + to);
        buf_free(text);
        *text = out;
        return true;
    }
    return false;
}

/* The output text with each saved image's `[image: <link>]` line, and the
 * text/plain the kernel sent with the image (`<Figure size 640x480 with 1
 * Axes>`: a notebook shows the picture instead), replaced by
 * `__RAT_PLOT__:<file>` in place. Caller owns the result. */
static char *s_output(struct assets *store, runtime_exec_t *ex, const char *output)
{
    buf_t text;
    buf_init(&text, 0);
    buf_puts(&text, output);
    json_object *items = store ? outitems_json(runtime_exec_items(ex)) : NULL;
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        json_object *it = json_object_array_get_idx(items, i), *assets = NULL, *data = NULL, *plain = NULL;
        if (!json_object_object_get_ex(it, "assets", &assets))
            continue;
        buf_t before;
        buf_init(&before, 0);
        if (json_object_object_get_ex(it, "data", &data) && json_object_object_get_ex(data, "text/plain", &plain)) {
            const char *p = json_object_get_string(plain);
            output_clean_text(p, strlen(p), &before);
            while (before.len && before.data[before.len - 1] == '\n')
                before.data[--before.len] = '\0';
        }
        for (size_t k = 0; k < json_object_array_length(assets); k++) {
            const char *id = tool_vscode_image_id(json_object_array_get_idx(assets, k));
            if (!id)
                continue;
            char *path = assets_path(store, id, NULL);
            char *link = assets_link(store, id);
            char *line = xasprintf("[image: %s]", link);
            char *plot = path ? xasprintf("__RAT_PLOT__:%s", path) : NULL;
            if (plot && !s_replace_line(&text, line, before.len ? buf_str(&before) : NULL, plot))
                buf_printf(&text, "%s%s", text.len ? "\n" : "", plot);
            if (plot && before.len)
                buf_reset(&before); /* one text/plain per bundle */
            free(plot);
            free(line);
            free(link);
            free(path);
        }
        buf_free(&before);
    }
    json_object_put(items);
    return buf_take(&text);
}

/* The error as one string, as the Go server gave it: the output, then the
 * traceback, ending with the exception line (`ZeroDivisionError: division
 * by zero`, which vscode-rat's .py view shows). Bounded: a longer one keeps
 * its start and its end. Caller owns the result. */
static char *s_error(runtime_exec_t *ex, const char *output)
{
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, output);
    runtime_outcome_t oc = runtime_exec_outcome(ex);
    if (oc == RUNTIME_ERROR) {
        runtime_error_t e;
        runtime_exec_error(ex, &e);
        size_t at = b.len;
        for (size_t i = 0; e.traceback && i < json_object_array_length(e.traceback); i++) {
            const char *t = json_object_get_string(json_object_array_get_idx(e.traceback, i));
            if (!t || !*t)
                continue;
            if (b.len)
                buf_putc(&b, '\n');
            buf_puts(&b, t);
            while (b.len && b.data[b.len - 1] == '\n')
                b.data[--b.len] = '\0';
        }
        /* The exception line last, whatever the traceback held (none, or
         * cut before its end). An empty ename: evalue is the whole text. */
        char *last = e.ename && *e.ename ? xasprintf("%s%s%s", e.ename, e.evalue && *e.evalue ? ": " : "",
                                                     e.evalue ? e.evalue : "")
                                         : xstrdup(e.evalue ? e.evalue : "Error");
        const char *tail = strrchr(buf_str(&b) + at, '\n');
        tail = tail ? tail + 1 : buf_str(&b) + at;
        if (strcmp(tail, last) != 0) {
            if (b.len)
                buf_putc(&b, '\n');
            buf_puts(&b, last);
        }
        free(last);
    } else {
        const char *why = oc == RUNTIME_ABORTED ? "aborted: the kernel did not run this code (an earlier error "
                                                  "stopped the queue)"
                                                : runtime_exec_why(ex);
        if (b.len)
            buf_putc(&b, '\n');
        buf_puts(&b, why ? why : "failed");
    }
    if (b.len > VSCODE_ERROR_MAX) {
        size_t head = utf8_floor(b.data, b.len, VSCODE_ERROR_HEAD);
        size_t keep = VSCODE_ERROR_MAX - VSCODE_ERROR_HEAD;
        size_t from = b.len - keep;
        while (from < b.len && (b.data[from] & 0xC0) == 0x80)
            from++;
        buf_t cut;
        buf_init(&cut, 0);
        buf_append(&cut, b.data, head);
        buf_printf(&cut, "\n… [%zu bytes of the traceback cut] …\n", from - head);
        buf_append(&cut, b.data + from, b.len - from);
        buf_free(&b);
        b = cut;
    }
    return buf_take(&b);
}

/* See tools.h. */
void tool_vscode_run_result(json_object *sc, struct assets *store, runtime_exec_t *ex, const char *output,
                            const char *footer)
{
    /* The trailer: the footer's first line (✓ 3ms | 1 var, ✗ 5ms). */
    const char *nl = strchr(footer, '\n');
    json_object_object_add(sc, "status",
                           json_object_new_string_len(footer, nl ? (int)(nl - footer) : (int)strlen(footer)));
    char *out = s_output(store, ex, output);
    json_object *success = NULL;
    bool ok = !json_object_object_get_ex(sc, "success", &success) || json_object_get_boolean(success);
    if (!ok && runtime_exec_state(ex) == RUNTIME_EXEC_DONE) {
        char *err = s_error(ex, out);
        json_object_object_add(sc, "error", json_object_new_string(err));
        free(err);
    }
    json_object_object_add(sc, "output", json_object_new_string(out));
    free(out);
}
