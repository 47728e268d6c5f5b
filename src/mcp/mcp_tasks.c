/* mcp_tasks: the tasks extension (io.modelcontextprotocol/tasks, SEP-2663)
 * for modern (2026-07-28) requests. A tools/call of a tool that supports
 * tasks, from a client that declares the extension, is answered at once
 * with a CreateTaskResult; the tool runs as an ordinary call whose finisher
 * stores its result in the task instead of sending it. tasks/get reports the
 * status and inlines the result (or error, or the pending inputRequests),
 * tasks/update delivers inputResponses (the next round runs the tool again
 * with them, as a multi-round request would), tasks/cancel cancels the round
 * running now as notifications/cancelled would. Tasks live in the session
 * that created them (on HTTP, the one stateless session all modern requests
 * share), at most MAX_TASKS, the oldest finished one evicted first. */
#define LOG_MODULE "mcp"
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "mcp_internal.h"
#include "mem.h"

#define MAX_TASKS 256
#define TASK_TTL_MS 3600000      /* kept at least this long after creation */
#define TASK_POLL_MS 500

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_object *s_iso(int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char b[40];
    size_t n = strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(b + n, sizeof b - n, ".%03dZ", (int)(ms % 1000));
    return json_object_new_string(b);
}

bool mcp_tasks_declared(json_object *caps)
{
    json_object *ext = NULL;
    return caps && json_object_is_type(caps, json_type_object) && json_object_object_get_ex(caps, "extensions", &ext) &&
           json_object_is_type(ext, json_type_object) && json_object_object_get_ex(ext, MCP_EXT_TASKS, NULL);
}

static bool s_terminal(const mcp_task_t *t)
{
    return strcmp(t->status, "completed") == 0 || strcmp(t->status, "failed") == 0 ||
           strcmp(t->status, "cancelled") == 0;
}

static void s_task_free(mcp_task_t *t)
{
    if (t->call)
        t->call->task = NULL;
    json_object_put(t->result);
    json_object_put(t->error);
    json_object_put(t->input_requests);
    json_object_put(t->responses);
    json_object_put(t->args);
    json_object_put(t->caps);
    free(t->state);
    free(t->tool);
    free(t);
}

void mcp_tasks_session_free(mcp_session_t *s)
{
    while (s->tasks) {
        mcp_task_t *t = s->tasks;
        s->tasks = t->next;
        s_task_free(t);
    }
    s->ntasks = 0;
}

static mcp_task_t *s_find(mcp_session_t *s, json_object *params)
{
    json_object *id = NULL;
    if (!params || !json_object_object_get_ex(params, "taskId", &id) || !json_object_is_type(id, json_type_string))
        return NULL;
    for (mcp_task_t *t = s->tasks; t; t = t->next)
        if (strcmp(t->id, json_object_get_string(id)) == 0)
            return t;
    return NULL;
}

/* Status and metadata, the fields every task envelope has. */
static json_object *s_envelope(const mcp_task_t *t)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "taskId", json_object_new_string(t->id));
    json_object_object_add(o, "status", json_object_new_string(t->status));
    json_object_object_add(o, "createdAt", s_iso(t->created_ms));
    json_object_object_add(o, "lastUpdatedAt", s_iso(t->updated_ms));
    json_object_object_add(o, "ttlMs", json_object_new_int(TASK_TTL_MS));
    json_object_object_add(o, "pollIntervalMs", json_object_new_int(TASK_POLL_MS));
    return o;
}

static void s_touch(mcp_task_t *t, const char *status)
{
    t->status = status;
    t->updated_ms = s_now_ms();
}

/* Runs one round: the tool's handler, on a call whose result comes back to
 * the task. */
static void s_round(mcp_session_t *s, mcp_task_t *t)
{
    mcp_tool_entry_t *tool = mcp_server_find_tool(s->server, t->tool);
    mcp_call_t *call = mcp_call_new_internal(s, "tools/call", t->tool, t->caps);
    call->task = t;
    t->call = call;
    if (t->responses)
        call->input_responses = json_object_get(t->responses);
    call->request_state = t->state ? xstrdup(t->state) : NULL;
    tool->tool.fn(call, t->args, tool->tool.ud);
}

