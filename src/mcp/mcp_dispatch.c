/* mcp_dispatch: one incoming message of a session: initialize, tools/call
 * and the other requests (through the method table), cancellation, and the
 * client's responses to server->client requests. See mcp.h. */
#define LOG_MODULE "mcp"
#include "mcp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "mcp_internal.h"
#include "mem.h"
#include "schema.h"

static void s_reply(mcp_session_t *self, json_object *id, void *origin, json_object *result)
{
    mcp_session_send(self, origin, jsonrpc_result(id, result), MCP_MSG_RESPONSE);
}

static void s_error(mcp_session_t *self, json_object *id, void *origin, int code, const char *msg)
{
    mcp_session_send(self, origin, jsonrpc_error(id, code, msg, NULL), MCP_MSG_RESPONSE);
}


static void s_handle_initialize(mcp_session_t *self, jsonrpc_msg_t *m, void *origin)
{
    json_object *pv = NULL, *caps = NULL;
    if (!m->params || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, "protocolVersion", &pv) ||
        !json_object_is_type(pv, json_type_string)) {
        s_error(self, m->id, origin, JSONRPC_INVALID_PARAMS, "initialize: params.protocolVersion (string) is required");
        return;
    }
    if (self->initialized) {
        s_error(self, m->id, origin, JSONRPC_INVALID_REQUEST, "initialize: this session is already initialized");
        return;
    }
    const char *want = json_object_get_string(pv);
    snprintf(self->protocol, sizeof self->protocol, "%s", mcp_protocol_supported(want) ? want : MCP_PROTOCOL_LATEST);
    if (json_object_object_get_ex(m->params, "capabilities", &caps) && json_object_is_type(caps, json_type_object))
        self->client_caps = json_object_get(caps);
    json_object *ci = NULL, *cn = NULL;
    if (json_object_object_get_ex(m->params, "clientInfo", &ci) && json_object_object_get_ex(ci, "name", &cn) &&
        json_object_is_type(cn, json_type_string))
        snprintf(self->client_name, sizeof self->client_name, "%s", json_object_get_string(cn));
    json_object *res = json_object_new_object();
    json_object_object_add(res, "protocolVersion", json_object_new_string(self->protocol));
    json_object_object_add(res, "capabilities", mcp_server_capabilities(self->server));
    json_object *info = json_object_new_object();
    json_object_object_add(info, "name", json_object_new_string(self->server->name));
    json_object_object_add(info, "version", json_object_new_string(self->server->version));
    json_object_object_add(res, "serverInfo", info);
    if (self->server->instructions)
        json_object_object_add(res, "instructions", json_object_new_string(self->server->instructions));
    self->initialized = true;
    s_reply(self, m->id, origin, res);
}

static mcp_call_t *s_call_create(mcp_session_t *self, jsonrpc_msg_t *m, void *origin)
{
    mcp_call_t *call = xcalloc(1, sizeof *call);
    call->session = self;
    call->id = json_object_get(m->id);
    call->method = xstrdup(m->method);
    call->origin = origin;
    json_object *meta = NULL, *tok = NULL;
    if (m->params && json_object_is_type(m->params, json_type_object) &&
        json_object_object_get_ex(m->params, "_meta", &meta) && json_object_is_type(meta, json_type_object) &&
        json_object_object_get_ex(meta, "progressToken", &tok) &&
        (json_object_is_type(tok, json_type_string) || json_object_is_type(tok, json_type_int)))
        call->progress_token = json_object_get(tok);
    call->next = self->calls;
    self->calls = call;
    self->ncalls++;
    return call;
}

static mcp_call_t *s_find_call(mcp_session_t *self, json_object *id)
{
    for (mcp_call_t *c = self->calls; c; c = c->next)
        if (json_object_equal(c->id, id))
            return c;
    return NULL;
}

/* A name with a NUL ("ping\u0000x") would compare equal to its prefix as a
 * C string; it names no method, tool or notification of ours. */
static bool s_has_nul(const char *s, size_t len)
{
    return strlen(s) != len;
}

