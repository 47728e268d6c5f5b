/* Unit tests: JSON-RPC classification and the MCP session's dispatch, with
 * a transport that records what would be sent (mcp_sink.h). Tasks are
 * test_mcp_tasks.c's, the roots' URIs and pick test_mcp_roots.c's. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check.h"
#include "jsonrpc.h"
#include "jsontok.h"
#include "mcp.h"
#include "mcp_sink.h"
#include "mem.h"
#include "schema.h"
#include "utf8.h"

/* A request json-c cannot finish, then one that must read as "ping". */
static void s_bad_then_ping(const char *bad, const char *good)
{
    jsonrpc_msg_t m;
    jsonrpc_parse(bad, strlen(bad), &m);
    CHECK_EQ_INT(m.kind, JSONRPC_INVALID);
    jsonrpc_msg_free(&m);
    jsonrpc_parse(good, strlen(good), &m);
    CHECK_EQ_INT(m.kind, JSONRPC_REQUEST);
    CHECK_EQ_STR(m.method, "ping");
    jsonrpc_msg_free(&m);
}

/* jsonrpc_parse keeps its tokener for the next request, only after small
 * ones (a kept tokener keeps a buffer as long as its longest token), and a
 * parse that failed half-way leaves nothing behind for the next one. */
static void test_tokener_reuse(void)
{
    jsonrpc_msg_t m;
    const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    const char *half = "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"a\":[1,{\"b\":";
    jsonrpc_parse(ping, strlen(ping), &m);
    jsonrpc_msg_free(&m);
    int kept = jsontok_kept();
    CHECK(kept >= 1);
    for (int i = 0; i < 3; i++) {
        s_bad_then_ping(half, ping);
        CHECK_EQ_INT(jsontok_kept(), kept);
    }
    /* A parse that stops inside a surrogate pair leaves json-c's tokener
     * waiting for the low half, which its reset does not forget: such a
     * tokener is not kept, or the next \u escape would decode as U+FFFD. */
    const char *cut = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\ud800\\u00";
    const char *esc = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\\u0069ng\"}";
    for (int i = 0; i < 2; i++)
        s_bad_then_ping(cut, esc);
    /* A request with a long string: its tokener is freed, not kept. */
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"s\":\"");
    for (int i = 0; i < 2 * JSONTOK_KEEP_MAX; i++)
        buf_puts(&b, "x");
    buf_puts(&b, "\"}}");
    jsonrpc_parse(b.data, b.len, &m);
    CHECK_EQ_INT(m.kind, JSONRPC_REQUEST);
    jsonrpc_msg_free(&m);
    CHECK_EQ_INT(jsontok_kept(), kept - 1);
    buf_free(&b);
    jsonrpc_parse(ping, strlen(ping), &m);
    CHECK_EQ_INT(m.kind, JSONRPC_REQUEST);
    jsonrpc_msg_free(&m);
    CHECK_EQ_INT(jsontok_kept(), kept);
}

