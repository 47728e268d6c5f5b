/* jmsg: request contents and reply parsing (see jmsg.h). */
#include "jmsg.h"

#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "wire.h"

void jmsg_execute_request(buf_t *out, const jmsg_execute_t *e)
{
    buf_puts(out, "{\"code\":");
    buf_put_json_str(out, e->code, e->code_len ? e->code_len : strlen(e->code));
    buf_printf(out, ",\"silent\":%s,\"store_history\":%s,\"user_expressions\":{", e->silent ? "true" : "false",
               e->store_history ? "true" : "false");
    if (e->rat_expr) {
        buf_puts(out, "\"rat\":");
        buf_put_json_str(out, e->rat_expr, strlen(e->rat_expr));
    }
    buf_printf(out, "},\"allow_stdin\":%s,\"stop_on_error\":false}", e->allow_stdin ? "true" : "false");
}

void jmsg_input_reply(buf_t *out, const char *value)
{
    buf_puts(out, "{\"value\":");
    buf_put_json_str(out, value, strlen(value));
    buf_puts(out, "}");
}

void jmsg_complete_request(buf_t *out, const char *code, size_t cursor_pos)
{
    buf_puts(out, "{\"code\":");
    buf_put_json_str(out, code, strlen(code));
    buf_printf(out, ",\"cursor_pos\":%zu}", cursor_pos);
}

void jmsg_inspect_request(buf_t *out, const char *code, size_t cursor_pos)
{
    buf_puts(out, "{\"code\":");
    buf_put_json_str(out, code, strlen(code));
    buf_printf(out, ",\"cursor_pos\":%zu,\"detail_level\":0}", cursor_pos);
}

const char *jmsg_shutdown_request(bool restart)
{
    return restart ? "{\"restart\":true}" : "{\"restart\":false}";
}

void jmsg_complete_reply_parse(json_object *content, jmsg_complete_reply_t *out)
{
    *out = (jmsg_complete_reply_t){.cursor_start = -1, .cursor_end = -1};
    json_object *matches = NULL, *meta = NULL, *types = NULL, *v = NULL;
    json_object_object_get_ex(content, "matches", &matches);
    if (json_object_object_get_ex(content, "metadata", &meta))
        json_object_object_get_ex(meta, "_jupyter_types_experimental", &types);
    /* Prefer the typed list (label, kind, signature); plain matches otherwise. */
    bool typed = types && json_object_is_type(types, json_type_array) && json_object_array_length(types);
    json_object *src = typed ? types : matches;
    out->n = src && json_object_is_type(src, json_type_array) ? json_object_array_length(src) : 0;
    out->items = out->n ? xcalloc(out->n, sizeof *out->items) : NULL;
    for (size_t i = 0; i < out->n; i++) {
        json_object *m = json_object_array_get_idx(src, i);
        const char *label = typed ? wire_get_str(m, "text") : json_object_get_string(m);
        out->items[i] = (jmsg_completion_t){
            .label = label,
            .kind = typed ? wire_get_str(m, "type") : NULL,
            .signature = typed ? wire_get_str(m, "signature") : NULL,
        };
    }
    if (json_object_object_get_ex(content, "cursor_start", &v))
        out->cursor_start = (long)json_object_get_int64(v);
    if (json_object_object_get_ex(content, "cursor_end", &v))
        out->cursor_end = (long)json_object_get_int64(v);
}

void jmsg_complete_reply_free(jmsg_complete_reply_t *r)
{
    free(r->items);
    r->items = NULL;
    r->n = 0;
}

const char *jmsg_inspect_reply_text(json_object *content, size_t *len)
{
    json_object *found = NULL, *data = NULL, *plain = NULL;
    if (!json_object_object_get_ex(content, "found", &found) || !json_object_get_boolean(found) ||
        !json_object_object_get_ex(content, "data", &data) || !json_object_object_get_ex(data, "text/plain", &plain))
        return NULL;
    /* A text/plain that is not a string reads as empty. */
    *len = json_object_is_type(plain, json_type_string) ? (size_t)json_object_get_string_len(plain) : 0;
    return *len ? json_object_get_string(plain) : "";
}