static void s_handle_tools_call(mcp_session_t *self, jsonrpc_msg_t *m, void *origin)
{
    json_object *name = NULL, *args = NULL;
    if (!m->params || !json_object_is_type(m->params, json_type_object) ||
        !json_object_object_get_ex(m->params, "name", &name) || !json_object_is_type(name, json_type_string)) {
        s_error(self, m->id, origin, JSONRPC_INVALID_PARAMS, "tools/call: params.name (string) is required");
        return;
    }
    mcp_tool_entry_t *tool = s_has_nul(json_object_get_string(name), (size_t)json_object_get_string_len(name))
                         ? NULL
                         : mcp_server_find_tool(self->server, json_object_get_string(name));
    if (!tool) {
        char msg[256];
        snprintf(msg, sizeof msg, "Unknown tool: %.100s", json_object_get_string(name));
        s_error(self, m->id, origin, JSONRPC_INVALID_PARAMS, msg);
        return;
    }
    json_object_object_get_ex(m->params, "arguments", &args);
    if (args && json_object_is_type(args, json_type_null))
        args = NULL;
    if (args && !json_object_is_type(args, json_type_object)) {
        s_error(self, m->id, origin, JSONRPC_INVALID_PARAMS, "tools/call: params.arguments must be an object");
        return;
    }
    mcp_call_t *call = s_call_create(self, m, origin);
    call->tool = xstrdup(tool->tool.name);
    json_object *clean = NULL;
    char err[512];
    json_object *given = args && tool->tool.prepare ? tool->tool.prepare(args) : json_object_get(args);
    int bad = schema_apply(tool->schema, given, &clean, err, sizeof err);
    json_object_put(given);
    if (bad < 0) {
        /* Input validation failures are tool errors the model can correct
         * (MCP 2025-11-25, SEP-1303), not protocol errors. */
        char *text = xasprintf("%s: %s", tool->tool.name, err);
        mcp_call_text(call, text, true);
        free(text);
        return;
    }
    tool->tool.fn(call, clean, tool->tool.ud);
    json_object_put(clean);
}

static void s_handle_cancelled(mcp_session_t *self, json_object *params)
{
    json_object *rid = NULL;
    if (!params || !json_object_object_get_ex(params, "requestId", &rid))
        return;
    mcp_call_t *call = s_find_call(self, rid);
    if (!call)
        return; /* already answered or unknown: the spec says ignore */
    if (call->cancel_fn) {
        mcp_cancel_fn *fn = call->cancel_fn;
        call->cancel_fn = NULL;
        fn(call, MCP_CANCEL_CLIENT, call->cancel_ud);
        mcp_call_free(call);
    } else {
        call->cancelled = true; /* the handler finishes it; nothing is sent */
    }
}

json_object *mcp_error_object(int code, const char *message)
{
    json_object *e = json_object_new_object();
    json_object_object_add(e, "code", json_object_new_int(code));
    json_object_object_add(e, "message", json_object_new_string(message));
    return e;
}

/* A JSON-RPC error object: {code: integer, message: string, ...}. */
static bool s_error_shape_ok(json_object *error)
{
    json_object *code = NULL, *message = NULL;
    return json_object_is_type(error, json_type_object) && json_object_object_get_ex(error, "code", &code) &&
           json_object_is_type(code, json_type_int) && json_object_object_get_ex(error, "message", &message) &&
           json_object_is_type(message, json_type_string);
}

static void s_handle_response(mcp_session_t *self, jsonrpc_msg_t *m)
{
    if (!json_object_is_type(m->id, json_type_int))
        return;
    int64_t id = json_object_get_int64(m->id);
    for (mcp_pending_t **pp = &self->pending; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            mcp_pending_t *p = *pp;
            *pp = p->next;
            mcp_response_fn *fn = p->fn;
            void *ud = p->ud;
            free(p);
            /* The reply is client input. Its handler is promised an object
             * result, or an error object: anything else (a null result, which
             * would read as "abandoned", a string, an error that is not an
             * object) becomes an error object saying so. */
            json_object *result = m->result, *error = m->error, *made = NULL;
            bool has_result = json_object_object_get_ex(m->root, "result", NULL);
            if (has_result && !json_object_is_type(result, json_type_object)) {
                result = NULL;
                error = made = mcp_error_object(JSONRPC_INVALID_REQUEST, "invalid response: \"result\" must be an object");
            } else if (!has_result && !s_error_shape_ok(error)) {
                error = made = mcp_error_object(JSONRPC_INVALID_REQUEST, "invalid response: \"error\" must be an "
                                                                       "object with an integer code and a string message");
            }
            if (fn)
                fn(ud, result, error);
            json_object_put(made);
            return;
        }
    }
    log_debug("response to unknown request id %lld ignored", (long long)id);
}

