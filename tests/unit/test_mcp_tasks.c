/* Unit tests: MCP tasks (a call that becomes a task, tasks/get, expiry on a
 * clock the tests move, the table's and the kept results' bounds, rounds
 * waiting for input whose prompt or transport went away), through a session
 * whose transport records what would be sent (mcp_sink.h). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mcp.h"
#include "mcp_sink.h"
#include "mem.h"

static mcp_call_t *s_held;
static int s_held_cancels;

static void s_held_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_held_cancels++;
    s_held = NULL;
}

/* Becomes a task at once and keeps running (like a run past its wait). */
static void s_task_tool(mcp_call_t *call, json_object *args, void *ud)
{
    CHECK(mcp_call_become_task(call));
    CHECK(mcp_call_is_task(call));
    s_held = call;
    mcp_call_on_cancel(call, s_held_cancel, NULL);
}

#define TASK_META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
                  "\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}}"

/* A call that became a task answered its request: the client may reuse the
 * id (a new request is served, notifications/cancelled for it does not reach
 * the task), and the task's result is what tasks/get inlines. */
static void test_task_from_call(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_tool_t t = {.name = "long", .description = "Long.", .input_schema = "{\"type\":\"object\"}",
                    .task_support = MCP_TASK_OPTIONAL, .task_self = true, .fn = s_task_tool};
    mcp_server_add_tool(srv, &t);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"long\"," TASK_META "}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"resultType\":\"task\"") && strstr(sink.msgs[0], "\"id\":7"));
    json_object *o = json_tokener_parse(sink.msgs[0]), *r = NULL, *tid = NULL;
    json_object_object_get_ex(o, "result", &r);
    json_object_object_get_ex(r, "taskId", &tid);
    char *get = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"%s\"," TASK_META "}}",
                          tid ? json_object_get_string(tid) : "");
    json_object_put(o);
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7}}");
    CHECK_EQ_INT(s_held_cancels, 0);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{" TASK_META "}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"tools\"") != NULL);
    CHECK(strstr(sink.msgs[0], "\"execution\":{\"taskSupport\":\"optional\"}") != NULL);
    mcpsink_clear(&sink);
    mcpsink_feed(s, get);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"working\""));
    mcpsink_clear(&sink);
    CHECK(s_held != NULL);
    if (s_held) {
        mcp_call_on_cancel(s_held, NULL, NULL);
        mcp_call_text(s_held, "finished", false);
        s_held = NULL;
    }
    CHECK_EQ_INT(sink.n, 0); /* nothing on the wire: it goes to the task */
    mcpsink_feed(s, get);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"completed\"") && strstr(sink.msgs[0], "\"finished\""));
    mcpsink_clear(&sink);
    free(get);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

/* ---- task lifetimes and bounds, on a clock the tests move ---- */

static int64_t s_clock_ms = 1700000000000;
static int64_t s_test_clock(void)
{
    return s_clock_ms;
}

#define KEPT_MAX 8
static mcp_call_t *s_kept[KEPT_MAX]; /* the rounds running now, by creation order */
static int s_nkept, s_kept_gone, s_kept_client;

static void s_kept_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_kept[(intptr_t)ud] = NULL;
    if (reason == MCP_CANCEL_GONE)
        s_kept_gone++;
    else
        s_kept_client++;
}

/* Becomes a task at once and keeps running until the test finishes it. */
static void s_keep_tool(mcp_call_t *call, json_object *args, void *ud)
{
    if (!mcp_call_become_task(call)) {
        mcp_call_text(call, "refused", true); /* answered already: goes nowhere */
        return;
    }
    if (s_nkept < KEPT_MAX) {
        s_kept[s_nkept] = call;
        mcp_call_on_cancel(call, s_kept_cancel, (void *)(intptr_t)s_nkept);
        s_nkept++;
    }
}

static void s_kept_finish(int i, const char *text)
{
    CHECK(s_kept[i] != NULL);
    if (!s_kept[i])
        return;
    mcp_call_on_cancel(s_kept[i], NULL, NULL);
    mcp_call_text(s_kept[i], text, false);
    s_kept[i] = NULL;
}

