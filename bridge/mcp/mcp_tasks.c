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
 * share; on stdio, the process's one session).
 *
 * Bounds, per server (all its sessions together): at most task_max tasks
 * and task_max_bytes of what they hold (arguments, results, errors, input
 * requests, as JSON). A task is kept at least TASK_TTL_MS after its
 * creation and after the client's last tasks/get, update or cancel of it;
 * past that it is swept at the session's next message, finished or not (a
 * round still running is ended as MCP_CANCEL_GONE). Nothing younger is
 * evicted: a new task is refused while the table is full, and a result that
 * would break the byte budget is not kept (the task fails saying so). A
 * task in input_required checks on tasks/get that its input still waits
 * (s_check_input), and fails when it does not. */
#define LOG_MODULE "mcp"
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "mcp_internal.h"
#include "mem.h"

#define TASK_MAX 256
#define TASK_MAX_BYTES (32u << 20) /* a run's result is at most ~256 KiB: 128 of the biggest */
#define TASK_TTL_MS 3600000        /* kept at least this long after creation and the last poll */
#define TASK_POLL_MS 500

static int64_t s_real_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t s_now(const mcp_session_t *s)
{
    return s->server->task_clock ? s->server->task_clock() : s_real_now_ms();
}

void mcp_server_set_task_limits(mcp_server_t *self, size_t max_tasks, size_t max_bytes, int64_t (*now_ms)(void))
{
    self->task_max = max_tasks;
    self->task_max_bytes = max_bytes;
    self->task_clock = now_ms;
}

/* The length of o as compact JSON (0 for NULL). Serialized inside a
 * throwaway wrapper: json-c caches the text in the object serialized, and
 * a kept result must not carry a second copy of itself. */
static size_t s_json_size(json_object *o)
{
    if (!o)
        return 0;
    json_object *w = json_object_new_array();
    json_object_array_add(w, json_object_get(o));
    size_t n = strlen(json_object_to_json_string_ext(w, JSON_C_TO_STRING_PLAIN)) - 2;
    json_object_put(w);
    return n;
}