static bool s_known_method(mcp_session_t *self, const char *method)
{
    static const char *builtin[] = {"tools/list", "tools/call", "logging/setLevel"};
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        if (strcmp(method, builtin[i]) == 0)
            return true;
    return mcp_server_find_method(self->server, method) != NULL;
}

static void s_handle_request(mcp_session_t *self, jsonrpc_msg_t *m, void *origin)
{
    const char *method = m->method;
    if (s_has_nul(method, m->method_len)) {
        s_error(self, m->id, origin, JSONRPC_METHOD_NOT_FOUND, "Method not found: the name contains a NUL character");
        return;
    }
    if (strcmp(method, "initialize") == 0) {
        s_handle_initialize(self, m, origin);
        return;
    }
    if (strcmp(method, "ping") == 0) {
        s_reply(self, m->id, origin, json_object_new_object());
        return;
    }
    if (!s_known_method(self, method)) {
        char msg[200];
        snprintf(msg, sizeof msg, "Method not found: %.120s", method);
        s_error(self, m->id, origin, JSONRPC_METHOD_NOT_FOUND, msg);
        return;
    }
    if (!self->initialized) {
        s_error(self, m->id, origin, JSONRPC_INVALID_REQUEST, "Server not initialized: send initialize first");
        return;
    }
    if (s_find_call(self, m->id)) {
        s_error(self, m->id, origin, JSONRPC_INVALID_REQUEST, "Invalid Request: this id is already in use by a request in progress");
        return;
    }
    if (m->params && !json_object_is_type(m->params, json_type_object)) {
        s_error(self, m->id, origin, JSONRPC_INVALID_PARAMS, "params must be an object");
        return;
    }
    if (strcmp(method, "tools/call") == 0) {
        s_handle_tools_call(self, m, origin);
        return;
    }
    mcp_method_entry_t *custom = mcp_server_find_method(self->server, method);
    if (custom) {
        mcp_call_t *call = s_call_create(self, m, origin);
        custom->fn(call, m->params, custom->ud);
        return;
    }
    if (strcmp(method, "tools/list") == 0) {
        json_object *cursor = NULL;
        if (m->params && json_object_object_get_ex(m->params, "cursor", &cursor) && cursor &&
            !json_object_is_type(cursor, json_type_null)) {
            s_error(self, m->id, origin, JSONRPC_INVALID_PARAMS, "tools/list: invalid cursor");
            return;
        }
        s_reply(self, m->id, origin, mcp_server_tools_list(self->server));
    } else if (strcmp(method, "logging/setLevel") == 0) {
        json_object *lv = NULL;
        const char *name = NULL;
        if (m->params && json_object_object_get_ex(m->params, "level", &lv) && json_object_is_type(lv, json_type_string))
            name = json_object_get_string(lv);
        for (size_t i = 0; name && i < sizeof mcp_log_levels / sizeof mcp_log_levels[0]; i++) {
            if (strcmp(name, mcp_log_levels[i]) == 0) {
                self->log_level = (mcp_log_level_t)i;
                s_reply(self, m->id, origin, json_object_new_object());
                return;
            }
        }
        s_error(self, m->id, origin, JSONRPC_INVALID_PARAMS,
                "logging/setLevel: level must be one of debug, info, notice, warning, error, critical, alert, emergency");
    }
}

void mcp_session_handle(mcp_session_t *self, const char *data, size_t len, void *origin)
{
    jsonrpc_msg_t m;
    jsonrpc_parse(data, len, &m);
    switch (m.kind) {
    case JSONRPC_INVALID:
        s_error(self, m.id, origin, m.err_code, m.err_msg);
        break;
    case JSONRPC_REQUEST:
        s_handle_request(self, &m, origin);
        break;
    case JSONRPC_NOTIFICATION:
        if (!s_has_nul(m.method, m.method_len) && strcmp(m.method, "notifications/cancelled") == 0)
            s_handle_cancelled(self, m.params);
        /* notifications/initialized and anything else: nothing to answer. */
        break;
    case JSONRPC_RESPONSE:
        s_handle_response(self, &m);
        break;
    }
    jsonrpc_msg_free(&m);
}