/* A new task (NULL, and the request answered with an error, when the table
 * is full of unfinished ones). */
static mcp_task_t *s_task_new(mcp_session_t *s, json_object *id, void *origin, const char *tool, json_object *args,
                              json_object *caps)
{
    if (s->ntasks >= MAX_TASKS) {
        mcp_task_t **victim = NULL;
        for (mcp_task_t **pp = &s->tasks; *pp; pp = &(*pp)->next)
            if (s_terminal(*pp))
                victim = pp; /* the last one found is the oldest */
        if (!victim) {
            mcp_session_send(s, origin, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR,
                                                      "Too many tasks in progress; cancel one or wait", NULL),
                             MCP_MSG_RESPONSE);
            return NULL;
        }
        mcp_task_t *v = *victim;
        *victim = v->next;
        s_task_free(v);
        s->ntasks--;
    }
    mcp_task_t *t = xcalloc(1, sizeof *t);
    unsigned char raw[16];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(t->id, sizeof t->id, raw, sizeof raw);
    t->created_ms = s_now_ms();
    s_touch(t, "working");
    t->tool = xstrdup(tool);
    t->args = json_object_get(args);
    t->caps = json_object_get(caps);
    t->next = s->tasks;
    s->tasks = t;
    s->ntasks++;
    /* The task exists (tasks/get resolves) before the answer goes out. */
    json_object *res = s_envelope(t);
    json_object_object_add(res, "resultType", json_object_new_string("task"));
    mcp_session_send(s, origin, jsonrpc_result(id, res), MCP_MSG_RESPONSE);
    return t;
}

void mcp_tasks_start(mcp_session_t *s, json_object *id, void *origin, mcp_tool_entry_t *tool, json_object *args,
                     json_object *caps)
{
    mcp_task_t *t = s_task_new(s, id, origin, tool->tool.name, args, caps);
    if (t)
        s_round(s, t);
}

bool mcp_call_become_task(mcp_call_t *call)
{
    mcp_tool_entry_t *tool = call->tool ? mcp_server_find_tool(call->session->server, call->tool) : NULL;
    if (!call->modern || call->task || !tool || tool->tool.task_support == MCP_TASK_NEVER || !call->args ||
        !mcp_tasks_declared(call->client_caps) || call->origin_gone || call->cancelled)
        return false;
    mcp_task_t *t = s_task_new(call->session, call->id, call->origin, call->tool, call->args, call->client_caps);
    if (!t) {
        call->origin_gone = true; /* answered with an error: the rest of the call goes nowhere */
        return false;
    }
    t->call = call;
    call->task = t;
    call->origin_gone = true; /* its messages have nowhere to go now */
    call->origin = NULL;      /* the stream is answered: a later one may reuse its address */
    json_object_put(call->id); /* answered too: the client may reuse the id */
    call->id = NULL;
    return true;
}

void mcp_tasks_settle(mcp_call_t *call, json_object *result, json_object *error)
{
    mcp_task_t *t = call->task;
    t->call = NULL;
    call->task = NULL;
    if (error) {
        t->error = error;
        s_touch(t, "failed");
    } else {
        t->result = mcp_modern_result("tools/call", result);
        s_touch(t, "completed");
    }
    json_object_put(t->responses);
    t->responses = NULL;
    mcp_call_free(call);
}

void mcp_tasks_input(mcp_call_t *call, json_object *input_requests, const char *state)
{
    mcp_task_t *t = call->task;
    t->call = NULL;
    call->task = NULL;
    json_object_put(t->input_requests);
    t->input_requests = input_requests ? input_requests : json_object_new_object();
    free(t->state);
    t->state = state ? xstrdup(state) : NULL;
    json_object_put(t->responses);
    t->responses = NULL;
    s_touch(t, "input_required");
    mcp_call_free(call);
}

