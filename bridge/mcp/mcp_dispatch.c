/* mcp_dispatch: one incoming message of a session: initialize, tools/call
 * and the other requests (through the method table), cancellation, and the
 * client's responses to server->client requests. See mcp.h. */
#define LOG_MODULE "mcp"
#include "mcp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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


/* MCP Apps is declared back (in caps, the server's capabilities) only to a
 * client whose capabilities (client_caps) declared it, and only when the
 * server has the app: any other client gets the answer it always got. */
static void s_declare_ui(mcp_server_t *server, json_object *caps, json_object *client_caps)
{
    if (!server->features.nui || !mcp_ui_declared(client_caps))
        return;
    json_object *ui = json_object_new_object(), *mimes = json_object_new_array();
    json_object_array_add(mimes, json_object_new_string(MCP_UI_MIME));
    json_object_object_add(ui, "mimeTypes", mimes);
    json_object *ext = NULL;
    if (!json_object_object_get_ex(caps, "extensions", &ext)) {
        ext = json_object_new_object();
        json_object_object_add(caps, "extensions", ext);
    }
    json_object_object_add(ext, MCP_EXT_UI, ui);
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
    json_object *server_caps = mcp_server_capabilities(self->server);
    s_declare_ui(self->server, server_caps, self->client_caps);
    json_object_object_add(res, "capabilities", server_caps);
    json_object *info = json_object_new_object();
    json_object_object_add(info, "name", json_object_new_string(self->server->name));
    json_object_object_add(info, "version", json_object_new_string(self->server->version));
    json_object_object_add(res, "serverInfo", info);
    if (self->server->instructions)
        json_object_object_add(res, "instructions", json_object_new_string(self->server->instructions));
    self->initialized = true;
    s_reply(self, m->id, origin, res);
}

/* The modern request being dispatched right now (set around the handler
 * that creates its call): its _meta log level and client capabilities. */
static struct {
    bool active;
    int log_level;
    json_object *caps;    /* borrowed from the request */
    json_object *input_responses; /* borrowed, or NULL */
    char *state;          /* owned verified requestState payload, handed to the call */
    const char *name;     /* borrowed: params.name / params.uri, or NULL */
} s_modern_pending;

static mcp_call_t *s_call_create(mcp_session_t *self, jsonrpc_msg_t *m, void *origin)
{
    mcp_call_t *call = xcalloc(1, sizeof *call);
    if (s_modern_pending.active) {
        call->modern = true;
        call->log_level = s_modern_pending.log_level;
        call->client_caps = json_object_get(s_modern_pending.caps);
        call->input_responses = json_object_get(s_modern_pending.input_responses);
        call->request_state = s_modern_pending.state;
        s_modern_pending.state = NULL;
        call->name = xstrdup(s_modern_pending.name);
    }
    call->session = self;
    call->id = json_object_get(m->id);
    call->method = xstrdup(m->method);
    call->origin = origin;
    json_object *meta = NULL, *tok = NULL;
    if (m->params && json_object_is_type(m->params, json_type_object) &&
        json_object_object_get_ex(m->params, "_meta", &meta) && json_object_is_type(meta, json_type_object))
        call->meta = json_object_get(meta);
    if (call->meta && json_object_object_get_ex(meta, "progressToken", &tok) &&
        (json_object_is_type(tok, json_type_string) || json_object_is_type(tok, json_type_int)))
        call->progress_token = json_object_get(tok);
    call->next = self->calls;
    self->calls = call;
    self->ncalls++;
    return call;
}

mcp_call_t *mcp_call_new_internal(mcp_session_t *self, const char *method, const char *tool, json_object *caps)
{
    mcp_call_t *call = xcalloc(1, sizeof *call);
    call->session = self;
    call->id = NULL; /* no client request: matches no client id (ids are never null) */
    call->method = xstrdup(method);
    call->tool = xstrdup(tool);
    call->name = xstrdup(tool);
    call->origin_gone = true; /* nothing of it goes on the wire */
    call->modern = true;
    call->log_level = -1;
    call->client_caps = json_object_get(caps);
    call->next = self->calls;
    self->calls = call;
    self->ncalls++;
    return call;
}