static void test_classify(void)
{
    jsonrpc_msg_t m;
    jsonrpc_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 40, &m);
    CHECK_EQ_INT(m.kind, JSONRPC_REQUEST);
    CHECK_EQ_STR(m.method, "ping");
    jsonrpc_msg_free(&m);
    const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
    jsonrpc_parse(n, strlen(n), &m);
    CHECK_EQ_INT(m.kind, JSONRPC_NOTIFICATION);
    jsonrpc_msg_free(&m);
    const char *big = "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"ping\"}";
    jsonrpc_parse(big, strlen(big), &m);
    CHECK_EQ_INT(m.kind, JSONRPC_REQUEST);
    jsonrpc_msg_free(&m);
    const char *r = "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}";
    jsonrpc_parse(r, strlen(r), &m);
    CHECK_EQ_INT(m.kind, JSONRPC_RESPONSE);
    jsonrpc_msg_free(&m);
    struct { const char *in; int code; } bad[] = {
        {"{", JSONRPC_PARSE_ERROR},
        {"{\"a\":1} x", JSONRPC_PARSE_ERROR},
        {"\"\xff\"", JSONRPC_PARSE_ERROR},
        /* json-c's UTF-8 check accepts these; they are not UTF-8. */
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xc0\x80\"}}", JSONRPC_PARSE_ERROR},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xed\xa0\x80\"}}", JSONRPC_PARSE_ERROR},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xf4\x90\x80\x80\"}}", JSONRPC_PARSE_ERROR},
        {"[]", JSONRPC_INVALID_REQUEST},
        {"42", JSONRPC_INVALID_REQUEST},
        {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"x\"}", JSONRPC_INVALID_REQUEST},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}", JSONRPC_INVALID_REQUEST},
        {"{\"id\":1,\"method\":\"x\"}", JSONRPC_INVALID_REQUEST},
        /* Found by the hostile-input test: JSON null is not a parse error,
         * and ids json-c clamps to 64 bits would be echoed changed. */
        {"null", JSONRPC_INVALID_REQUEST},
        {"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST},
        {"{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775809,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jsonrpc_parse(bad[i].in, strlen(bad[i].in), &m);
        CHECK_EQ_INT(m.kind, JSONRPC_INVALID);
        CHECK_EQ_INT(m.err_code, bad[i].code);
        jsonrpc_msg_free(&m);
    }
}

static void test_deep_nesting_is_a_parse_error(void)
{
    size_t depth = 10000;
    char *s = xmalloc(depth * 2 + 1);
    memset(s, '[', depth);
    memset(s + depth, ']', depth);
    s[depth * 2] = '\0';
    jsonrpc_msg_t m;
    jsonrpc_parse(s, depth * 2, &m);
    CHECK_EQ_INT(m.kind, JSONRPC_INVALID);
    CHECK_EQ_INT(m.err_code, JSONRPC_PARSE_ERROR);
    jsonrpc_msg_free(&m);
    free(s);
}

static int s_tool_calls;

static void s_echo_tool(mcp_call_t *call, json_object *args, void *ud)
{
    s_tool_calls++;
    mcp_call_text(call, json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN), false);
}

static void test_session_lifecycle(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", "use it");
    mcp_tool_t t = {
        .name = "echo", .description = "Echoes its arguments.",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},"
                        "\"n\":{\"type\":\"integer\",\"default\":3}},\"required\":[\"a\"],\"additionalProperties\":false}",
        .fn = s_echo_tool,
    };
    mcp_server_add_tool(srv, &t);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);

    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_INVALID_REQUEST);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_METHOD_NOT_FOUND);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
              "\"capabilities\":{\"elicitation\":{}}}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), 0);
    CHECK(strstr(sink.msgs[sink.n - 1], "\"protocolVersion\":\"2025-06-18\"") != NULL);
    CHECK(strstr(sink.msgs[sink.n - 1], "\"instructions\":\"use it\"") != NULL);
    CHECK(mcp_session_client_has(s, "elicitation"));
    CHECK(!mcp_session_client_has(s, "sampling"));
    mcpsink_clear(&sink);

    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":\"x\",\"n\":null}}}");
    CHECK_EQ_INT(s_tool_calls, 1);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "{\\\"a\\\":\\\"x\\\",\\\"n\\\":3}") != NULL);
    CHECK(sink.final[0] && sink.kind[0] == MCP_MSG_RESPONSE);
    mcpsink_clear(&sink);

    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":1}}}");
    CHECK_EQ_INT(s_tool_calls, 1);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"isError\":true") != NULL);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "must be a string") != NULL);
    mcpsink_clear(&sink);

    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":\"x\",\"zz\":1}}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "unknown argument 'zz'") != NULL);
    mcpsink_clear(&sink);

    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"missing\"}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_INVALID_PARAMS);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}");
    CHECK(strstr(sink.msgs[sink.n - 1], "missing required argument 'a'") != NULL);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"error\"}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), 0);
    mcpsink_clear(&sink);
    mcp_session_log(s, MCP_LOG_WARNING, "x", "filtered");
    CHECK_EQ_INT(sink.n, 0);
    mcp_session_log(s, MCP_LOG_ERROR, "x", "shown");
    CHECK_EQ_INT(sink.n, 1);
    mcpsink_clear(&sink);

    /* A NUL inside a name names nothing of ours (as a C string "ping\0x"
     * would equal "ping"), and handlers never get strings cut at a NUL. */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\\u0000x\"}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_METHOD_NOT_FOUND);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\\u0000\",\"arguments\":{\"a\":\"x\"}}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_INVALID_PARAMS);
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":\"x\\u0000y\"}}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "must not contain NUL characters") != NULL);
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"isError\":true") != NULL);
    CHECK_EQ_INT(s_tool_calls, 1);
    mcpsink_clear(&sink);
    /* Every message is valid UTF-8, even when a name is cut inside a
     * character ("Unknown tool: %.100s"): the cut becomes U+FFFD. */
    char line[400], name[128];
    memset(name, 'x', 99);
    strcpy(name + 99, "\xc3\xa9"); /* byte 100 of the name is inside this character */
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\"}}", name);
    mcpsink_feed(s, line);
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_INVALID_PARAMS);
    CHECK(sink.n == 1 && utf8_valid_prefix(sink.msgs[0], strlen(sink.msgs[0])) == strlen(sink.msgs[0]));
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "xx\xef\xbf\xbd\"") != NULL);
    mcpsink_clear(&sink);

    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    CHECK_EQ_INT(sink.n, 0);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}");
    CHECK_EQ_INT(sink.n, 0);

    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
    mcpsink_clear(&sink);
}

