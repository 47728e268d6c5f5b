/* transport_http_modern: a POST in MCP 2026-07-28's sessionless form. It
 * carries no Mcp-Session-Id; its headers (MCP-Protocol-Version, Mcp-Method,
 * Mcp-Name and the x-mcp-header arguments) repeat what its body says and
 * must agree with it (streamable-http.mdx, "Server Validation"), then the
 * server's one stateless MCP session answers it. transport_http.c's POST
 * handler decides which form a POST is (http_post_is_modern). */
#define LOG_MODULE "http"
#include "transport_http_internal.h"

/* A header value without the optional whitespace around it (RFC 9110 5.5),
 * into out (NUL-terminated); false when it does not fit. */
static bool s_header_trim(const char *v, char *out, size_t cap)
{
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n >= cap)
        return false;
    memcpy(out, v, n);
    out[n] = '\0';
    return true;
}

/* Whether header value h (trimmed; "=?base64?...?=" decoded) equals the
 * body's string value (len bytes, may hold NULs). A sentinel whose Base64 is
 * invalid (characters, padding) matches nothing. */
static bool s_header_matches(const char *h, const char *value, size_t len)
{
    static char t[8192], bin[8192];
    if (!s_header_trim(h, t, sizeof t))
        return false;
    size_t tl = strlen(t);
    if (tl >= 11 && strncmp(t, "=?base64?", 9) == 0 && strcmp(t + tl - 2, "?=") == 0) {
        size_t bl = 0;
        if (sodium_base642bin((unsigned char *)bin, sizeof bin, t + 9, tl - 11, NULL, &bl, NULL,
                              sodium_base64_VARIANT_ORIGINAL) != 0)
            return false;
        return bl == len && memcmp(bin, value, len) == 0;
    }
    return tl == len && memcmp(t, value, len) == 0;
}

/* The body's value the Mcp-Name header must carry, or NULL. */
static json_object *s_name_source(jsonrpc_msg_t *m)
{
    const char *key = NULL;
    if (strcmp(m->method, "tools/call") == 0 || strcmp(m->method, "prompts/get") == 0)
        key = "name";
    else if (strcmp(m->method, "resources/read") == 0)
        key = "uri";
    else if (strcmp(m->method, "tasks/get") == 0 || strcmp(m->method, "tasks/update") == 0 ||
             strcmp(m->method, "tasks/cancel") == 0)
        key = "taskId"; /* SEP-2663 "Routing Headers" */
    json_object *v = NULL;
    if (key && m->params && json_object_is_type(m->params, json_type_object) &&
        json_object_object_get_ex(m->params, key, &v) && json_object_is_type(v, json_type_string))
        return v;
    return NULL;
}

/* x-mcp-header (streamable-http.mdx "Custom Headers"): every argument whose
 * schema property (reached through "properties" only) names a header must
 * come with Mcp-Param-{Name} equal to it; false, with why, otherwise. */
static bool s_params_match(struct MHD_Connection *c, json_object *schema, json_object *args, int depth,
                           const char **why)
{
    json_object *props = NULL;
    if (depth > 8 || !schema || !json_object_object_get_ex(schema, "properties", &props) ||
        !json_object_is_type(props, json_type_object) || !args || !json_object_is_type(args, json_type_object))
        return true;
    json_object_object_foreach(props, key, prop)
    {
        json_object *value = NULL, *hname = NULL;
        if (!json_object_object_get_ex(args, key, &value) || !value || json_object_is_type(value, json_type_null))
            continue; /* absent or null: no header expected */
        if (!json_object_is_type(prop, json_type_object))
            continue;
        if (!json_object_object_get_ex(prop, "x-mcp-header", &hname)) {
            if (!s_params_match(c, prop, value, depth + 1, why))
                return false;
            continue;
        }
        if (!json_object_is_type(hname, json_type_string) || json_object_get_string_len(hname) > 100)
            continue;
        char name[128];
        snprintf(name, sizeof name, "Mcp-Param-%s", json_object_get_string(hname));
        const char *h = http_header(c, name);
        if (!h) {
            *why = "Header mismatch: an Mcp-Param header the tool's x-mcp-header names is missing";
            return false;
        }
        char text[64];
        const char *v = NULL;
        size_t vlen = 0;
        if (json_object_is_type(value, json_type_string)) {
            v = json_object_get_string(value);
            vlen = (size_t)json_object_get_string_len(value);
        } else if (json_object_is_type(value, json_type_int)) {
            vlen = (size_t)snprintf(text, sizeof text, "%lld", (long long)json_object_get_int64(value));
            v = text;
        } else if (json_object_is_type(value, json_type_boolean)) {
            v = json_object_get_boolean(value) ? "true" : "false";
            vlen = strlen(v);
        } else {
            continue; /* not a type x-mcp-header may annotate */
        }
        if (!s_header_matches(h, v, vlen)) {
            *why = "Header mismatch: an Mcp-Param header does not match its argument";
            return false;
        }
    }
    return true;
}

