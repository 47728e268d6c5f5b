/* mcp: the MCP server (tool registry, capabilities) and its sessions and
 * calls; mcp_dispatch.c handles what comes in. See mcp.h for the contract. */
#define LOG_MODULE "mcp"
#include "mcp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sodium.h>

#include "jsonrpc.h"
#include "log.h"
#include "mcp_internal.h"
#include "mem.h"
#include "schema.h"

static const char *s_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
const char *const mcp_log_levels[MCP_LOG_LEVELS] = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

bool mcp_protocol_supported(const char *version)
{
    for (size_t i = 0; version && i < sizeof s_versions / sizeof s_versions[0]; i++)
        if (strcmp(version, s_versions[i]) == 0)
            return true;
    return false;
}

bool mcp_protocol_modern(const char *version)
{
    return version && strcmp(version, MCP_PROTOCOL_MODERN) == 0;
}

/* ------------------------------------------------------------------ server */

mcp_server_t *mcp_server_new(const char *name, const char *version, const char *instructions)
{
    mcp_server_t *self = xcalloc(1, sizeof *self);
    self->name = xstrdup(name);
    self->version = xstrdup(version);
    self->instructions = xstrdup(instructions);
    randombytes_buf(self->state_key, sizeof self->state_key);
    mcp_features_register(self, &self->features);
    mcp_tasks_register(self);
    return self;
}

void mcp_server_destroy(mcp_server_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mcp_server_t *self = *self_p;
    for (size_t i = 0; i < self->ntools; i++) {
        free((char *)self->tools[i].tool.name);
        free((char *)self->tools[i].tool.title);
        free((char *)self->tools[i].tool.description);
        free((char *)self->tools[i].tool.input_schema);
        free((char *)self->tools[i].tool.output_schema);
        free((char *)self->tools[i].tool.ui_resource);
        json_object_put(self->tools[i].schema);
    }
    free(self->tools);
    for (size_t i = 0; i < self->nmethods; i++)
        free(self->methods[i].method);
    free(self->methods);
    for (size_t i = 0; i < self->nnotifs; i++)
        free(self->notifs[i].method);
    free(self->notifs);
    mcp_features_free(&self->features);
    sodium_memzero(self->state_key, sizeof self->state_key);
    free(self->name);
    free(self->version);
    free(self->instructions);
    free(self);
    *self_p = NULL;
}

void mcp_server_add_tool(mcp_server_t *self, const mcp_tool_t *tool)
{
    json_object *schema = json_tokener_parse(tool->input_schema);
    if (!schema || !json_object_is_type(schema, json_type_object)) {
        log_error("tool %s: input schema is not a JSON object", tool->name);
        abort();
    }
    /* The output schema is checked here and kept as text only: parsed,
     * rat-py's three are ~200 KB of json-c objects, a third of its idle
     * heap, for an answer (tools/list) a session asks for once. */
    json_object *output = tool->output_schema ? json_tokener_parse(tool->output_schema) : NULL;
    if (tool->output_schema && (!output || !json_object_is_type(output, json_type_object))) {
        log_error("tool %s: output schema is not a JSON object", tool->name);
        abort();
    }
    json_object_put(output);
    self->tools = xrealloc(self->tools, (self->ntools + 1) * sizeof *self->tools);
    mcp_tool_entry_t *t = &self->tools[self->ntools++];
    t->tool = *tool;
    t->tool.name = xstrdup(tool->name);
    t->tool.title = xstrdup(tool->title);
    t->tool.description = xstrdup(tool->description);
    t->tool.input_schema = xstrdup(tool->input_schema);
    t->tool.output_schema = tool->output_schema ? xstrdup(tool->output_schema) : NULL;
    t->tool.ui_resource = xstrdup(tool->ui_resource);
    t->schema = schema;
}

bool mcp_server_set_tool_ui(mcp_server_t *self, const char *name, const char *resource_uri)
{
    mcp_tool_entry_t *t = mcp_server_find_tool(self, name);
    if (!t)
        return false;
    free((char *)t->tool.ui_resource);
    t->tool.ui_resource = xstrdup(resource_uri);
    return true;
}