static mcp_server_t *s_task_server(void)
{
    memset(s_kept, 0, sizeof s_kept);
    s_nkept = s_kept_gone = s_kept_client = 0;
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_tool_t t = {.name = "long", .description = "Long.", .input_schema = "{\"type\":\"object\"}",
                    .task_support = MCP_TASK_OPTIONAL, .task_self = true, .fn = s_keep_tool};
    mcp_server_add_tool(srv, &t);
    mcp_server_set_task_limits(srv, 256, 32u << 20, s_test_clock);
    return srv;
}

/* Sends a tools/call of "long" and returns the new taskId (malloc'd), or
 * NULL with the answer left in the sink. */
static char *s_new_task(mcp_session_t *s, mcpsink_t *sink)
{
    mcpsink_clear(sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"long\"," TASK_META "}}");
    if (sink->n != 1 || !strstr(sink->msgs[0], "\"resultType\":\"task\""))
        return NULL;
    json_object *o = json_tokener_parse(sink->msgs[0]), *r = NULL, *tid = NULL;
    json_object_object_get_ex(o, "result", &r);
    json_object_object_get_ex(r, "taskId", &tid);
    char *id = xstrdup(json_object_get_string(tid));
    json_object_put(o);
    mcpsink_clear(sink);
    return id;
}

/* tasks/get of id: the answer is the sink's only message. */
static void s_task_get(mcp_session_t *s, mcpsink_t *sink, const char *id)
{
    mcpsink_clear(sink);
    char *get = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"%s\"," TASK_META "}}", id);
    mcpsink_feed(s, get);
    free(get);
}

#define HOUR_MS 3600000

/* Tasks nobody asks about go an hour after creation (or after the last
 * tasks/get), finished or not: an unfinished one's round is ended as
 * "gone". One still polled stays. */
static void test_task_expiry(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = s_task_server();
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    char *abandoned = s_new_task(s, &sink), *polled = s_new_task(s, &sink), *done = s_new_task(s, &sink);
    CHECK(abandoned && polled && done);
    s_kept_finish(2, "finished");
    s_clock_ms += HOUR_MS / 2;
    s_task_get(s, &sink, polled);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"working\""));
    s_clock_ms += HOUR_MS / 2 + 1000; /* past the hour for all but the polled one */
    CHECK_EQ_INT(mcp_session_calls(s), 2);
    s_task_get(s, &sink, abandoned);
    CHECK_EQ_INT(mcpsink_last_code(&sink), -32602);
    s_task_get(s, &sink, done);
    CHECK_EQ_INT(mcpsink_last_code(&sink), -32602);
    CHECK_EQ_INT(s_kept_gone, 1);
    CHECK(s_kept[0] == NULL && s_kept[1] != NULL);
    CHECK_EQ_INT(mcp_session_calls(s), 1);
    s_task_get(s, &sink, polled);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"working\""));
    mcpsink_clear(&sink);
    free(abandoned);
    free(polled);
    free(done);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

/* A full table refuses new tasks naming its limit; it evicts nothing
 * younger than its ttlMs, finished or not, and has room again once they
 * expire. */
static void test_task_table_full(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = s_task_server();
    mcp_server_set_task_limits(srv, 3, 32u << 20, s_test_clock);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    char *ids[3];
    for (int i = 0; i < 3; i++) {
        ids[i] = s_new_task(s, &sink);
        CHECK(ids[i] != NULL);
    }
    s_kept_finish(0, "first");
    s_kept_finish(1, "second");
    char *more = s_new_task(s, &sink);
    CHECK(more == NULL);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "Too many tasks") && strstr(sink.msgs[0], "at most 3"));
    for (int i = 0; i < 3; i++) {
        s_task_get(s, &sink, ids[i] ? ids[i] : "");
        CHECK(sink.n == 1 && strstr(sink.msgs[0], i == 2 ? "\"status\":\"working\"" : "\"status\":\"completed\""));
    }
    s_clock_ms += HOUR_MS + 1000;
    more = s_new_task(s, &sink);
    CHECK(more != NULL);
    for (int i = 0; i < 3; i++)
        free(ids[i]);
    free(more);
    mcpsink_clear(&sink);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

/* Kept results share a byte budget: one that does not fit is not kept, and
 * the task fails saying so. */