/* Recounts what t holds into its server's task_bytes. */
static void s_account(mcp_session_t *s, mcp_task_t *t)
{
    size_t n = s_json_size(t->args) + s_json_size(t->result) + s_json_size(t->error) + s_json_size(t->input_requests) +
               (t->state ? strlen(t->state) : 0);
    s->server->task_bytes = s->server->task_bytes - t->bytes + n;
    t->bytes = n;
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

/* See mcp_internal.h. */
json_object *mcp_tasks_missing_data(void)
{
    json_object *ext = json_object_new_object();
    json_object_object_add(ext, MCP_EXT_TASKS, json_object_new_object());
    json_object *req = json_object_new_object();
    json_object_object_add(req, "extensions", ext);
    json_object *data = json_object_new_object();
    json_object_object_add(data, "requiredCapabilities", req);
    return data;
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

/* Frees t, already unlinked from s's list; its round, if any, must already
 * be ended or detached. */
static void s_task_free(mcp_session_t *s, mcp_task_t *t)
{
    if (t->call)
        t->call->task = NULL;
    s->server->task_bytes -= t->bytes;
    s->server->task_count--;
    s->ntasks--;
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

/* A finished task keeps only what tasks/get shows: what its rounds needed
 * goes (and stops counting against the byte budget). */
static void s_drop_round_state(mcp_session_t *s, mcp_task_t *t)
{
    json_object_put(t->args);
    t->args = NULL;
    json_object_put(t->caps);
    t->caps = NULL;
    json_object_put(t->responses);
    t->responses = NULL;
    json_object_put(t->input_requests);
    t->input_requests = NULL;
    free(t->state);
    t->state = NULL;
    s_account(s, t);
}

/* Detaches t's round (if any) and ends it: its cancel function runs with
 * reason, or, when it has none, the handler finishes it and nothing is kept.
 * Not from inside a handler: the cancel function may free what it uses. */
static void s_end_round(mcp_task_t *t, mcp_cancel_reason_t reason)
{
    mcp_call_t *round = t->call;
    if (!round)
        return;
    t->call = NULL;
    round->task = NULL;
    if (round->cancel_fn) {
        mcp_cancel_fn *fn = round->cancel_fn;
        round->cancel_fn = NULL;
        fn(round, reason, round->cancel_ud);
        mcp_call_free(round);
    } else {
        round->cancelled = true;
    }
}

void mcp_tasks_session_free(mcp_session_t *s)
{
    while (s->tasks) {
        mcp_task_t *t = s->tasks;
        s->tasks = t->next;
        s_task_free(s, t);
    }
}

void mcp_tasks_sweep(mcp_session_t *s, bool may_cancel)
{
    int64_t now = s_now(s);
    for (mcp_task_t **pp = &s->tasks; *pp;) {
        mcp_task_t *t = *pp;
        int64_t since = t->seen_ms > t->created_ms ? t->seen_ms : t->created_ms;
        if (now - since < TASK_TTL_MS || (t->call && !may_cancel)) {
            pp = &t->next;
            continue;
        }
        *pp = t->next; /* unlinked first: ending the round cannot reach it */
        log_info("task %s expired (%s); dropped", t->id, t->status);
        s_end_round(t, MCP_CANCEL_GONE);
        s_task_free(s, t);
    }
}

void mcp_tasks_input_closed(mcp_session_t *s)
{
    while (s->tasks) {
        mcp_task_t *t = s->tasks;
        s->tasks = t->next;
        s_end_round(t, MCP_CANCEL_GONE);
        s_task_free(s, t);
    }
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
    if (t->status_message)
        json_object_object_add(o, "statusMessage", json_object_new_string(t->status_message));
    json_object_object_add(o, "createdAt", s_iso(t->created_ms));
    json_object_object_add(o, "lastUpdatedAt", s_iso(t->updated_ms));
    json_object_object_add(o, "ttlMs", json_object_new_int(TASK_TTL_MS));
    json_object_object_add(o, "pollIntervalMs", json_object_new_int(TASK_POLL_MS));
    return o;
}

static void s_touch(mcp_session_t *s, mcp_task_t *t, const char *status)
{
    t->status = status;
    t->updated_ms = s_now(s);
}

/* Runs one round: the tool's handler, on a call whose result comes back to
 * the task. The handler gets its own reference to the arguments: a round
 * that finishes inside it drops the task's (s_drop_round_state). */
static void s_round(mcp_session_t *s, mcp_task_t *t)
{
    mcp_tool_entry_t *tool = mcp_server_find_tool(s->server, t->tool);
    mcp_call_t *call = mcp_call_new_internal(s, "tools/call", t->tool, t->caps);
    call->task = t;
    t->call = call;
    if (t->responses)
        call->input_responses = json_object_get(t->responses);
    call->request_state = t->state ? xstrdup(t->state) : NULL;
    json_object *args = json_object_get(t->args);
    tool->tool.fn(call, args, tool->tool.ud);
    json_object_put(args);
}

/* A new task (NULL, and the request answered with an error naming the
 * limit, when the server holds as many tasks, or as many bytes, as it may).
 * Called from handlers: the sweep here ends no round. */
static mcp_task_t *s_task_new(mcp_session_t *s, json_object *id, void *origin, const char *tool, json_object *args,
                              json_object *caps)
{
    mcp_server_t *srv = s->server;
    mcp_tasks_sweep(s, false);
    size_t need = s_json_size(args);
    if (srv->task_count >= srv->task_max || srv->task_bytes + need > srv->task_max_bytes) {
        char msg[300];
        if (srv->task_count >= srv->task_max)
            snprintf(msg, sizeof msg,
                     "Too many tasks: this server keeps at most %zu, each for at least its ttlMs (%d s) after it was "
                     "created or last polled; cancel one, or retry later",
                     srv->task_max, TASK_TTL_MS / 1000);
        else
            snprintf(msg, sizeof msg,
                     "Too many tasks: this server's tasks hold %zu bytes, and may hold at most %zu; retry later", srv->task_bytes,
                     srv->task_max_bytes);
        log_warn("%s", msg);
        mcp_session_send(s, origin, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, msg, NULL), MCP_MSG_RESPONSE);
        return NULL;
    }
    mcp_task_t *t = xcalloc(1, sizeof *t);
    unsigned char raw[16];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(t->id, sizeof t->id, raw, sizeof raw);
    t->created_ms = s_now(s);
    t->seen_ms = t->created_ms;
    s_touch(s, t, "working");
    t->tool = xstrdup(tool);
    t->args = json_object_get(args);
    t->caps = json_object_get(caps);
    t->next = s->tasks;
    s->tasks = t;
    s->ntasks++;
    srv->task_count++;
    s_account(s, t);
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
        call->origin = NULL;      /* and, answered, the client may reuse its stream and id */
        json_object_put(call->id);
        call->id = NULL;
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

/* The first text item of a tool result, or "". */
static const char *s_first_text(json_object *result)
{
    json_object *content = NULL, *item = NULL, *text = NULL;
    if (json_object_object_get_ex(result, "content", &content) && json_object_is_type(content, json_type_array) &&
        json_object_array_length(content) > 0 && (item = json_object_array_get_idx(content, 0)) &&
        json_object_object_get_ex(item, "text", &text) && json_object_is_type(text, json_type_string))
        return json_object_get_string(text);
    return "";
}

void mcp_tasks_settle(mcp_call_t *call, json_object *result, json_object *error)
{
    mcp_task_t *t = call->task;
    mcp_session_t *s = call->session;
    mcp_server_t *srv = s->server;
    t->call = NULL;
    call->task = NULL;
    if (t->probing && !error) {
        /* The check found nothing waiting: the input this task asked for was
         * answered another way, or what asked for it was cancelled or
         * restarted. The task cannot go on. */
        char *msg = xasprintf("The input this task asked for is no longer awaited (answered another way, cancelled, "
                              "or restarted): %.500s",
                              s_first_text(result));
        error = mcp_error_object(JSONRPC_INTERNAL_ERROR, msg);
        free(msg);
        json_object_put(result);
        result = NULL;
        t->status_message = "the input it asked for is no longer awaited";
    }
    json_object *kept = error ? error : mcp_modern_result("tools/call", result);
    s_drop_round_state(s, t);
    size_t size = s_json_size(kept);
    if (srv->task_bytes + size > srv->task_max_bytes) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "The result (%zu bytes) was not kept: this server's tasks already hold %zu bytes, and may hold at "
                 "most %zu",
                 size, srv->task_bytes, srv->task_max_bytes);
        log_warn("task %s: %s", t->id, msg);
        json_object_put(kept);
        kept = error = mcp_error_object(JSONRPC_INTERNAL_ERROR, msg);
        t->status_message = "its result was too big to keep";
    }
    if (error) {
        t->error = kept;
        s_touch(s, t, "failed");
    } else {
        t->result = kept;
        s_touch(s, t, "completed");
    }
    s_account(s, t);
    mcp_call_free(call);
}

void mcp_tasks_input(mcp_call_t *call, json_object *input_requests, const char *state)
{
    mcp_task_t *t = call->task;
    mcp_session_t *s = call->session;
    t->call = NULL;
    call->task = NULL;
    int64_t updated = t->updated_ms;
    if (!input_requests)
        input_requests = json_object_new_object();
    /* A check that finds the same request still waiting changes nothing. */
    bool same = t->probing && t->input_requests && json_object_equal(t->input_requests, input_requests);
    json_object_put(t->input_requests);
    t->input_requests = input_requests;
    free(t->state);
    t->state = state ? xstrdup(state) : NULL;
    json_object_put(t->responses);
    t->responses = NULL;
    s_touch(s, t, "input_required");
    if (same)
        t->updated_ms = updated;
    s_account(s, t);
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
    mcp_call_error_data(call, MCP_ERR_MISSING_CAPABILITY,
                        "Missing required client capability: extensions." MCP_EXT_TASKS, mcp_tasks_missing_data());
    return false;
}

/* The task a tasks/get, update or cancel names (the request answered with an error when
 * none); asking about it keeps it from expiring. */
static mcp_task_t *s_task_of(mcp_call_t *call, json_object *params)
{
    if (!s_gate(call))
        return NULL;
    mcp_task_t *t = s_find(call->session, params);
    if (!t)
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "Invalid params: unknown taskId");
    else
        t->seen_ms = s_now(call->session);
    return t;
}