static mcp_call_t *s_held;
static int s_cancels;

static void s_hold_tool(mcp_call_t *call, json_object *args, void *ud)
{
    s_held = call;
}

static void s_on_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_cancels++;
    s_held = NULL;
}

static void test_cancellation_and_progress(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_tool_t t = {.name = "hold", .description = "Holds the call.", .input_schema = "{\"type\":\"object\"}", .fn = s_hold_tool};
    mcp_server_add_tool(srv, &t);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}");
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"method\":\"tools/call\",\"params\":{\"name\":\"hold\",\"_meta\":{\"progressToken\":\"tok\"}}}");
    CHECK(s_held != NULL);
    CHECK(s_held && mcp_call_wants_progress(s_held));
    mcp_call_progress(s_held, 5, -1, NULL);
    mcp_call_progress(s_held, 5, -1, NULL); /* not increasing: bumped */
    CHECK_EQ_INT(sink.n, 2);
    CHECK(strstr(sink.msgs[0], "\"progressToken\":\"tok\"") && strstr(sink.msgs[0], "\"progress\":5"));
    CHECK(strstr(sink.msgs[1], "\"progress\":6"));
    /* the transports drop notifications under back-pressure by this kind */
    CHECK(sink.kind[0] == MCP_MSG_NOTIFICATION && sink.kind[1] == MCP_MSG_NOTIFICATION);
    mcp_call_on_cancel(s_held, s_on_cancel, NULL);
    mcpsink_clear(&sink);
    /* the same id again while in flight is refused */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"method\":\"tools/call\",\"params\":{\"name\":\"hold\"}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_INVALID_REQUEST);
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c1\"}}");
    CHECK_EQ_INT(s_cancels, 1);
    CHECK_EQ_INT(sink.n, 0);
    CHECK_EQ_INT(mcp_session_calls(s), 0);
    /* a call still in flight when the session ends is cancelled as gone */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"hold\"}}");
    mcp_call_on_cancel(s_held, s_on_cancel, NULL);
    mcp_session_destroy(&s);
    CHECK_EQ_INT(s_cancels, 2);
    mcp_server_destroy(&srv);
    mcpsink_clear(&sink);
}