static void test_task_bytes(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = s_task_server();
    mcp_server_set_task_limits(srv, 256, 10000, s_test_clock);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    char *a = s_new_task(s, &sink), *b = s_new_task(s, &sink);
    CHECK(a && b);
    char big[6001];
    memset(big, 'x', 6000);
    big[6000] = '\0';
    s_kept_finish(0, big);
    s_kept_finish(1, big);
    s_task_get(s, &sink, a ? a : "");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"completed\"") && strstr(sink.msgs[0], "xxxxxxxxxx"));
    s_task_get(s, &sink, b ? b : "");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"failed\"") && strstr(sink.msgs[0], "was not kept") &&
          strstr(sink.msgs[0], "at most 10000") && !strstr(sink.msgs[0], "xxxxxxxxxx"));
    mcpsink_clear(&sink);
    free(a);
    free(b);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

/* A tool that asks for input from its first round, like run at input():
 * while s_prompt_waits, a round without the answer asks again; once the
 * prompt went away (answered through another request, cancelled), such a
 * round says so. */
static bool s_prompt_waits;

static void s_ask_input_tool(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *responses = mcp_call_input_responses(call);
    if (mcp_call_request_state(call) && !s_prompt_waits) {
        mcp_call_text(call, "the input() this answer was for is no longer waiting", true);
        return;
    }
    if (responses) {
        mcp_call_text(call, "answered", false);
        return;
    }
    json_object *reqs = json_tokener_parse("{\"input\":{\"method\":\"elicitation/create\",\"params\":{\"message\":\"Name?\"}}}");
    mcp_call_input_required(call, reqs, "input:1");
}

/* A task in input_required whose prompt went away does not keep showing
 * the stale inputRequests: it fails saying why. */
static void test_task_stale_input(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_tool_t t = {.name = "ask", .description = "Ask.", .input_schema = "{\"type\":\"object\"}",
                    .task_support = MCP_TASK_OPTIONAL, .fn = s_ask_input_tool};
    mcp_server_add_tool(srv, &t);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    s_prompt_waits = true;
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"ask\"," TASK_META "}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"resultType\":\"task\""));
    json_object *o = json_tokener_parse(sink.n ? sink.msgs[0] : "{}"), *r = NULL, *tid = NULL;
    json_object_object_get_ex(o, "result", &r);
    json_object_object_get_ex(r, "taskId", &tid);
    char *id = xstrdup(tid ? json_object_get_string(tid) : "");
    json_object_put(o);
    s_task_get(s, &sink, id);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"input_required\"") && strstr(sink.msgs[0], "Name?"));
    s_task_get(s, &sink, id); /* still waiting: unchanged */
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"input_required\"") && strstr(sink.msgs[0], "Name?"));
    CHECK_EQ_INT(mcp_session_calls(s), 0);
    s_prompt_waits = false; /* answered elsewhere, or cancelled */
    s_task_get(s, &sink, id);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"status\":\"failed\"") && strstr(sink.msgs[0], "no longer awaited") &&
          strstr(sink.msgs[0], "no longer waiting") && !strstr(sink.msgs[0], "inputRequests"));
    CHECK_EQ_INT(mcp_session_calls(s), 0);
    mcpsink_clear(&sink);
    free(id);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

/* stdio's EOF: no task can be asked about again, so their rounds end (as
 * "gone") and nothing is left in flight to keep the process up. */
static void test_task_input_closed(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = s_task_server();
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    char *id = s_new_task(s, &sink);
    CHECK(id != NULL);
    CHECK_EQ_INT(mcp_session_calls(s), 1);
    mcp_session_input_closed(s);
    CHECK_EQ_INT(s_kept_gone, 1);
    CHECK_EQ_INT(mcp_session_calls(s), 0);
    free(id);
    mcpsink_clear(&sink);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

int main(void)
{
    RUN_CASE(test_task_from_call);
    RUN_CASE(test_task_expiry);
    RUN_CASE(test_task_table_full);
    RUN_CASE(test_task_bytes);
    RUN_CASE(test_task_stale_input);
    RUN_CASE(test_task_input_closed);
    return check_report("test_mcp_tasks");
}