/* A task in input_required has no round: what asked for input may have
 * moved on without it (its input answered another way, cancelled, or
 * restarted). A round without inputResponses checks: the tool asks again
 * (mcp_tasks_input: nothing changes) while the input still waits, and
 * finishes otherwise (mcp_tasks_settle: the task fails saying so), as a
 * multi-round request retried without its answers would. Only when no
 * partial answers are gathered (a round would be given them). */
static void s_check_input(mcp_session_t *s, mcp_task_t *t)
{
    if (strcmp(t->status, "input_required") != 0 || !t->state || t->responses || t->call)
        return;
    t->probing = true;
    t->status = "working"; /* while the round runs */
    s_round(s, t);
    t->probing = false;
    if (t->call) /* the tool went on with it: a round like any */
        s_touch(s, t, "working");
}

static void s_get(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_task_t *t = s_task_of(call, params);
    if (!t)
        return;
    s_check_input(call->session, t);
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
        s_touch(s, t, "working");
        s_round(s, t);
    } else {
        t->updated_ms = s_now(s);
    }
}

static void s_cancel(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_task_t *t = s_task_of(call, params);
    if (!t)
        return;
    if (!s_terminal(t)) {
        s_touch(call->session, t, "cancelled");
        s_end_round(t, MCP_CANCEL_CLIENT);
        s_drop_round_state(call->session, t);
    }
    mcp_call_reply(call, json_object_new_object());
}

void mcp_tasks_register(mcp_server_t *srv)
{
    srv->task_max = TASK_MAX;
    srv->task_max_bytes = TASK_MAX_BYTES;
    mcp_server_add_method(srv, "tasks/get", s_get, NULL);
    mcp_server_add_method(srv, "tasks/update", s_update, NULL);
    mcp_server_add_method(srv, "tasks/cancel", s_cancel, NULL);
}