static void test_schema_defaults_and_enum(void)
{
    json_object *schema = json_tokener_parse(
        "{\"type\":\"object\",\"properties\":{\"op\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
        "\"w\":{\"type\":\"number\",\"minimum\":0,\"default\":25}},\"required\":[\"op\"]}");
    json_object *out = NULL;
    char err[256];
    json_object *args = json_tokener_parse("{\"op\":\"c\"}");
    CHECK_EQ_INT(schema_apply(schema, args, &out, err, sizeof err), -1);
    CHECK(strstr(err, "valid values: a, b") != NULL);
    json_object_put(args);
    args = json_tokener_parse("{\"op\":\"a\",\"w\":-1}");
    CHECK_EQ_INT(schema_apply(schema, args, &out, err, sizeof err), -1);
    CHECK(strstr(err, "at least 0") != NULL);
    json_object_put(args);
    args = json_tokener_parse("{\"op\":\"b\"}");
    CHECK_EQ_INT(schema_apply(schema, args, &out, err, sizeof err), 0);
    CHECK_EQ_STR(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN), "{\"op\":\"b\",\"w\":25}");
    json_object_put(out);
    CHECK_EQ_INT(schema_apply(schema, NULL, &out, err, sizeof err), -1);
    CHECK(strstr(err, "missing required argument 'op'") != NULL);
    json_object_put(args);
    json_object_put(schema);
}

/* ---- replies to server->client requests are client input ---- */

static int s_replies, s_abandoned;
static char s_reply_seen[256];

static void s_on_reply(void *ud, json_object *result, json_object *error)
{
    (void)ud;
    if (!result && !error) {
        s_abandoned++;
        return;
    }
    s_replies++;
    /* The contract of mcp_response_fn: an object result, or an error object. */
    CHECK(result ? !error && json_object_is_type(result, json_type_object) : json_object_is_type(error, json_type_object));
    snprintf(s_reply_seen, sizeof s_reply_seen, "%s",
             json_object_to_json_string_ext(result ? result : error, JSON_C_TO_STRING_PLAIN));
}

static int s_idle;
static void s_on_idle_count(mcp_session_t *session, void *ud)
{
    (void)session;
    (void)ud;
    s_idle++;
}

static void s_ask_tool(mcp_call_t *call, json_object *args, void *ud)
{
    s_held = call;
    mcp_call_request(call, "elicitation/create", json_object_new_object(), s_on_reply, NULL);
}

static void test_malformed_replies_become_errors(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_tool_t t = {.name = "ask", .description = "Asks the client.", .input_schema = "{\"type\":\"object\"}", .fn = s_ask_tool};
    mcp_server_add_tool(srv, &t);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}");
    static const struct {
        const char *reply; /* %d: the request id */
        const char *seen;
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"action\":null}}", "{\"action\":null}"},
        {"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":null}", "\"result\\\" must be an object"},
        {"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":\"accept\"}", "\"result\\\" must be an object"},
        {"{\"jsonrpc\":\"2.0\",\"id\":%d,\"error\":null}", "\"error\\\" must be an object"},
        {"{\"jsonrpc\":\"2.0\",\"id\":%d,\"error\":{\"code\":\"x\",\"message\":1}}", "\"error\\\" must be an object"},
        {"{\"jsonrpc\":\"2.0\",\"id\":%d,\"error\":{\"code\":-1,\"message\":\"no\"}}", "{\"code\":-1,\"message\":\"no\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"ask\"}}",
                 100 + (int)i);
        mcpsink_feed(s, line);
        CHECK(sink.n > 0 && sink.kind[sink.n - 1] == MCP_MSG_REQUEST); /* never dropped */
        snprintf(line, sizeof line, cases[i].reply, (int)i + 1);
        int before = s_replies;
        s_reply_seen[0] = '\0';
        mcpsink_feed(s, line);
        CHECK_EQ_INT(s_replies, before + 1);
        CHECK(strstr(s_reply_seen, cases[i].seen) != NULL);
        mcp_call_text(s_held, "done", false);
    }
    CHECK_EQ_INT(s_abandoned, 0);

    /* stdin closed: a pending request fails now (it can never be answered),
     * the call goes on; the idle hook runs when the last call ends. */
    s_idle = 0;
    mcp_session_on_idle(s, s_on_idle_count, NULL);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":200,\"method\":\"tools/call\",\"params\":{\"name\":\"ask\"}}");
    CHECK(mcp_session_can_request(s));
    int before = s_replies;
    mcp_session_input_closed(s);
    CHECK_EQ_INT(s_replies, before + 1);
    CHECK(strstr(s_reply_seen, "closed its input") != NULL);
    CHECK(!mcp_session_can_request(s));
    CHECK_EQ_INT(mcp_session_calls(s), 1);
    CHECK_EQ_INT(s_idle, 0);
    mcp_call_text(s_held, "done", false);
    CHECK_EQ_INT(s_idle, 1);
    CHECK_EQ_INT(s_abandoned, 0);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
    mcpsink_clear(&sink);
}