bool mcp_ui_declared(json_object *caps)
{
    json_object *ext = NULL, *ui = NULL, *mimes = NULL;
    if (!caps || !json_object_is_type(caps, json_type_object) || !json_object_object_get_ex(caps, "extensions", &ext) ||
        !json_object_is_type(ext, json_type_object) || !json_object_object_get_ex(ext, MCP_EXT_UI, &ui) ||
        !json_object_is_type(ui, json_type_object) || !json_object_object_get_ex(ui, "mimeTypes", &mimes) ||
        !json_object_is_type(mimes, json_type_array))
        return false;
    /* Bounded by the request's size, which the transport bounds. */
    for (size_t i = 0; i < json_object_array_length(mimes); i++) {
        json_object *m = json_object_array_get_idx(mimes, i);
        if (json_object_is_type(m, json_type_string) && strcmp(json_object_get_string(m), MCP_UI_MIME) == 0)
            return true;
    }
    return false;
}

void mcp_server_add_method(mcp_server_t *self, const char *method, mcp_method_fn *fn, void *ud)
{
    self->methods = xrealloc(self->methods, (self->nmethods + 1) * sizeof *self->methods);
    mcp_method_entry_t *m = &self->methods[self->nmethods++];
    m->method = xstrdup(method);
    m->fn = fn;
    m->ud = ud;
}

void mcp_server_on_notification(mcp_server_t *self, const char *method, mcp_notification_fn *fn, void *ud)
{
    self->notifs = xrealloc(self->notifs, (self->nnotifs + 1) * sizeof *self->notifs);
    mcp_notif_entry_t *n = &self->notifs[self->nnotifs++];
    n->method = xstrdup(method);
    n->fn = fn;
    n->ud = ud;
}

void mcp_server_notified(mcp_server_t *self, mcp_session_t *session, const char *method, json_object *params)
{
    /* Handlers are registered while the server is built, never from one of
     * them: the array does not move under this loop. */
    for (size_t i = 0; i < self->nnotifs; i++)
        if (strcmp(self->notifs[i].method, method) == 0)
            self->notifs[i].fn(session, params, self->notifs[i].ud);
}

mcp_method_entry_t *mcp_server_find_method(mcp_server_t *self, const char *method)
{
    for (size_t i = 0; i < self->nmethods; i++)
        if (strcmp(self->methods[i].method, method) == 0)
            return &self->methods[i];
    return NULL;
}

json_object *mcp_server_tool_schema(mcp_server_t *self, const char *name)
{
    mcp_tool_entry_t *t = mcp_server_find_tool(self, name);
    return t ? t->schema : NULL;
}

mcp_tool_entry_t *mcp_server_find_tool(mcp_server_t *self, const char *name)
{
    for (size_t i = 0; i < self->ntools; i++)
        if (strcmp(self->tools[i].tool.name, name) == 0)
            return &self->tools[i];
    return NULL;
}

/* Built afresh for each request and not kept (see mcp_server_add_tool).
 * ui: the client declared MCP Apps (then tools name their ui:// resource). */
json_object *mcp_server_tools_list(mcp_server_t *self, bool ui)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < self->ntools; i++) {
        const mcp_tool_t *t = &self->tools[i].tool;
        if (t->unlisted)
            continue;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(t->name));
        if (t->title)
            json_object_object_add(o, "title", json_object_new_string(t->title));
        json_object_object_add(o, "description", json_object_new_string(t->description ? t->description : ""));
        json_object_object_add(o, "inputSchema", json_object_get(self->tools[i].schema));
        if (t->output_schema)
            json_object_object_add(o, "outputSchema", json_tokener_parse(t->output_schema));
        json_object *ann = json_object_new_object();
        if (t->title)
            json_object_object_add(ann, "title", json_object_new_string(t->title));
        json_object_object_add(ann, "readOnlyHint", json_object_new_boolean(t->read_only));
        json_object_object_add(ann, "destructiveHint", json_object_new_boolean(t->destructive));
        json_object_object_add(ann, "idempotentHint", json_object_new_boolean(t->idempotent));
        json_object_object_add(ann, "openWorldHint", json_object_new_boolean(false));
        json_object_object_add(o, "annotations", ann);
        if (ui && t->ui_resource) {
            /* The nested form of SEP-1865 (the flat "ui/resourceUri" key
             * is deprecated). visibility is left out: its default, model
             * and app, is what every rat-py tool is. */
            json_object *u = json_object_new_object();
            json_object_object_add(u, "resourceUri", json_object_new_string(t->ui_resource));
            json_object *meta = json_object_new_object();
            json_object_object_add(meta, "ui", u);
            json_object_object_add(o, "_meta", meta);
        }
        json_object_array_add(arr, o);
    }
    json_object *res = json_object_new_object();
    json_object_object_add(res, "tools", arr);
    return res;
}