static mcp_call_t *s_find_call(mcp_session_t *self, json_object *id)
{
    for (mcp_call_t *c = self->calls; c; c = c->next)
        if (c->id && json_object_equal(c->id, id)) /* internal calls (tasks) have none */
            return c;
    return NULL;
}

/* A name with a NUL ("ping\u0000x") would compare equal to its prefix as a
 * C string; it names no method, tool or notification of ours. */
static bool s_has_nul(const char *s, size_t len)
{
    return strlen(s) != len;
}

static void s_modern_error(mcp_session_t *self, jsonrpc_msg_t *m, void *origin, int code, const char *msg,
                           json_object *data, mcp_reject_t reject);

/* A modern tools/call of a tool that runs as a task: true when answered
 * here (a task, or -32021 for a tool that needs the extension the request
 * does not declare). Arguments that break the schema go the usual way. */
static bool s_tasks_route(mcp_session_t *self, jsonrpc_msg_t *m, void *origin, mcp_tool_entry_t *tool,
                          json_object *args)
{
    bool declared = mcp_tasks_declared(s_modern_pending.caps);
    if (tool->tool.task_support == MCP_TASK_REQUIRED && !declared) {
        s_modern_error(self, m, origin, MCP_ERR_MISSING_CAPABILITY,
                       "Missing required client capability: extensions." MCP_EXT_TASKS, mcp_tasks_missing_data(),
                       MCP_REJECT_BAD_REQUEST);
        return true;
    }
    if (tool->tool.task_support == MCP_TASK_NEVER || !declared || tool->tool.task_self)
        return false;
    json_object *clean = NULL;
    char err[512];
    if (schema_apply(tool->schema, args, &clean, err, sizeof err) < 0)
        return false;
    mcp_tasks_start(self, m->id, origin, tool, clean, s_modern_pending.caps);
    json_object_put(clean);
    return true;
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
    if (s_modern_pending.active && s_tasks_route(self, m, origin, tool, args))
        return;
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
    if (call->modern)
        call->args = json_object_get(clean); /* for mcp_call_become_task */
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

/* ------------------------------------------------------------------ modern
 * MCP 2026-07-28: no initialize; each request carries its protocol version
 * and the client's capabilities in params._meta, and is served on its own.
 * Results carry resultType (and, when cacheable, ttlMs and cacheScope);
 * logs go out only at the level the request's _meta asks for. */

static const char *const s_cacheable[] = {"server/discover", "tools/list", "prompts/list", "resources/list",
                                          "resources/templates/list", "resources/read"};

json_object *mcp_modern_result(const char *method, json_object *result)
{
    /* A copy: result may be shared (the cached tools/list). */
    json_object *o = json_object_new_object();
    if (result && json_object_is_type(result, json_type_object)) {
        json_object_object_foreach(result, k, v) json_object_object_add(o, k, json_object_get(v));
    }
    json_object_put(result);
    if (!json_object_object_get_ex(o, "resultType", NULL))
        json_object_object_add(o, "resultType", json_object_new_string("complete"));
    for (size_t i = 0; i < sizeof s_cacheable / sizeof s_cacheable[0]; i++) {
        if (strcmp(method, s_cacheable[i]) == 0) {
            /* Lists can change at any time (assets come and go): never cache
             * across requests, never share between users. */
            if (!json_object_object_get_ex(o, "ttlMs", NULL))
                json_object_object_add(o, "ttlMs", json_object_new_int(0));
            if (!json_object_object_get_ex(o, "cacheScope", NULL))
                json_object_object_add(o, "cacheScope", json_object_new_string("private"));
            break;
        }
    }
    return o;
}

mcp_reject_t mcp_modern_reject(int code)
{
    if (code == JSONRPC_METHOD_NOT_FOUND)
        return MCP_REJECT_NOT_FOUND;
    if (code == MCP_ERR_HEADER_MISMATCH || code == MCP_ERR_MISSING_CAPABILITY || code == MCP_ERR_UNSUPPORTED_VERSION)
        return MCP_REJECT_BAD_REQUEST;
    return MCP_REJECT_NONE;
}

static void s_modern_error(mcp_session_t *self, jsonrpc_msg_t *m, void *origin, int code, const char *msg,
                           json_object *data, mcp_reject_t reject)
{
    self->reject = reject;
    mcp_session_send(self, origin, jsonrpc_error(m->id, code, msg, data), MCP_MSG_RESPONSE);
}

static json_object *s_meta(json_object *params)
{
    json_object *meta = NULL;
    if (params && json_object_is_type(params, json_type_object) &&
        json_object_object_get_ex(params, "_meta", &meta) && json_object_is_type(meta, json_type_object))
        return meta;
    return NULL;
}

/* Whether a request says it is modern: its _meta names a protocol version. */
static bool s_is_modern(jsonrpc_msg_t *m)
{
    json_object *meta = s_meta(m->params);
    return meta && json_object_object_get_ex(meta, MCP_META_VERSION, NULL);
}

static json_object *s_supported_versions(void)
{
    json_object *a = json_object_new_array();
    json_object_array_add(a, json_object_new_string(MCP_PROTOCOL_MODERN));
    return a;
}

static void s_discover(mcp_session_t *self, jsonrpc_msg_t *m, void *origin)
{
    json_object *res = json_object_new_object();
    json_object_object_add(res, "supportedVersions", s_supported_versions());
    json_object *caps = mcp_server_capabilities(self->server);
    /* Subscriptions and list-change notifications need the listen stream,
     * which rat-py does not serve; logging is per request, not a capability
     * to set (it stays declared: the revision deprecates, not removes it). */
    json_object *r = NULL;
    if (json_object_object_get_ex(caps, "resources", &r))
        json_object_object_add(r, "subscribe", json_object_new_boolean(false));
    /* prompts/list is always served (an empty list when none are
     * registered), so the capability that names it is declared here: a
     * modern client reads the handlers' presence from discover. The legacy
     * initialize keeps its own (unchanged) answer. */
    if (!json_object_object_get_ex(caps, "prompts", NULL)) {
        json_object *p = json_object_new_object();
        json_object_object_add(p, "listChanged", json_object_new_boolean(false));
        json_object_object_add(caps, "prompts", p);
    }
    for (size_t i = 0; i < self->server->ntools; i++) {
        if (self->server->tools[i].tool.task_support != MCP_TASK_NEVER) {
            json_object *ext = json_object_new_object();
            json_object_object_add(ext, MCP_EXT_TASKS, json_object_new_object());
            json_object_object_add(caps, "extensions", ext);
            break;
        }
    }
    json_object *meta_in = s_meta(m->params), *client_caps = NULL;
    if (meta_in)
        json_object_object_get_ex(meta_in, MCP_META_CLIENT_CAPS, &client_caps);
    s_declare_ui(self->server, caps, client_caps);
    json_object_object_add(res, "capabilities", caps);
    if (self->server->instructions)
        json_object_object_add(res, "instructions", json_object_new_string(self->server->instructions));
    json_object *info = json_object_new_object();
    json_object_object_add(info, "name", json_object_new_string(self->server->name));
    json_object_object_add(info, "version", json_object_new_string(self->server->version));
    json_object *meta = json_object_new_object();
    json_object_object_add(meta, "io.modelcontextprotocol/serverInfo", info);
    json_object_object_add(res, "_meta", meta);
    s_reply(self, m->id, origin, mcp_modern_result("server/discover", res));
}

static void s_handle_modern(mcp_session_t *self, jsonrpc_msg_t *m, void *origin)
{
    const char *method = m->method;
    json_object *meta = s_meta(m->params), *pv = NULL, *caps = NULL, *lv = NULL;
    if (!self->initialized)
        self->modern_seen = true;
    if (m->params && !json_object_is_type(m->params, json_type_object)) {
        s_modern_error(self, m, origin, JSONRPC_INVALID_PARAMS, "Invalid params: params must be an object", NULL,
                       MCP_REJECT_BAD_REQUEST);
        return;
    }
    bool has_pv = meta && json_object_object_get_ex(meta, MCP_META_VERSION, &pv);
    bool has_caps = meta && json_object_object_get_ex(meta, MCP_META_CLIENT_CAPS, &caps);
    if (!has_pv || !has_caps) {
        char msg[200];
        snprintf(msg, sizeof msg, "Invalid params: missing _meta keys:%s%s", has_pv ? "" : " " MCP_META_VERSION,
                 has_caps ? "" : " " MCP_META_CLIENT_CAPS);
        s_modern_error(self, m, origin, JSONRPC_INVALID_PARAMS, msg, NULL, MCP_REJECT_BAD_REQUEST);
        return;
    }
    if (!json_object_is_type(caps, json_type_object)) {
        s_modern_error(self, m, origin, JSONRPC_INVALID_PARAMS,
                       "Invalid params: _meta " MCP_META_CLIENT_CAPS " must be an object", NULL, MCP_REJECT_BAD_REQUEST);
        return;
    }
    if (!json_object_is_type(pv, json_type_string) || !mcp_protocol_modern(json_object_get_string(pv))) {
        json_object *data = json_object_new_object();
        json_object_object_add(data, "supported", s_supported_versions());
        json_object_object_add(data, "requested", json_object_new_string(json_object_is_type(pv, json_type_string)
                                                                              ? json_object_get_string(pv)
                                                                              : json_object_to_json_string(pv)));
        s_modern_error(self, m, origin, MCP_ERR_UNSUPPORTED_VERSION, "Unsupported protocol version", data,
                       MCP_REJECT_BAD_REQUEST);
        return;
    }
    int log_level = -1;
    if (json_object_object_get_ex(meta, MCP_META_LOG_LEVEL, &lv)) {
        for (size_t i = 0; json_object_is_type(lv, json_type_string) && i < MCP_LOG_LEVELS; i++)
            if (strcmp(json_object_get_string(lv), mcp_log_levels[i]) == 0)
                log_level = (int)i;
        if (log_level < 0) {
            s_modern_error(self, m, origin, JSONRPC_INVALID_PARAMS,
                           "Invalid params: _meta " MCP_META_LOG_LEVEL " must be one of debug, info, notice, warning, "
                           "error, critical, alert, emergency",
                           NULL, MCP_REJECT_BAD_REQUEST);
            return;
        }
    }
    /* Removed by the revision (initialize, ping, logging/setLevel,
     * subscriptions) or never ours: Method not found. */
    static const char *removed[] = {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                                    "resources/unsubscribe"};
    bool gone = s_has_nul(method, m->method_len);
    for (size_t i = 0; !gone && i < sizeof removed / sizeof removed[0]; i++)
        gone = strcmp(method, removed[i]) == 0;
    if (!gone && strcmp(method, "server/discover") == 0) {
        s_discover(self, m, origin);
        return;
    }
    if (gone || !s_known_method(self, method)) {
        char msg[200];
        snprintf(msg, sizeof msg, "Method not found: %.120s", gone && s_has_nul(method, m->method_len) ? "(NUL)" : method);
        s_modern_error(self, m, origin, JSONRPC_METHOD_NOT_FOUND, msg, NULL, MCP_REJECT_NOT_FOUND);
        return;
    }
    /* Request ids are the client's per connection; a modern-only session
     * (HTTP) serves many clients, so ids need not be unique there. */
    if (!self->stateless && s_find_call(self, m->id)) {
        s_modern_error(self, m, origin, JSONRPC_INVALID_REQUEST,
                       "Invalid Request: this id is already in use by a request in progress", NULL, MCP_REJECT_NONE);
        return;
    }
    /* Multi-round: the state must be one we sealed for this method and name. */
    json_object *jname = NULL, *jstate = NULL, *jresp = NULL;
    if (m->params && (json_object_object_get_ex(m->params, "name", &jname) ||
                      json_object_object_get_ex(m->params, "uri", &jname)) &&
        !json_object_is_type(jname, json_type_string))
        jname = NULL;
    const char *name = jname ? json_object_get_string(jname) : NULL;
    char *state = NULL;
    if (m->params && json_object_object_get_ex(m->params, "requestState", &jstate) &&
        !json_object_is_type(jstate, json_type_null)) {
        if (json_object_is_type(jstate, json_type_string))
            state = mcp_state_open(self->server, method, name, json_object_get_string(jstate), (long)time(NULL));
        if (!state) {
            s_modern_error(self, m, origin, JSONRPC_INVALID_PARAMS,
                           "Invalid params: requestState failed verification (altered, expired, or given for "
                           "another request); start the request again without it",
                           NULL, MCP_REJECT_NONE);
            return;
        }
    }
    if (m->params && json_object_object_get_ex(m->params, "inputResponses", &jresp) &&
        !json_object_is_type(jresp, json_type_object))
        jresp = NULL;
    s_modern_pending.log_level = log_level;
    s_modern_pending.caps = caps;
    s_modern_pending.input_responses = jresp;
    s_modern_pending.state = state;
    s_modern_pending.name = name;
    s_modern_pending.active = true;
    if (strcmp(method, "tools/call") == 0) {
        s_handle_tools_call(self, m, origin);
    } else if (strcmp(method, "tools/list") == 0) {
        json_object *cursor = NULL;
        if (m->params && json_object_object_get_ex(m->params, "cursor", &cursor) && cursor &&
            !json_object_is_type(cursor, json_type_null))
            s_modern_error(self, m, origin, JSONRPC_INVALID_PARAMS, "tools/list: invalid cursor", NULL, MCP_REJECT_NONE);
        else
            s_reply(self, m->id, origin,
                    mcp_modern_result(method, mcp_server_tools_list_modern(self->server, mcp_ui_declared(caps))));
    } else {
        mcp_method_entry_t *custom = mcp_server_find_method(self->server, method);
        mcp_call_t *call = s_call_create(self, m, origin);
        custom->fn(call, m->params, custom->ud);
    }
    s_modern_pending.active = false;
    free(s_modern_pending.state); /* no call took it (refused before one existed) */
    s_modern_pending.state = NULL;
}

static void s_handle_request(mcp_session_t *self, jsonrpc_msg_t *m, void *origin)
{
    const char *method = m->method;
    /* A request is modern on a modern-only session, or when it says so
     * before any initialize (on stdio the initialize picks legacy for the
     * whole process: versioning.mdx, "Backward Compatibility"). */
    if (self->stateless || (!self->initialized && s_is_modern(m))) {
        s_handle_modern(self, m, origin);
        return;
    }
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
        s_reply(self, m->id, origin, mcp_server_tools_list(self->server, mcp_ui_declared(self->client_caps)));
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
    /* Outside every handler: expired tasks go, their rounds ended. */
    if (self->tasks)
        mcp_tasks_sweep(self, true);
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
        if (s_has_nul(m.method, m.method_len))
            break;
        if (strcmp(m.method, "notifications/cancelled") == 0) {
            s_handle_cancelled(self, m.params);
        } else if (strcmp(m.method, "notifications/initialized") == 0) {
            /* Once, after initialize was answered: from then on the server
             * may send requests. A modern-only session never initializes. */
            if (self->initialized && !self->initialized_told && !self->stateless) {
                self->initialized_told = true;
                mcp_server_notified(self->server, self, m.method, m.params);
            }
        } else if (self->initialized && !self->stateless) {
            mcp_server_notified(self->server, self, m.method, m.params);
        }
        /* Nothing to answer, whatever it was. */
        break;
    case JSONRPC_RESPONSE:
        s_handle_response(self, &m);
        break;
    }
    jsonrpc_msg_free(&m);
}