/* resources/list pages by 100 with a decimal offset cursor; anything else is
 * -32602 (strtoul alone took "-1" and wrapped). */
static void s_list_150(json_object *arr, void *ud)
{
    (void)ud;
    for (int i = 0; i < 150; i++) {
        char uri[32];
        snprintf(uri, sizeof uri, "x://%d", i);
        json_object *r = json_object_new_object();
        json_object_object_add(r, "uri", json_object_new_string(uri));
        json_object_object_add(r, "name", json_object_new_string(uri));
        json_object_array_add(arr, r);
    }
}

static bool s_read_none(mcp_call_t *call, const char *uri, void *ud)
{
    return false;
}

static void test_resource_cursor(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_server_set_resource_provider(srv, s_list_150, s_read_none, NULL);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}");
    mcpsink_clear(&sink);
    static const char *bad[] = {"-1", "-100", " 100", "+100", "1e2", "0x10", "", "100 ", "18446744073709551615",
                                "9999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/list\",\"params\":{\"cursor\":\"%s\"}}",
                 bad[i]);
        mcpsink_feed(s, line);
        CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_INVALID_PARAMS);
        mcpsink_clear(&sink);
    }
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\",\"params\":{\"cursor\":5}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_INVALID_PARAMS);
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/list\"}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"nextCursor\":\"100\"") && strstr(sink.msgs[0], "x://99\"") &&
          !strstr(sink.msgs[0], "x://100\""));
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/list\",\"params\":{\"cursor\":\"100\"}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "x://149\"") && !strstr(sink.msgs[0], "x://99\"") &&
          !strstr(sink.msgs[0], "nextCursor"));
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/list\",\"params\":{\"cursor\":\"999999999\"}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"resources\":[]") && !strstr(sink.msgs[0], "nextCursor"));
    mcpsink_clear(&sink);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

/* Subscriptions are bounded per session: the URI's length and how many
 * (a session used to keep 256 URIs of any length, each up to a request). */
static void test_subscription_bounds(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_server_enable_subscriptions(srv);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"}}");
    mcpsink_clear(&sink);
    buf_t line;
    buf_init(&line, 0);
    for (size_t len = 2040; len <= 2056; len += 8) {
        buf_reset(&line);
        buf_puts(&line, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/subscribe\",\"params\":{\"uri\":\"x://");
        for (size_t i = 4; i < len; i++)
            buf_putc(&line, 'a');
        buf_puts(&line, "\"}}");
        mcpsink_feed(s, line.data);
        CHECK_EQ_INT(mcpsink_last_code(&sink), len <= 2048 ? 0 : JSONRPC_INVALID_PARAMS);
        if (len > 2048)
            CHECK(sink.n == 1 && strstr(sink.msgs[0], "longer than 2048 bytes"));
        mcpsink_clear(&sink);
    }
    /* 2040 and 2048 taken: 62 more, then refused with the bound named. */
    int refused_at = -1;
    for (int i = 0; i < 70 && refused_at < 0; i++) {
        char req[160];
        snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/subscribe\",\"params\":{\"uri\":\"x://%d\"}}", i);
        mcpsink_feed(s, req);
        if (mcpsink_last_code(&sink) == JSONRPC_INVALID_PARAMS) {
            refused_at = i;
            CHECK(strstr(sink.msgs[0], "at most 64") != NULL);
        }
        mcpsink_clear(&sink);
    }
    CHECK_EQ_INT(refused_at, 62);
    /* Subscribing again to one held is no new entry; unsubscribing frees one. */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/subscribe\",\"params\":{\"uri\":\"x://7\"}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), 0);
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/unsubscribe\",\"params\":{\"uri\":\"x://7\"}}");
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/subscribe\",\"params\":{\"uri\":\"x://new\"}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), 0);
    mcpsink_clear(&sink);
    buf_free(&line);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