/* The modern tools/list: the legacy one plus execution.taskSupport for the
 * tools that run as tasks (the legacy answer stays byte-identical). */
json_object *mcp_server_tools_list_modern(mcp_server_t *self, bool ui)
{
    static const char *support[] = {"forbidden", "optional", "required"};
    json_object *legacy = mcp_server_tools_list(self, ui), *tools = NULL;
    json_object_object_get_ex(legacy, "tools", &tools);
    json_object *arr = json_object_new_array();
    for (size_t i = 0, listed = 0; i < self->ntools; i++) {
        if (self->tools[i].tool.unlisted)
            continue;
        json_object *o = json_object_new_object();
        json_object_object_foreach(json_object_array_get_idx(tools, listed++), k, v) json_object_object_add(o, k, json_object_get(v));
        if (self->tools[i].tool.task_support != MCP_TASK_NEVER) {
            json_object *ex = json_object_new_object();
            json_object_object_add(ex, "taskSupport", json_object_new_string(support[self->tools[i].tool.task_support]));
            json_object_object_add(o, "execution", ex);
        }
        json_object_array_add(arr, o);
    }
    json_object_put(legacy);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "tools", arr);
    return res;
}

/* Every capability the server announces, computed here and only here: what
 * was registered (tools, resources, prompts, completion) decides. */
json_object *mcp_server_capabilities(mcp_server_t *self)
{
    json_object *caps = json_object_new_object();
    if (self->ntools) {
        json_object *t = json_object_new_object();
        json_object_object_add(t, "listChanged", json_object_new_boolean(false));
        json_object_object_add(caps, "tools", t);
    }
    json_object_object_add(caps, "logging", json_object_new_object());
    const mcp_features_t *f = &self->features;
    if (f->nresources || f->ntemplates || f->provider_list) {
        json_object *r = json_object_new_object();
        json_object_object_add(r, "subscribe", json_object_new_boolean(f->subscriptions));
        json_object_object_add(r, "listChanged", json_object_new_boolean(false));
        json_object_object_add(caps, "resources", r);
    }
    if (f->nprompts) {
        json_object *p = json_object_new_object();
        json_object_object_add(p, "listChanged", json_object_new_boolean(false));
        json_object_object_add(caps, "prompts", p);
    }
    if (f->complete)
        json_object_object_add(caps, "completions", json_object_new_object());
    return caps;
}

/* ----------------------------------------------------------------- session */

mcp_session_t *mcp_session_new(mcp_server_t *server, mcp_send_fn *send, void *transport)
{
    mcp_session_t *self = xcalloc(1, sizeof *self);
    self->server = server;
    self->send = send;
    self->transport = transport;
    self->log_level = MCP_LOG_INFO;
    self->next_request_id = 1;
    self->next_handle = 1;
    self->next_in_server = server->sessions;
    server->sessions = self;
    self->serial = ++server->next_serial;
    return self;
}

unsigned long mcp_session_serial(const mcp_session_t *self)
{
    return self->serial;
}


