/* jsonrpc: JSON-RPC 2.0 classification and builders. */
#include "jsonrpc.h"

#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "jsontok.h"
#include "mem.h"
#include "utf8.h"

static void s_invalid(jsonrpc_msg_t *out, int code, const char *msg)
{
    out->kind = JSONRPC_INVALID;
    out->err_code = code;
    out->err_msg = msg;
}

/* json-c clamps integers beyond 64 bits to INT64_MIN or UINT64_MAX, so an id
 * parsed as one of those may not be the id the client sent, and the response
 * would never match its request: both are refused as out of range. */
static int s_id_in_range(json_object *id)
{
    if (!json_object_is_type(id, json_type_int))
        return 1;
    if (json_object_get_int64(id) == INT64_MIN)
        return 0;
    return json_object_get_uint64(id) != UINT64_MAX;
}

/* An id is usable when it is a string or an integer (JSON-RPC allows
 * fractional numbers but MCP does not). */
static int s_id_ok(json_object *id)
{
    return id && (json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int)) &&
           s_id_in_range(id);
}

void jsonrpc_parse(const char *data, size_t len, jsonrpc_msg_t *out)
{
    memset(out, 0, sizeof *out);
    /* JSON text is UTF-8 (RFC 8259). json-c's own check lets overlong forms
     * (C0 80 is a NUL in disguise), encoded surrogates and code points past
     * U+10FFFF through, which the kernel side (Python) would refuse to
     * decode, so the whole line is checked strictly first. */
    if (utf8_valid_prefix(data, len) != len) {
        s_invalid(out, JSONRPC_PARSE_ERROR, "Parse error: not valid UTF-8");
        return;
    }
    json_tokener *tok = jsontok_take(JSONRPC_MAX_DEPTH);
    json_object *root = NULL;
    if (len <= (size_t)0x7fffffff)
        root = json_tokener_parse_ex(tok, data, (int)len);
    size_t consumed = (size_t)json_tokener_get_parse_end(tok);
    /* A bare number ("42") is complete only once something follows it. */
    if (!root && json_tokener_get_error(tok) == json_tokener_continue) {
        root = json_tokener_parse_ex(tok, " ", 1);
        consumed = len;
    }
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    jsontok_give(&tok, JSONRPC_MAX_DEPTH, len);
    if (!root && jerr == json_tokener_success) {
        /* The text was the literal null: JSON, but not a request. */
        s_invalid(out, JSONRPC_INVALID_REQUEST, "Invalid Request: expected a JSON object");
        return;
    }
    if (!root || jerr != json_tokener_success) {
        json_object_put(root);
        s_invalid(out, JSONRPC_PARSE_ERROR, "Parse error: not valid JSON");
        return;
    }
    /* Only whitespace may follow the value. */
    for (size_t i = consumed; i < len; i++) {
        if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r' && data[i] != '\n') {
            json_object_put(root);
            s_invalid(out, JSONRPC_PARSE_ERROR, "Parse error: trailing data after the JSON value");
            return;
        }
    }
    out->root = root;
    if (json_object_is_type(root, json_type_array)) {
        s_invalid(out, JSONRPC_INVALID_REQUEST, "Invalid Request: batches are not supported");
        return;
    }
    if (!json_object_is_type(root, json_type_object)) {
        s_invalid(out, JSONRPC_INVALID_REQUEST, "Invalid Request: expected a JSON object");
        return;
    }
    json_object *id = NULL, *ver = NULL, *method = NULL;
    int has_id = json_object_object_get_ex(root, "id", &id);
    if (has_id && s_id_ok(id))
        out->id = id;
    if (!json_object_object_get_ex(root, "jsonrpc", &ver) ||
        !json_object_is_type(ver, json_type_string) ||
        strcmp(json_object_get_string(ver), "2.0") != 0) {
        s_invalid(out, JSONRPC_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
        return;
    }
    if (has_id && !s_id_ok(id)) {
        s_invalid(out, JSONRPC_INVALID_REQUEST, id && json_object_is_type(id, json_type_int)
                                                    ? "Invalid Request: \"id\" is out of range (64 bits)"
                                                    : "Invalid Request: \"id\" must be a string or an integer");
        return;
    }
    if (json_object_object_get_ex(root, "method", &method)) {
        if (!json_object_is_type(method, json_type_string)) {
            s_invalid(out, JSONRPC_INVALID_REQUEST, "Invalid Request: \"method\" must be a string");
            return;
        }
        out->method = json_object_get_string(method);
        out->method_len = (size_t)json_object_get_string_len(method);
        json_object *params = NULL;
        if (json_object_object_get_ex(root, "params", &params) && params &&
            !json_object_is_type(params, json_type_object) &&
            !json_object_is_type(params, json_type_array)) {
            s_invalid(out, JSONRPC_INVALID_REQUEST, "Invalid Request: \"params\" must be an object");
            return;
        }
        out->params = params;
        out->kind = has_id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
        return;
    }
    json_object *result = NULL, *error = NULL;
    int has_result = json_object_object_get_ex(root, "result", &result);
    int has_error = json_object_object_get_ex(root, "error", &error);
    if (has_id && (has_result != has_error)) {
        out->kind = JSONRPC_RESPONSE;
        out->result = has_result ? result : NULL;
        out->error = has_error ? error : NULL;
        return;
    }
    s_invalid(out, JSONRPC_INVALID_REQUEST, "Invalid Request: no \"method\", and not a response");
}

void jsonrpc_msg_free(jsonrpc_msg_t *m)
{
    json_object_put(m->root);
    memset(m, 0, sizeof *m);
}

char *jsonrpc_to_string(json_object *obj)
{
    const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t n = strlen(s);
    if (utf8_valid_prefix(s, n) == n)
        return xstrdup(s);
    /* json-c writes string bytes as they are. A JSON text must be UTF-8, so
     * text that is not (a message cut inside a character, bytes from a
     * kernel) gets U+FFFD; only string contents can hold such bytes, so the
     * structure is untouched. */
    buf_t b;
    buf_init(&b, 0);
    buf_append_utf8(&b, s, n);
    return buf_take(&b);
}

static json_object *s_envelope(json_object *id, int with_id)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    if (with_id)
        json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
    return o;
}

static char *s_finish(json_object *o)
{
    char *s = jsonrpc_to_string(o);
    json_object_put(o);
    return s;
}

char *jsonrpc_result(json_object *id, json_object *result)
{
    json_object *o = s_envelope(id, 1);
    json_object_object_add(o, "result", result ? result : json_object_new_object());
    return s_finish(o);
}

char *jsonrpc_error(json_object *id, int code, const char *message, json_object *data)
{
    json_object *o = s_envelope(id, 1);
    json_object *e = json_object_new_object();
    json_object_object_add(e, "code", json_object_new_int(code));
    json_object_object_add(e, "message", json_object_new_string(message));
    if (data)
        json_object_object_add(e, "data", data);
    json_object_object_add(o, "error", e);
    return s_finish(o);
}

char *jsonrpc_notification(const char *method, json_object *params)
{
    json_object *o = s_envelope(NULL, 0);
    json_object_object_add(o, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(o, "params", params);
    return s_finish(o);
}

char *jsonrpc_request(json_object *id, const char *method, json_object *params)
{
    json_object *o = s_envelope(id, 1);
    json_object_object_add(o, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(o, "params", params);
    return s_finish(o);
}