static void s_log_tool(mcp_call_t *call, json_object *args, void *ud)
{
    mcp_call_log(call, MCP_LOG_DEBUG, "t", "dbg", 3);
    mcp_call_log(call, MCP_LOG_WARNING, "t", "warn", 4);
    mcp_call_text(call, mcp_call_client_has(call, "sampling") ? "sampling" : "no sampling", false);
}

#define MODERN_META(extra) "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
                           "\"io.modelcontextprotocol/clientCapabilities\":{" extra "}"

/* MCP 2026-07-28 on a stdio-like session: per-request _meta, server/discover,
 * resultType and caching hints, per-request log level, the new errors; a
 * legacy initialize afterwards is served as before. */
static void test_modern_requests(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", "use it");
    mcp_tool_t t = {.name = "logs", .description = "Logs.", .input_schema = "{\"type\":\"object\"}", .fn = s_log_tool};
    mcp_server_add_tool(srv, &t);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);

    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" MODERN_META("") "}}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), 0);
    CHECK(strstr(sink.msgs[0], "\"supportedVersions\":[\"2026-07-28\"]") != NULL);
    CHECK(strstr(sink.msgs[0], "\"resultType\":\"complete\"") != NULL);
    CHECK(strstr(sink.msgs[0], "\"ttlMs\":0") != NULL && strstr(sink.msgs[0], "\"cacheScope\":\"private\"") != NULL);
    CHECK(strstr(sink.msgs[0], "\"io.modelcontextprotocol/serverInfo\":{\"name\":\"t\",\"version\":\"1.0\"}") != NULL);
    CHECK(!mcp_session_initialized(s));
    mcpsink_clear(&sink);

    /* _meta without clientCapabilities: -32602; another version: -32022 naming ours. */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"_meta\":"
              "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_INVALID_PARAMS);
    CHECK_EQ_INT(mcp_session_take_reject(s), MCP_REJECT_BAD_REQUEST);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{\"_meta\":"
              "{\"io.modelcontextprotocol/protocolVersion\":\"1999-01-01\","
              "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), MCP_ERR_UNSUPPORTED_VERSION);
    CHECK(strstr(sink.msgs[sink.n - 1], "\"data\":{\"supported\":[\"2026-07-28\"],\"requested\":\"1999-01-01\"}") != NULL);
    /* Removed methods: Method not found. */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{" MODERN_META("") "}}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), JSONRPC_METHOD_NOT_FOUND);
    CHECK_EQ_INT(mcp_session_take_reject(s), MCP_REJECT_NOT_FOUND);
    mcpsink_clear(&sink);

    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{" MODERN_META("") "}}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"private\"") != NULL);
    mcpsink_clear(&sink);
    /* No logLevel: no logs; warning: only warning and above. Capabilities per request. */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"logs\"," MODERN_META("") "}}}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "\"no sampling\"") && strstr(sink.msgs[0], "\"resultType\":\"complete\""));
    CHECK(strstr(sink.msgs[0], "ttlMs") == NULL);
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"logs\","
              "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/logLevel\":"
              "\"warning\",\"io.modelcontextprotocol/clientCapabilities\":{\"sampling\":{}}}}}");
    CHECK_EQ_INT(sink.n, 2);
    CHECK(sink.n == 2 && strstr(sink.msgs[0], "\"warn\"") && strstr(sink.msgs[1], "\"sampling\""));
    mcpsink_clear(&sink);

    /* Legacy afterwards: initialize, then results exactly as before. */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
              "\"capabilities\":{}}}");
    CHECK_EQ_INT(mcpsink_last_code(&sink), 0);
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}");
    CHECK(sink.n == 1 && strstr(sink.msgs[0], "resultType") == NULL && strstr(sink.msgs[0], "ttlMs") == NULL);
    mcpsink_clear(&sink);
    mcp_session_destroy(&s);
    mcp_server_destroy(&srv);
}