void mcp_call_free(mcp_call_t *call)
{
    mcp_session_t *s = call->session;
    if (call->task && call->task->call == call)
        call->task->call = NULL;
    /* Unlink. */
    for (mcp_call_t **pp = &s->calls; *pp; pp = &(*pp)->next) {
        if (*pp == call) {
            *pp = call->next;
            s->ncalls--;
            break;
        }
    }
    /* Server->client requests tied to this call die with it. */
    for (mcp_pending_t **pp = &s->pending; *pp;) {
        mcp_pending_t *p = *pp;
        if (p->call == call) {
            *pp = p->next;
            mcp_response_fn *fn = p->fn;
            void *ud = p->ud;
            free(p);
            if (fn)
                fn(ud, NULL, NULL);
        } else {
            pp = &p->next;
        }
    }
    json_object_put(call->id);
    json_object_put(call->progress_token);
    json_object_put(call->meta);
    json_object_put(call->client_caps);
    json_object_put(call->input_responses);
    json_object_put(call->args);
    free(call->request_state);
    free(call->name);
    free(call->method);
    free(call->tool);
    free(call);
    if (s->ncalls == 0 && s->idle_fn)
        s->idle_fn(s, s->idle_ud);
}

void mcp_session_destroy(mcp_session_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mcp_session_t *self = *self_p;
    self->idle_fn = NULL;
    while (self->calls) {
        mcp_call_t *call = self->calls;
        mcp_cancel_fn *fn = call->cancel_fn;
        call->cancel_fn = NULL;
        call->origin_gone = true;
        if (fn) {
            fn(call, MCP_CANCEL_GONE, call->cancel_ud);
            mcp_call_free(call);
        } else {
            /* The handler still holds the call and will finish it; it must not
             * outlive the session, so treat it as gone and free it now. Tools
             * always register a cancel fn for calls they keep. */
            mcp_call_free(call);
        }
    }
    while (self->pending) {
        mcp_pending_t *p = self->pending;
        self->pending = p->next;
        if (p->fn)
            p->fn(p->ud, NULL, NULL);
        free(p);
    }
    for (mcp_session_t **pp = &self->server->sessions; *pp; pp = &(*pp)->next_in_server) {
        if (*pp == self) {
            *pp = self->next_in_server;
            break;
        }
    }
    mcp_features_session_free(self);
    mcp_tasks_session_free(self);
    json_object_put(self->client_caps);
    free(self);
    *self_p = NULL;
}

void mcp_session_set_stateless(mcp_session_t *self)
{
    self->stateless = true;
}

mcp_reject_t mcp_session_take_reject(mcp_session_t *self)
{
    mcp_reject_t r = self->reject;
    self->reject = MCP_REJECT_NONE;
    return r;
}

bool mcp_session_initialized(const mcp_session_t *self)
{
    return self->initialized;
}

const char *mcp_session_client_name(const mcp_session_t *self)
{
    return self->client_name;
}

bool mcp_session_client_has(const mcp_session_t *self, const char *capability)
{
    return self->client_caps && json_object_object_get_ex(self->client_caps, capability, NULL);
}

size_t mcp_session_calls(const mcp_session_t *self)
{
    return self->ncalls;
}

void mcp_session_on_idle(mcp_session_t *self, mcp_session_fn *fn, void *ud)
{
    self->idle_fn = fn;
    self->idle_ud = ud;
}

bool mcp_session_can_request(const mcp_session_t *self)
{
    return !self->input_closed;
}

void mcp_session_input_closed(mcp_session_t *self)
{
    if (self->input_closed)
        return;
    self->input_closed = true;
    /* One at a time from the list's head: a response function may finish its
     * call, which abandons (and unlinks) that call's other requests. Only
     * requests made before now are failed, so this ends. */
    int64_t limit = self->next_request_id;
    for (;;) {
        mcp_pending_t **pp = &self->pending;
        while (*pp && (*pp)->id >= limit)
            pp = &(*pp)->next;
        mcp_pending_t *p = *pp;
        if (!p)
            break;
        *pp = p->next;
        mcp_response_fn *fn = p->fn;
        void *ud = p->ud;
        free(p);
        if (fn) {
            json_object *err = mcp_error_object(JSONRPC_INTERNAL_ERROR, "the client closed its input before answering");
            fn(ud, NULL, err);
            json_object_put(err);
        }
    }
    mcp_tasks_input_closed(self);
}