static bool s_gate(mcp_call_t *call)
{
    if (!call->modern) {
        /* The legacy revisions: no such methods (as before tasks existed). */
        char msg[64];
        snprintf(msg, sizeof msg, "Method not found: %s", call->method);
        mcp_call_error(call, JSONRPC_METHOD_NOT_FOUND, msg);
        return false;
    }
    if (mcp_tasks_declared(call->client_caps))
        return true;
    json_object *ext = json_object_new_object();
    json_object_object_add(ext, MCP_EXT_TASKS, json_object_new_object());
    json_object *req = json_object_new_object();
    json_object_object_add(req, "extensions", ext);
    json_object *data = json_object_new_object();
    json_object_object_add(data, "requiredCapabilities", req);
    mcp_call_error_data(call, MCP_ERR_MISSING_CAPABILITY,
                        "Missing required client capability: extensions." MCP_EXT_TASKS, data);
    return false;
}

static mcp_task_t *s_task_of(mcp_call_t *call, json_object *params)
{
    if (!s_gate(call))
        return NULL;
    mcp_task_t *t = s_find(call->session, params);
    if (!t)
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "Invalid params: unknown taskId");
    return t;
}

static void s_get(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_task_t *t = s_task_of(call, params);
    if (!t)
        return;
    json_object *res = s_envelope(t);
    if (t->result)
        json_object_object_add(res, "result", json_object_get(t->result));
    if (t->error)
        json_object_object_add(res, "error", json_object_get(t->error));
    if (strcmp(t->status, "input_required") == 0 && t->input_requests)
        json_object_object_add(res, "inputRequests", json_object_get(t->input_requests));
    mcp_call_reply(call, res);
}

static void s_update(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_task_t *t = s_task_of(call, params);
    if (!t)
        return;
    json_object *responses = NULL;
    if (!json_object_object_get_ex(params, "inputResponses", &responses) ||
        !json_object_is_type(responses, json_type_object)) {
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "Invalid params: inputResponses (object) is required");
        return;
    }
    if (strcmp(t->status, "input_required") != 0) {
        mcp_call_reply(call, json_object_new_object()); /* nothing waits: ignored */
        return;
    }
    if (!t->responses)
        t->responses = json_object_new_object();
    /* Only answers to what is pending count; the rest is ignored. */
    json_object_object_foreach(responses, k, v)
    {
        if (json_object_object_get_ex(t->input_requests, k, NULL)) {
            json_object_object_add(t->responses, k, json_object_get(v));
            json_object_object_del(t->input_requests, k);
        }
    }
    mcp_session_t *s = call->session;
    mcp_call_reply(call, json_object_new_object());
    if (json_object_object_length(t->input_requests) == 0) {
        json_object_put(t->input_requests);
        t->input_requests = NULL;
        s_touch(t, "working");
        s_round(s, t);
    } else {
        t->updated_ms = s_now_ms();
    }
}

static void s_cancel(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_task_t *t = s_task_of(call, params);
    if (!t)
        return;
    if (!s_terminal(t)) {
        mcp_call_t *round = t->call;
        s_touch(t, "cancelled");
        json_object_put(t->input_requests);
        t->input_requests = NULL;
        if (round) {
            t->call = NULL;
            round->task = NULL;
            if (round->cancel_fn) {
                mcp_cancel_fn *fn = round->cancel_fn;
                round->cancel_fn = NULL;
                fn(round, MCP_CANCEL_CLIENT, round->cancel_ud);
                mcp_call_free(round);
            } else {
                round->cancelled = true; /* its handler finishes it; nothing is kept */
            }
        }
    }
    mcp_call_reply(call, json_object_new_object());
}

void mcp_tasks_register(mcp_server_t *srv)
{
    mcp_server_add_method(srv, "tasks/get", s_get, NULL);
    mcp_server_add_method(srv, "tasks/update", s_update, NULL);
    mcp_server_add_method(srv, "tasks/cancel", s_cancel, NULL);
}