/* notifications/initialized reaches the server's handlers once, after
 * initialize; other notifications each time; a request tied to no call goes
 * out with no origin and its answer comes back, or the session's end
 * abandons it. */
static int s_notified_init, s_notified_roots, s_root_answers, s_root_abandoned;
static mcp_session_t *s_notified_session;

static void s_on_initialized(mcp_session_t *session, json_object *params, void *ud)
{
    (void)params;
    (void)ud;
    s_notified_init++;
    s_notified_session = session;
}

static void s_on_roots_changed(mcp_session_t *session, json_object *params, void *ud)
{
    (void)session;
    (void)params;
    (void)ud;
    s_notified_roots++;
}

static void s_on_roots(void *ud, json_object *result, json_object *error)
{
    (void)ud;
    if (!result && !error)
        s_root_abandoned++;
    else if (result)
        s_root_answers++;
}

static void test_notifications_and_session_requests(void)
{
    mcpsink_t sink = {0};
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_server_on_notification(srv, "notifications/initialized", s_on_initialized, NULL);
    mcp_server_on_notification(srv, "notifications/roots/list_changed", s_on_roots_changed, NULL);
    mcp_session_t *s = mcp_session_new(srv, mcpsink_send, &sink);
    /* Before initialize: nothing reaches the handlers, nothing can be asked. */
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}");
    CHECK_EQ_INT(s_notified_init, 0);
    CHECK_EQ_INT(s_notified_roots, 0);
    CHECK_EQ_INT(mcp_session_request(s, "roots/list", NULL, s_on_roots, NULL), 0);
    CHECK_EQ_INT(sink.n, 0);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
              "\"capabilities\":{\"roots\":{\"listChanged\":true}}}}");
    CHECK(mcp_session_client_has(s, "roots"));
    mcpsink_clear(&sink);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    CHECK_EQ_INT(s_notified_init, 1);
    CHECK(s_notified_session == s);
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\",\"params\":{\"x\":1}}");
    mcpsink_feed(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\\u0000x\"}");
    CHECK_EQ_INT(s_notified_roots, 1);
    CHECK_EQ_INT(sink.n, 0);
    long h = mcp_session_request(s, "roots/list", NULL, s_on_roots, NULL);
    CHECK(h > 0);
    CHECK(sink.n == 1 && sink.kind[0] == MCP_MSG_REQUEST && strstr(sink.msgs[0], "\"method\":\"roots/list\""));
    json_object *req = sink.n ? json_tokener_parse(sink.msgs[0]) : NULL, *id = NULL;
    CHECK(req && json_object_object_get_ex(req, "id", &id));
    char line[200];
    snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"roots\":[]}}",
             id ? (long long)json_object_get_int64(id) : -1LL);
    json_object_put(req);
    mcpsink_feed(s, line);
    CHECK_EQ_INT(s_root_answers, 1);
    /* One left unanswered is abandoned when the session ends. */
    CHECK(mcp_session_request(s, "roots/list", NULL, s_on_roots, NULL) > 0);
    mcp_session_destroy(&s);
    CHECK_EQ_INT(s_root_abandoned, 1);
    mcp_server_destroy(&srv);
    mcpsink_clear(&sink);
}

int main(void)
{
    RUN_CASE(test_classify);
    RUN_CASE(test_tokener_reuse);
    RUN_CASE(test_deep_nesting_is_a_parse_error);
    RUN_CASE(test_session_lifecycle);
    RUN_CASE(test_cancellation_and_progress);
    RUN_CASE(test_schema_defaults_and_enum);
    RUN_CASE(test_malformed_replies_become_errors);
    RUN_CASE(test_resource_cursor);
    RUN_CASE(test_subscription_bounds);
    RUN_CASE(test_modern_requests);
    RUN_CASE(test_notifications_and_session_requests);
    return check_report("test_mcp");
}