bool mcp_session_origin_pending(const mcp_session_t *self, const void *origin)
{
    for (const mcp_call_t *c = self->calls; c; c = c->next)
        if (c->origin == origin && !c->cancelled && !c->origin_gone)
            return true;
    return false;
}

void mcp_session_send(mcp_session_t *self, void *origin, char *json, mcp_msg_kind_t kind)
{
    self->send(self->transport, origin, json, strlen(json), kind);
    free(json);
}

void mcp_session_notify(mcp_session_t *self, const char *method, json_object *params)
{
    /* The modern revision has no channel for messages tied to no request
     * (and no logging/setLevel): a modern-only session, or a stdio client
     * that spoke modern and never initialized, gets none. */
    if (self->stateless || (!self->initialized && self->modern_seen)) {
        json_object_put(params);
        return;
    }
    mcp_session_send(self, NULL, jsonrpc_notification(method, params), MCP_MSG_NOTIFICATION);
}

rcbytes_t *mcp_notification_bytes(const char *method, json_object *params)
{
    char *json = jsonrpc_notification(method, params ? json_object_get(params) : NULL);
    rcbytes_t *b = rcbytes_new(json, strlen(json));
    free(json);
    return b;
}

void mcp_session_notify_shared(mcp_session_t *self, rcbytes_t *msg)
{
    if (self->stateless || (!self->initialized && self->modern_seen)) /* as mcp_session_notify */
        return;
    if (self->send_shared)
        self->send_shared(self->transport, msg);
    else
        self->send(self->transport, NULL, rcbytes_data(msg), rcbytes_len(msg), MCP_MSG_NOTIFICATION);
}

void mcp_session_set_send_shared(mcp_session_t *self, mcp_send_shared_fn *fn)
{
    self->send_shared = fn;
}

static json_object *s_log_params(mcp_log_level_t level, const char *logger, const char *text, size_t len)
{
    json_object *p = json_object_new_object();
    json_object_object_add(p, "level", json_object_new_string(mcp_log_levels[level]));
    if (logger)
        json_object_object_add(p, "logger", json_object_new_string(logger));
    json_object_object_add(p, "data", json_object_new_string_len(text, (int)len));
    return p;
}

void mcp_session_log(mcp_session_t *self, mcp_log_level_t level, const char *logger, const char *text)
{
    if (level < self->log_level)
        return;
    mcp_session_notify(self, "notifications/message", s_log_params(level, logger, text, strlen(text)));
}

void mcp_session_forget_origin(mcp_session_t *self, void *origin)
{
    /* Calls whose handler can be told are ended as "gone" (like a closed
     * session: the work may go on, nobody will read the response); the
     * others just stop sending. Restart the scan after each one ended:
     * freeing unlinks it. */
    for (;;) {
        mcp_call_t *c = self->calls;
        while (c && !(c->origin == origin && c->cancel_fn))
            c = c->next;
        if (!c)
            break;
        mcp_cancel_fn *fn = c->cancel_fn;
        c->cancel_fn = NULL;
        c->origin_gone = true;
        fn(c, MCP_CANCEL_GONE, c->cancel_ud);
        mcp_call_free(c);
    }
    for (mcp_call_t *c = self->calls; c; c = c->next)
        if (c->origin == origin)
            c->origin_gone = true;
}

/* ------------------------------------------------------------------- calls */

mcp_session_t *mcp_call_session(const mcp_call_t *call)
{
    return call->session;
}

bool mcp_call_is_task(const mcp_call_t *call)
{
    return call->task != NULL;
}

bool mcp_call_modern(const mcp_call_t *call)
{
    return call->modern;
}

bool mcp_call_client_has(const mcp_call_t *call, const char *capability)
{
    if (call->modern)
        return call->client_caps && json_object_object_get_ex(call->client_caps, capability, NULL);
    return mcp_session_client_has(call->session, capability);
}