/* A modern (2026-07-28) POST: no session; the headers must agree with the
 * body (streamable-http.mdx, "Server Validation": 400 and -32020), then the
 * stateless MCP session serves it. Its status: 404 for an unknown method,
 * 400 for the revision's request errors, 200 otherwise. m is borrowed. */
enum MHD_Result http_handle_modern_post(transport_http_t *self, struct MHD_Connection *c, http_req_t *req,
                                        jsonrpc_msg_t *m)
{
    if (m->kind == JSONRPC_NOTIFICATION) /* nothing to cancel: a request ends with its stream */
        return http_send_body(self, c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
    if (m->kind != JSONRPC_REQUEST)
        return http_error(self, c, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
                          "Invalid Request: a client sends no responses in MCP 2026-07-28");
    const char *pv = http_header(c, "MCP-Protocol-Version");
    if (!pv)
        return http_error_id(self, c, MHD_HTTP_BAD_REQUEST, m->id, MCP_ERR_HEADER_MISMATCH,
                          "Header mismatch: the MCP-Protocol-Version header is missing");
    json_object *meta = NULL, *mpv = NULL;
    if (m->params && json_object_is_type(m->params, json_type_object) &&
        json_object_object_get_ex(m->params, "_meta", &meta) && json_object_is_type(meta, json_type_object) &&
        json_object_object_get_ex(meta, MCP_META_VERSION, &mpv) &&
        (!json_object_is_type(mpv, json_type_string) || strcmp(json_object_get_string(mpv), pv) != 0))
        return http_error_id(self, c, MHD_HTTP_BAD_REQUEST, m->id, MCP_ERR_HEADER_MISMATCH,
                          "Header mismatch: MCP-Protocol-Version does not match _meta "
                          "io.modelcontextprotocol/protocolVersion");
    const char *hm = http_header(c, "Mcp-Method");
    if (!hm || !s_header_matches(hm, m->method, m->method_len))
        return http_error_id(self, c, MHD_HTTP_BAD_REQUEST, m->id, MCP_ERR_HEADER_MISMATCH,
                          hm ? "Header mismatch: Mcp-Method does not match the body's method"
                             : "Header mismatch: the Mcp-Method header is missing");
    json_object *name = s_name_source(m);
    const char *hn = http_header(c, "Mcp-Name");
    if (name && (!hn || !s_header_matches(hn, json_object_get_string(name), (size_t)json_object_get_string_len(name))))
        return http_error_id(self, c, MHD_HTTP_BAD_REQUEST, m->id, MCP_ERR_HEADER_MISMATCH,
                          hn ? "Header mismatch: Mcp-Name does not match the body's name or uri"
                             : "Header mismatch: the Mcp-Name header is missing");
    json_object *args = NULL;
    const char *why = NULL;
    if (name && strcmp(m->method, "tools/call") == 0 && json_object_object_get_ex(m->params, "arguments", &args) &&
        !s_params_match(c, mcp_server_tool_schema(self->server, json_object_get_string(name)), args, 0, &why))
        return http_error_id(self, c, MHD_HTTP_BAD_REQUEST, m->id, MCP_ERR_HEADER_MISMATCH, why);
    http_session_t *sess = self->stateless;
    http_stream_t *s = http_stream_new(self, sess, c, false);
    req->stream = s;
    mcp_session_take_reject(sess->mcp);
    mcp_session_handle(sess->mcp, buf_str(&req->body), req->body.len, s);
    mcp_reject_t rej = mcp_session_take_reject(sess->mcp);
    if (s->done && !s->had_other) {
        unsigned status = rej == MCP_REJECT_NOT_FOUND     ? MHD_HTTP_NOT_FOUND
                          : rej == MCP_REJECT_BAD_REQUEST ? MHD_HTTP_BAD_REQUEST
                                                          : MHD_HTTP_OK;
        enum MHD_Result rc = http_send_body(self, c, status, "application/json", buf_str(&s->final_json),
                                         s->final_json.len, NULL);
        req->stream = NULL;
        http_stream_free(s);
        return rc;
    }
    return http_attach_sse(self, s, NULL);
}

/* Whether a POST is modern: its MCP-Protocol-Version is not a legacy one,
 * or, without that header and without a session, its _meta names a
 * version (an initialize is legacy whatever it carries). */
bool http_post_is_modern(struct MHD_Connection *c, jsonrpc_msg_t *m, bool is_init, const char *sid)
{
    const char *pv = http_header(c, "MCP-Protocol-Version");
    if (mcp_protocol_modern(pv))
        return true;
    if (pv && mcp_protocol_supported(pv))
        return false;
    json_object *meta = NULL;
    return !sid && !is_init && m->params && json_object_is_type(m->params, json_type_object) &&
           json_object_object_get_ex(m->params, "_meta", &meta) && json_object_is_type(meta, json_type_object) &&
           json_object_object_get_ex(meta, MCP_META_VERSION, NULL);
}