bool mcp_call_client_ui(const mcp_call_t *call)
{
    return mcp_ui_declared(call->modern ? call->client_caps : call->session->client_caps);
}

json_object *mcp_call_input_responses(const mcp_call_t *call)
{
    return call->input_responses;
}

const char *mcp_call_request_state(const mcp_call_t *call)
{
    return call->request_state;
}

void mcp_call_input_required(mcp_call_t *call, json_object *input_requests, const char *state)
{
    static const char *allowed[] = {"tools/call", "prompts/get", "resources/read", "tasks/result"};
    bool ok = call->modern && (input_requests || state);
    bool method_ok = false;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        method_ok = method_ok || strcmp(call->method, allowed[i]) == 0;
    if (!ok || !method_ok) {
        /* A handler bug, or a legacy request: it has no such result. */
        json_object_put(input_requests);
        mcp_call_error(call, JSONRPC_INTERNAL_ERROR, "Internal error: this request cannot ask the client for input");
        return;
    }
    if (call->task) {
        mcp_tasks_input(call, input_requests, state);
        return;
    }
    json_object *res = json_object_new_object();
    json_object_object_add(res, "resultType", json_object_new_string("input_required"));
    if (input_requests)
        json_object_object_add(res, "inputRequests", input_requests);
    if (state) {
        char *tok = mcp_state_seal(call->session->server, call->method, call->name, state,
                                   (long)time(NULL) + MCP_STATE_TTL_S);
        json_object_object_add(res, "requestState", json_object_new_string(tok));
        free(tok);
    }
    mcp_call_reply(call, res);
}

void mcp_call_on_cancel(mcp_call_t *call, mcp_cancel_fn *fn, void *ud)
{
    call->cancel_fn = fn;
    call->cancel_ud = ud;
}

static void s_finish(mcp_call_t *call, char *json)
{
    mcp_session_t *s = call->session;
    if (!call->origin_gone && !call->cancelled)
        s->send(s->transport, call->origin, json, strlen(json), MCP_MSG_RESPONSE);
    free(json);
    mcp_call_free(call);
}

void mcp_call_reply(mcp_call_t *call, json_object *result)
{
    if (call->task) {
        mcp_tasks_settle(call, result, NULL);
        return;
    }
    if (call->modern)
        result = mcp_modern_result(call->method, result);
    s_finish(call, jsonrpc_result(call->id, result));
}

void mcp_call_error_data(mcp_call_t *call, int code, const char *message, json_object *data)
{
    if (call->task) {
        json_object *e = mcp_error_object(code, message);
        if (data)
            json_object_object_add(e, "data", data);
        mcp_tasks_settle(call, NULL, e);
        return;
    }
    if (call->modern && !call->origin_gone && !call->cancelled)
        call->session->reject = mcp_modern_reject(code);
    s_finish(call, jsonrpc_error(call->id, code, message, data));
}

void mcp_call_error(mcp_call_t *call, int code, const char *message)
{
    mcp_call_error_data(call, code, message, NULL);
}

void mcp_call_error_capability(mcp_call_t *call, const char *capability)
{
    json_object *req = json_object_new_object();
    json_object_object_add(req, capability, json_object_new_object());
    json_object *data = json_object_new_object();
    json_object_object_add(data, "requiredCapabilities", req);
    char msg[160];
    snprintf(msg, sizeof msg, "Missing required client capability: %.100s", capability);
    mcp_call_error_data(call, MCP_ERR_MISSING_CAPABILITY, msg, data);
}

void mcp_call_text(mcp_call_t *call, const char *text, bool is_error)
{
    mcp_call_text_structured(call, text, is_error, NULL);
}

void mcp_call_text_structured(mcp_call_t *call, const char *text, bool is_error, json_object *structured)
{
    json_object *item = json_object_new_object();
    json_object_object_add(item, "type", json_object_new_string("text"));
    json_object_object_add(item, "text", json_object_new_string(text));
    json_object *content = json_object_new_array();
    json_object_array_add(content, item);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "content", content);
    if (structured)
        json_object_object_add(res, "structuredContent", json_object_get(structured));
    json_object_object_add(res, "isError", json_object_new_boolean(is_error));
    mcp_call_reply(call, res);
}

static void s_call_send(mcp_call_t *call, char *json, mcp_msg_kind_t kind)
{
    if (!call->origin_gone && !call->cancelled)
        call->session->send(call->session->transport, call->origin, json, strlen(json), kind);
    free(json);
}

void mcp_call_log(mcp_call_t *call, mcp_log_level_t level, const char *logger, const char *text, size_t len)
{
    /* Modern: only at or above the level the request's _meta asked for,
     * and nothing when it asked for none. */
    if (call->modern ? (call->log_level < 0 || (int)level < call->log_level) : level < call->session->log_level)
        return;
    if (call->origin_gone)
        return;
    s_call_send(call, jsonrpc_notification("notifications/message", s_log_params(level, logger, text, len)), MCP_MSG_NOTIFICATION);
}

void mcp_call_notify(mcp_call_t *call, const char *method, json_object *params)
{
    if (call->origin_gone) {
        json_object_put(params);
        return;
    }
    s_call_send(call, jsonrpc_notification(method, params), MCP_MSG_NOTIFICATION);
}

bool mcp_call_meta_true(const mcp_call_t *call, const char *key)
{
    json_object *v = NULL;
    return call->meta && json_object_object_get_ex(call->meta, key, &v) && json_object_is_type(v, json_type_boolean) &&
           json_object_get_boolean(v);
}

bool mcp_call_wants_progress(const mcp_call_t *call)
{
    return call->progress_token != NULL;
}

void mcp_call_progress(mcp_call_t *call, double progress, double total, const char *message)
{
    if (!call->progress_token || call->origin_gone)
        return;
    if (call->progress_sent && progress <= call->last_progress)
        progress = call->last_progress + 1;
    call->last_progress = progress;
    call->progress_sent = true;
    json_object *p = json_object_new_object();
    json_object_object_add(p, "progressToken", json_object_get(call->progress_token));
    json_object_object_add(p, "progress", json_object_new_double(progress));
    if (total >= 0)
        json_object_object_add(p, "total", json_object_new_double(total));
    if (message)
        json_object_object_add(p, "message", json_object_new_string(message));
    s_call_send(call, jsonrpc_notification("notifications/progress", p), MCP_MSG_NOTIFICATION);
}

long mcp_call_request(mcp_call_t *call, const char *method, json_object *params, mcp_response_fn *fn, void *ud)
{
    mcp_session_t *s = call->session;
    mcp_pending_t *p = xcalloc(1, sizeof *p);
    p->handle = s->next_handle++;
    p->id = s->next_request_id++;
    p->call = call;
    p->fn = fn;
    p->ud = ud;
    p->next = s->pending;
    s->pending = p;
    json_object *id = json_object_new_int64(p->id);
    s_call_send(call, jsonrpc_request(id, method, params), MCP_MSG_REQUEST);
    json_object_put(id);
    return p->handle;
}

long mcp_session_request(mcp_session_t *self, const char *method, json_object *params, mcp_response_fn *fn, void *ud)
{
    if (!self->initialized || self->stateless || self->input_closed) {
        json_object_put(params);
        return 0;
    }
    mcp_pending_t *p = xcalloc(1, sizeof *p);
    p->handle = self->next_handle++;
    p->id = self->next_request_id++;
    p->fn = fn;
    p->ud = ud;
    p->next = self->pending;
    self->pending = p;
    json_object *id = json_object_new_int64(p->id);
    mcp_session_send(self, NULL, jsonrpc_request(id, method, params), MCP_MSG_REQUEST);
    json_object_put(id);
    return p->handle;
}

void mcp_call_abandon_request(mcp_call_t *call, long handle)
{
    mcp_session_t *s = call->session;
    for (mcp_pending_t **pp = &s->pending; *pp; pp = &(*pp)->next) {
        if ((*pp)->handle == handle) {
            mcp_pending_t *p = *pp;
            *pp = p->next;
            free(p);
            return;
        }
    }
}
