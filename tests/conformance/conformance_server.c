/* conformance_server: the fixtures the official MCP conformance suite
 * expects (tools, resources, prompts, completion), served by rat-py's own
 * MCP layer (rat_mcp) over its Streamable HTTP transport. It links nothing
 * from the Jupyter side: it proves the MCP layer, not the kernel.
 *
 * Usage: conformance_server [--port N]   (prints its URL on stderr) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "buf.h"
#include "jsonrpc.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "sigs.h"
#include "transport_http.h"

/* A 1x1 red PNG and a tiny WAV, as the reference test server uses. */
#define TEST_PNG "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
#define TEST_WAV "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

static loop_t *s_loop;

static json_object *s_parse(const char *json)
{
    json_object *o = json_tokener_parse(json);
    if (!o) {
        fprintf(stderr, "conformance_server: bad fixture JSON: %s\n", json);
        abort();
    }
    return o;
}

static void s_reply_json(mcp_call_t *call, const char *json)
{
    mcp_call_reply(call, s_parse(json));
}

static json_object *s_text_result(const char *text, bool is_error)
{
    json_object *item = json_object_new_object();
    json_object_object_add(item, "type", json_object_new_string("text"));
    json_object_object_add(item, "text", json_object_new_string(text));
    json_object *content = json_object_new_array();
    json_object_array_add(content, item);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "content", content);
    if (is_error)
        json_object_object_add(res, "isError", json_object_new_boolean(true));
    return res;
}

/* ------------------------------------------------------------ tools */

static void s_simple_text(mcp_call_t *call, json_object *args, void *ud)
{
    mcp_call_text(call, "This is a simple text response for testing.", false);
}

static void s_image(mcp_call_t *call, json_object *args, void *ud)
{
    s_reply_json(call, "{\"content\":[{\"type\":\"image\",\"data\":\"" TEST_PNG "\",\"mimeType\":\"image/png\"}]}");
}

static void s_audio(mcp_call_t *call, json_object *args, void *ud)
{
    s_reply_json(call, "{\"content\":[{\"type\":\"audio\",\"data\":\"" TEST_WAV "\",\"mimeType\":\"audio/wav\"}]}");
}

static void s_embedded(mcp_call_t *call, json_object *args, void *ud)
{
    s_reply_json(call, "{\"content\":[{\"type\":\"resource\",\"resource\":{\"uri\":\"test://embedded-resource\","
                       "\"mimeType\":\"text/plain\",\"text\":\"This is an embedded resource content.\"}}]}");
}

static void s_multiple(mcp_call_t *call, json_object *args, void *ud)
{
    s_reply_json(call, "{\"content\":["
                       "{\"type\":\"text\",\"text\":\"Multiple content types test:\"},"
                       "{\"type\":\"image\",\"data\":\"" TEST_PNG "\",\"mimeType\":\"image/png\"},"
                       "{\"type\":\"resource\",\"resource\":{\"uri\":\"test://mixed-content-resource\","
                       "\"mimeType\":\"application/json\",\"text\":\"{\\\"test\\\":\\\"data\\\",\\\"value\\\":123}\"}}]}");
}

static void s_error_tool(mcp_call_t *call, json_object *args, void *ud)
{
    mcp_call_text(call, "This tool intentionally returns an error for testing", true);
}

/* Tools that take time: a small state machine driven by loop timers. */
typedef struct {
    mcp_call_t *call;   /* NULL once the client cancelled */
    int step;
    uint64_t timer;
    bool progress;
} s_slow_t;

static void s_slow_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_slow_t *st = ud;
    loop_timer_cancel(s_loop, st->timer);
    free(st);
}

static void s_slow_step(loop_t *loop, void *ud)
{
    s_slow_t *st = ud;
    static const char *logs[] = {"Tool execution started", "Tool processing data", "Tool execution completed"};
    if (st->progress) {
        char msg[64];
        snprintf(msg, sizeof msg, "Completed step %d of 100", st->step * 50);
        mcp_call_progress(st->call, st->step * 50.0, 100, msg);
    } else {
        mcp_call_log(st->call, MCP_LOG_INFO, "conformance-test-server", logs[st->step], strlen(logs[st->step]));
    }
    if (++st->step < 3) {
        st->timer = loop_timer(loop, 50, s_slow_step, st);
        return;
    }
    mcp_call_on_cancel(st->call, NULL, NULL);
    mcp_call_text(st->call, st->progress ? "Tool with progress executed successfully"
                                         : "Tool with logging executed successfully", false);
    free(st);
}

static void s_start_slow(mcp_call_t *call, bool progress)
{
    s_slow_t *st = xcalloc(1, sizeof *st);
    st->call = call;
    st->progress = progress;
    mcp_call_on_cancel(call, s_slow_cancel, st);
    s_slow_step(s_loop, st);
}

static void s_logging_tool(mcp_call_t *call, json_object *args, void *ud)
{
    s_start_slow(call, false);
}

static void s_progress_tool(mcp_call_t *call, json_object *args, void *ud)
{
    s_start_slow(call, true);
}

/* Server->client requests: the tool waits for the client's answer. */
typedef struct {
    mcp_call_t *call;
    const char *prefix;
    long handle;
} s_ask_t;

static void s_ask_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_ask_t *a = ud;
    a->call = NULL; /* the pending request is abandoned with the call */
}

static void s_ask_answer(void *ud, json_object *result, json_object *error)
{
    s_ask_t *a = ud;
    if (!a->call) {
        free(a);
        return;
    }
    mcp_call_on_cancel(a->call, NULL, NULL);
    buf_t b;
    buf_init(&b, 0);
    if (!result) {
        json_object *m = NULL;
        buf_printf(&b, "%s not supported or error: %s", a->prefix,
                   error && json_object_object_get_ex(error, "message", &m) ? json_object_get_string(m) : "no answer");
    } else if (strcmp(a->prefix, "Sampling") == 0) {
        json_object *content = NULL, *text = NULL;
        json_object_object_get_ex(result, "content", &content);
        json_object_object_get_ex(content, "text", &text);
        buf_printf(&b, "LLM response: %s", text ? json_object_get_string(text) : "No response");
    } else {
        json_object *action = NULL, *content = NULL;
        json_object_object_get_ex(result, "action", &action);
        json_object_object_get_ex(result, "content", &content);
        buf_printf(&b, "%s: action=%s, content=%s", a->prefix, action ? json_object_get_string(action) : "?",
                   content ? json_object_to_json_string_ext(content, JSON_C_TO_STRING_PLAIN) : "{}");
    }
    mcp_call_reply(a->call, s_text_result(buf_str(&b), false));
    buf_free(&b);
    free(a);
}

static void s_ask(mcp_call_t *call, const char *method, json_object *params, const char *prefix)
{
    s_ask_t *a = xcalloc(1, sizeof *a);
    a->call = call;
    a->prefix = prefix;
    mcp_call_on_cancel(call, s_ask_cancel, a);
    a->handle = mcp_call_request(call, method, params, s_ask_answer, a);
}

static void s_sampling(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *prompt = NULL;
    json_object_object_get_ex(args, "prompt", &prompt);
    json_object *params = s_parse("{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"\"}}],"
                                  "\"maxTokens\":100}");
    json_object *msgs = NULL;
    json_object_object_get_ex(params, "messages", &msgs);
    json_object *content = NULL;
    json_object_object_get_ex(json_object_array_get_idx(msgs, 0), "content", &content);
    json_object_object_add(content, "text", json_object_new_string(prompt ? json_object_get_string(prompt) : ""));
    s_ask(call, "sampling/createMessage", params, "Sampling");
}

static void s_elicitation(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *message = NULL;
    json_object_object_get_ex(args, "message", &message);
    json_object *params = s_parse("{\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"response\":"
                                  "{\"type\":\"string\",\"description\":\"User's response\"}},\"required\":[\"response\"]}}");
    json_object_object_add(params, "message", json_object_new_string(message ? json_object_get_string(message) : ""));
    s_ask(call, "elicitation/create", params, "User response");
}

static void s_elicitation_defaults(mcp_call_t *call, json_object *args, void *ud)
{
    s_ask(call, "elicitation/create",
          s_parse("{\"message\":\"Please review and update the form fields with defaults\",\"requestedSchema\":"
                  "{\"type\":\"object\",\"properties\":{"
                  "\"name\":{\"type\":\"string\",\"description\":\"User name\",\"default\":\"John Doe\"},"
                  "\"age\":{\"type\":\"integer\",\"description\":\"User age\",\"default\":30},"
                  "\"score\":{\"type\":\"number\",\"description\":\"User score\",\"default\":95.5},"
                  "\"status\":{\"type\":\"string\",\"description\":\"User status\","
                  "\"enum\":[\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
                  "\"verified\":{\"type\":\"boolean\",\"description\":\"Verification status\",\"default\":true}},"
                  "\"required\":[]}}"),
          "Elicitation completed");
}

static void s_elicitation_enums(mcp_call_t *call, json_object *args, void *ud)
{
    s_ask(call, "elicitation/create",
          s_parse("{\"message\":\"Please select options from the enum fields\",\"requestedSchema\":"
                  "{\"type\":\"object\",\"properties\":{"
                  "\"untitledSingle\":{\"type\":\"string\",\"description\":\"Select one option\","
                  "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
                  "\"titledSingle\":{\"type\":\"string\",\"description\":\"Select one option with titles\",\"oneOf\":["
                  "{\"const\":\"value1\",\"title\":\"First Option\"},{\"const\":\"value2\",\"title\":\"Second Option\"},"
                  "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
                  "\"legacyEnum\":{\"type\":\"string\",\"description\":\"Select one option (legacy)\","
                  "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
                  "\"untitledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options\",\"minItems\":1,"
                  "\"maxItems\":3,\"items\":{\"type\":\"string\",\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
                  "\"titledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options with titles\","
                  "\"minItems\":1,\"maxItems\":3,\"items\":{\"anyOf\":["
                  "{\"const\":\"value1\",\"title\":\"First Choice\"},{\"const\":\"value2\",\"title\":\"Second Choice\"},"
                  "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},\"required\":[]}}"),
          "Elicitation completed");
}

static void s_schema_2020(mcp_call_t *call, json_object *args, void *ud)
{
    char *text = xasprintf("JSON Schema 2020-12 tool called with: %s",
                           json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
    mcp_call_text(call, text, false);
    free(text);
}

/* ------------------------------------------------ 2026-07-28 fixtures
 * The multi-round (InputRequiredResult) tools of the input-required-result-*
 * scenarios and the server-stateless diagnostics. */

static json_object *s_elicit_req(const char *message, const char *field, const char *type)
{
    char *js = xasprintf("{\"method\":\"elicitation/create\",\"params\":{\"message\":\"%s\",\"requestedSchema\":"
                         "{\"type\":\"object\",\"properties\":{\"%s\":{\"type\":\"%s\"}},\"required\":[\"%s\"]}}}",
                         message, field, type, field);
    json_object *o = s_parse(js);
    free(js);
    return o;
}

static json_object *s_sampling_req(const char *text, int max_tokens)
{
    char *js = xasprintf("{\"method\":\"sampling/createMessage\",\"params\":{\"messages\":[{\"role\":\"user\","
                         "\"content\":{\"type\":\"text\",\"text\":\"%s\"}}],\"maxTokens\":%d}}",
                         text, max_tokens);
    json_object *o = s_parse(js);
    free(js);
    return o;
}

static json_object *s_requests(const char *k1, json_object *v1, const char *k2, json_object *v2, const char *k3,
                               json_object *v3)
{
    json_object *o = json_object_new_object();
    if (k1)
        json_object_object_add(o, k1, v1);
    if (k2)
        json_object_object_add(o, k2, v2);
    if (k3)
        json_object_object_add(o, k3, v3);
    return o;
}

/* inputResponses[key], when it is an object. */
static json_object *s_response(mcp_call_t *call, const char *key)
{
    json_object *r = mcp_call_input_responses(call), *v = NULL;
    return r && json_object_object_get_ex(r, key, &v) && json_object_is_type(v, json_type_object) ? v : NULL;
}

/* An accepted elicitation's content[field] as a string, or NULL. */
static const char *s_elicited(mcp_call_t *call, const char *key, const char *field)
{
    json_object *r = s_response(call, key), *content = NULL, *v = NULL;
    if (r && json_object_object_get_ex(r, "content", &content) && json_object_is_type(content, json_type_object) &&
        json_object_object_get_ex(content, field, &v))
        return json_object_get_string(v);
    return NULL;
}

static void s_reply_text(mcp_call_t *call, const char *text)
{
    mcp_call_reply(call, s_text_result(text, false));
}

static void s_ir_elicitation(mcp_call_t *call, json_object *args, void *ud)
{
    const char *name = s_elicited(call, "user_name", "name");
    if (!name) {
        mcp_call_input_required(call, s_requests("user_name", s_elicit_req("What is your name?", "name", "string"),
                                                 NULL, NULL, NULL, NULL), NULL);
        return;
    }
    char *t = xasprintf("Hello, %s!", name);
    s_reply_text(call, t);
    free(t);
}

static void s_ir_sampling(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *r = s_response(call, "capital_question"), *content = NULL, *text = NULL;
    if (!r) {
        mcp_call_input_required(call, s_requests("capital_question", s_sampling_req("What is the capital of France?", 100),
                                                 NULL, NULL, NULL, NULL), NULL);
        return;
    }
    json_object_object_get_ex(r, "content", &content);
    json_object_object_get_ex(content, "text", &text);
    char *t = xasprintf("LLM said: %s", text ? json_object_get_string(text) : "(nothing)");
    s_reply_text(call, t);
    free(t);
}

static void s_ir_roots(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *r = s_response(call, "client_roots"), *roots = NULL, *uri = NULL;
    if (!r || !json_object_object_get_ex(r, "roots", &roots) || !json_object_is_type(roots, json_type_array)) {
        mcp_call_input_required(call, s_requests("client_roots", s_parse("{\"method\":\"roots/list\",\"params\":{}}"),
                                                 NULL, NULL, NULL, NULL), NULL);
        return;
    }
    buf_t b;
    buf_init(&b, 0);
    buf_printf(&b, "Roots:");
    for (size_t i = 0; i < json_object_array_length(roots); i++)
        if (json_object_object_get_ex(json_object_array_get_idx(roots, i), "uri", &uri))
            buf_printf(&b, " %s", json_object_get_string(uri));
    s_reply_text(call, buf_str(&b));
    buf_free(&b);
}

static void s_ir_request_state(mcp_call_t *call, json_object *args, void *ud)
{
    const char *state = mcp_call_request_state(call);
    if (!state || strcmp(state, "confirm-pending") != 0 || !s_response(call, "confirm")) {
        mcp_call_input_required(call, s_requests("confirm", s_elicit_req("Please confirm", "ok", "boolean"), NULL, NULL,
                                                 NULL, NULL), "confirm-pending");
        return;
    }
    s_reply_text(call, "state-ok: confirmed");
}

static void s_ir_multi_round(mcp_call_t *call, json_object *args, void *ud)
{
    const char *state = mcp_call_request_state(call);
    const char *name = s_elicited(call, "step1", "name");
    const char *color = s_elicited(call, "step2", "color");
    if (state && strncmp(state, "round-2:", 8) == 0 && color) {
        char *t = xasprintf("%s likes %s", state + 8, color);
        s_reply_text(call, t);
        free(t);
    } else if (state && strcmp(state, "round-1") == 0 && name) {
        char *st = xasprintf("round-2:%s", name);
        mcp_call_input_required(call, s_requests("step2", s_elicit_req("Step 2: What is your favorite color?", "color",
                                                                       "string"), NULL, NULL, NULL, NULL), st);
        free(st);
    } else {
        mcp_call_input_required(call, s_requests("step1", s_elicit_req("Step 1: What is your name?", "name", "string"),
                                                 NULL, NULL, NULL, NULL), "round-1");
    }
}

static void s_ir_multiple(mcp_call_t *call, json_object *args, void *ud)
{
    if (mcp_call_request_state(call) && s_response(call, "user_name") && s_response(call, "greeting") &&
        s_response(call, "client_roots")) {
        s_reply_text(call, "All three inputs received");
        return;
    }
    mcp_call_input_required(call, s_requests("user_name", s_elicit_req("What is your name?", "name", "string"),
                                             "greeting", s_sampling_req("Generate a greeting", 50), "client_roots",
                                             s_parse("{\"method\":\"roots/list\",\"params\":{}}")), "all-three");
}

static void s_ir_tampered(mcp_call_t *call, json_object *args, void *ud)
{
    if (mcp_call_request_state(call) && s_response(call, "confirm")) {
        s_reply_text(call, "state verified");
        return;
    }
    mcp_call_input_required(call, s_requests("confirm", s_elicit_req("Please confirm", "ok", "boolean"), NULL, NULL,
                                             NULL, NULL), "sealed");
}

/* Only what the request's clientCapabilities declare. */
static void s_ir_capabilities(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *req = json_object_new_object();
    if (mcp_call_client_has(call, "elicitation"))
        json_object_object_add(req, "user_name", s_elicit_req("What is your name?", "name", "string"));
    if (mcp_call_client_has(call, "sampling"))
        json_object_object_add(req, "question", s_sampling_req("What is the capital of France?", 100));
    if (mcp_call_client_has(call, "roots"))
        json_object_object_add(req, "client_roots", s_parse("{\"method\":\"roots/list\",\"params\":{}}"));
    json_object *got = mcp_call_input_responses(call);
    if (json_object_object_length(req) == 0 || (got && json_object_object_length(got) > 0)) {
        json_object_put(req);
        s_reply_text(call, "done");
        return;
    }
    mcp_call_input_required(call, req, NULL);
}

/* server-stateless: a call that needs elicitation answers input-required
 * on its own stream, never with an independent request. */
static void s_streaming_elicitation(mcp_call_t *call, json_object *args, void *ud)
{
    if (s_elicited(call, "answer", "text")) {
        s_reply_text(call, "thanks");
        return;
    }
    mcp_call_input_required(call, s_requests("answer", s_elicit_req("Say something", "text", "string"), NULL, NULL,
                                             NULL, NULL), NULL);
}

static void s_missing_capability(mcp_call_t *call, json_object *args, void *ud)
{
    if (!mcp_call_client_has(call, "sampling")) {
        mcp_call_error_capability(call, "sampling");
        return;
    }
    s_reply_text(call, "sampling declared");
}

static void s_ir_prompt(mcp_call_t *call, json_object *args, void *ud)
{
    const char *ctx = s_elicited(call, "user_context", "context");
    if (!ctx) {
        mcp_call_input_required(call, s_requests("user_context", s_elicit_req("What context should the prompt use?",
                                                                              "context", "string"), NULL, NULL, NULL,
                                                 NULL), NULL);
        return;
    }
    json_object *msg = s_parse("{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"\"}}"), *content = NULL;
    json_object_object_get_ex(msg, "content", &content);
    char *t = xasprintf("Use this context: %s", ctx);
    json_object_object_add(content, "text", json_object_new_string(t));
    free(t);
    json_object *msgs = json_object_new_array();
    json_object_array_add(msgs, msg);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "messages", msgs);
    mcp_call_reply(call, res);
}

/* ------------------------------------------------ tasks extension fixtures
 * (the tasks-* scenarios, SEP-2663). */

typedef struct {
    mcp_call_t *call;
    uint64_t timer;
    bool fail;          /* end with a tool error instead of a result */
} s_delay_t;

static void s_delay_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_delay_t *d = ud;
    loop_timer_cancel(s_loop, d->timer);
    free(d);
}

static void s_delay_fire(loop_t *loop, void *ud)
{
    s_delay_t *d = ud;
    mcp_call_on_cancel(d->call, NULL, NULL);
    if (d->fail)
        mcp_call_text(d->call, "failing_job: the job failed", true);
    else
        mcp_call_text(d->call, "slow_compute: done", false);
    free(d);
}

static void s_delay(mcp_call_t *call, double seconds, bool fail)
{
    s_delay_t *d = xcalloc(1, sizeof *d);
    d->call = call;
    d->fail = fail;
    mcp_call_on_cancel(call, s_delay_cancel, d);
    d->timer = loop_timer(s_loop, (int64_t)(seconds * 1000), s_delay_fire, d);
}

static void s_greet(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *name = NULL;
    json_object_object_get_ex(args, "name", &name);
    char *t = xasprintf("Hello, %s!", name ? json_object_get_string(name) : "World");
    s_reply_text(call, t);
    free(t);
}

static void s_slow_compute(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *sec = NULL;
    double seconds = json_object_object_get_ex(args, "seconds", &sec) ? json_object_get_double(sec) : 1;
    if (!(seconds >= 0 && seconds <= 60))
        seconds = 1;
    s_delay(call, seconds, false);
}

static void s_failing_job(mcp_call_t *call, json_object *args, void *ud)
{
    s_delay(call, 0.2, true);
}

static void s_protocol_error_job(mcp_call_t *call, json_object *args, void *ud)
{
    mcp_call_error(call, JSONRPC_INTERNAL_ERROR, "protocol_error_job: internal failure");
}

static void s_confirm_delete(mcp_call_t *call, json_object *args, void *ud)
{
    const char *ok = s_elicited(call, "confirm", "confirm");
    if (!s_response(call, "confirm")) {
        mcp_call_input_required(call, s_requests("confirm", s_elicit_req("Delete the file?", "confirm", "boolean"),
                                                 NULL, NULL, NULL, NULL), NULL);
        return;
    }
    s_reply_text(call, ok && strcmp(ok, "true") == 0 ? "deleted" : "kept");
}

/* tasks-mrtr-composition: a multi-round request first, then a task. */
static void s_tool_with_task(mcp_call_t *call, json_object *args, void *ud)
{
    const char *name = s_elicited(call, "user_name", "name");
    if (!name) {
        mcp_call_input_required(call, s_requests("user_name", s_elicit_req("What is your name?", "name", "string"),
                                                 NULL, NULL, NULL, NULL), NULL);
        return;
    }
    char *t = xasprintf("Hello, %s (from a task)", name);
    mcp_call_become_task(call);
    s_reply_text(call, t);
    free(t);
}

static void s_multi_input(mcp_call_t *call, json_object *args, void *ud)
{
    const char *a = s_elicited(call, "first", "value"), *b = s_elicited(call, "second", "value");
    if (!s_response(call, "first") || !s_response(call, "second")) {
        mcp_call_input_required(call, s_requests("first", s_elicit_req("First value?", "value", "string"), "second",
                                                 s_elicit_req("Second value?", "value", "string"), NULL, NULL), NULL);
        return;
    }
    char *t = xasprintf("got %s and %s", a ? a : "?", b ? b : "?");
    s_reply_text(call, t);
    free(t);
}

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

/* The tools the tasks-* scenarios expect to run as tasks. */
static mcp_task_support_t s_task_support(const char *name)
{
    if (strcmp(name, "failing_job") == 0 || strcmp(name, "test_tool_with_task") == 0)
        return MCP_TASK_REQUIRED;
    static const char *optional[] = {"slow_compute", "protocol_error_job", "confirm_delete", "multi_input"};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
        if (strcmp(name, optional[i]) == 0)
            return MCP_TASK_OPTIONAL;
    return MCP_TASK_NEVER;
}

static void s_tools(mcp_server_t *srv)
{
    struct {
        const char *name, *description, *schema;
        mcp_tool_fn *fn;
    } tools[] = {
        {"test_simple_text", "Tests simple text content response", NO_ARGS, s_simple_text},
        {"test_image_content", "Tests image content response", NO_ARGS, s_image},
        {"test_audio_content", "Tests audio content response", NO_ARGS, s_audio},
        {"test_embedded_resource", "Tests embedded resource content response", NO_ARGS, s_embedded},
        {"test_multiple_content_types", "Tests response with multiple content types (text, image, resource)",
         NO_ARGS, s_multiple},
        {"test_tool_with_logging", "Tests tool that emits log messages during execution", NO_ARGS, s_logging_tool},
        {"test_tool_with_progress", "Tests tool that reports progress notifications", NO_ARGS, s_progress_tool},
        {"test_error_handling", "Tests error response handling", NO_ARGS, s_error_tool},
        {"test_sampling", "Tests server-initiated sampling (LLM completion request)",
         "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\",\"description\":"
         "\"The prompt to send to the LLM\"}},\"required\":[\"prompt\"]}",
         s_sampling},
        {"test_elicitation", "Tests server-initiated elicitation (user input request)",
         "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\",\"description\":"
         "\"The message to show the user\"}},\"required\":[\"message\"]}",
         s_elicitation},
        {"test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", NO_ARGS,
         s_elicitation_defaults},
        {"test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", NO_ARGS,
         s_elicitation_enums},
        {"json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
         "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"$defs\":{\"address\":"
         "{\"$anchor\":\"addressDef\",\"type\":\"object\",\"properties\":{\"street\":{\"type\":\"string\"},"
         "\"city\":{\"type\":\"string\"}}}},"
         "\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"},"
         "\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},\"phone\":{\"type\":\"string\"},"
         "\"email\":{\"type\":\"string\"}},"
         "\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"
         "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},\"required\":[\"contactMethod\"]},"
         "\"then\":{\"required\":[\"phone\"]},\"else\":{\"required\":[\"email\"]},"
         "\"additionalProperties\":false}",
         s_schema_2020},
        {"test_input_required_result_elicitation", "Asks the user's name through an input-required result", NO_ARGS,
         s_ir_elicitation},
        {"test_input_required_result_sampling", "Asks the client's LLM a question through an input-required result",
         NO_ARGS, s_ir_sampling},
        {"test_input_required_result_list_roots", "Asks the client's roots through an input-required result", NO_ARGS,
         s_ir_roots},
        {"test_input_required_result_request_state", "Round-trips a sealed requestState", NO_ARGS, s_ir_request_state},
        {"test_input_required_result_multi_round", "Three rounds with an evolving requestState", NO_ARGS,
         s_ir_multi_round},
        {"test_input_required_result_multiple_inputs", "Three input requests at once", NO_ARGS, s_ir_multiple},
        {"test_input_required_result_tampered_state", "Refuses an altered requestState", NO_ARGS, s_ir_tampered},
        {"test_input_required_result_capabilities", "Asks only for what the client declared", NO_ARGS,
         s_ir_capabilities},
        {"test_streaming_elicitation", "Needs elicitation: answers input-required", NO_ARGS, s_streaming_elicitation},
        {"test_missing_capability", "Needs the client's sampling capability", NO_ARGS, s_missing_capability},
        {"test_logging_tool", "Emits log messages (only at the level the request asks for)", NO_ARGS,
         s_logging_tool},
        {"test_header_param", "Echoes a region that clients mirror into the Mcp-Param-Region header",
         "{\"type\":\"object\",\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}},"
         "\"required\":[\"region\"]}",
         s_greet},
        {"greet", "Says hello (never a task)",
         "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}", s_greet},
        {"slow_compute", "Sleeps `seconds` then answers (a task when the client takes tasks)",
         "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"number\"},\"label\":{\"type\":\"string\"}}}",
         s_slow_compute},
        {"failing_job", "Ends with a tool error (tasks only)", NO_ARGS, s_failing_job},
        {"protocol_error_job", "Ends with a protocol error", NO_ARGS, s_protocol_error_job},
        {"confirm_delete", "Asks for a confirmation, then answers", NO_ARGS, s_confirm_delete},
        {"multi_input", "Asks two questions at once", NO_ARGS, s_multi_input},
        {"test_tool_with_task", "Asks a name, then becomes a task", NO_ARGS, s_tool_with_task},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        mcp_tool_t t = {.name = tools[i].name, .description = tools[i].description, .input_schema = tools[i].schema,
                        .fn = tools[i].fn, .task_support = s_task_support(tools[i].name),
                        .task_self = strcmp(tools[i].name, "test_tool_with_task") == 0};
        mcp_server_add_tool(srv, &t);
    }
}

/* ------------------------------------------------------------ resources */

static void s_contents(mcp_call_t *call, const char *uri, const char *mime, const char *key, const char *value)
{
    json_object *item = json_object_new_object();
    json_object_object_add(item, "uri", json_object_new_string(uri));
    json_object_object_add(item, "mimeType", json_object_new_string(mime));
    json_object_object_add(item, key, json_object_new_string(value));
    json_object *arr = json_object_new_array();
    json_object_array_add(arr, item);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "contents", arr);
    mcp_call_reply(call, res);
}

static void s_static_text(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    s_contents(call, uri, "text/plain", "text", "This is the content of the static text resource.");
}

static void s_static_binary(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    s_contents(call, uri, "image/png", "blob", TEST_PNG);
}

static void s_watched(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    s_contents(call, uri, "text/plain", "text", "Watched resource content");
}

static void s_template(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    json_object *id = NULL;
    json_object_object_get_ex(vars, "id", &id);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_get(id));
    json_object_object_add(o, "templateTest", json_object_new_boolean(true));
    char *data = xasprintf("Data for ID: %s", id ? json_object_get_string(id) : "");
    json_object_object_add(o, "data", json_object_new_string(data));
    free(data);
    s_contents(call, uri, "application/json", "text", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
}

static void s_resources(mcp_server_t *srv)
{
    mcp_server_add_resource(srv, "test://static-text", "static-text", "Static Text Resource",
                            "A static text resource for testing", "text/plain", s_static_text, NULL);
    mcp_server_add_resource(srv, "test://static-binary", "static-binary", "Static Binary Resource",
                            "A static binary resource (image) for testing", "image/png", s_static_binary, NULL);
    mcp_server_add_resource(srv, "test://watched-resource", "watched-resource", "Watched Resource",
                            "A resource that can be subscribed to", "text/plain", s_watched, NULL);
    mcp_server_add_resource_template(srv, "test://template/{id}/data", "template", "Resource Template",
                                     "A resource template with parameter substitution", "application/json",
                                     s_template, NULL);
    mcp_server_enable_subscriptions(srv);
}

/* ------------------------------------------------------------ prompts, completion */

static void s_prompt_simple(mcp_call_t *call, json_object *args, void *ud)
{
    s_reply_json(call, "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","
                       "\"text\":\"This is a simple prompt for testing.\"}}]}");
}

static void s_prompt_args(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *a1 = NULL, *a2 = NULL;
    json_object_object_get_ex(args, "arg1", &a1);
    json_object_object_get_ex(args, "arg2", &a2);
    char *text = xasprintf("Prompt with arguments: arg1='%s', arg2='%s'", a1 ? json_object_get_string(a1) : "",
                           a2 ? json_object_get_string(a2) : "");
    json_object *res = s_parse("{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\"}}]}");
    json_object *msgs = NULL, *content = NULL;
    json_object_object_get_ex(res, "messages", &msgs);
    json_object_object_get_ex(json_object_array_get_idx(msgs, 0), "content", &content);
    json_object_object_add(content, "text", json_object_new_string(text));
    free(text);
    mcp_call_reply(call, res);
}

static void s_prompt_resource(mcp_call_t *call, json_object *args, void *ud)
{
    json_object *uri = NULL;
    json_object_object_get_ex(args, "resourceUri", &uri);
    json_object *res = s_parse("{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"resource\",\"resource\":"
                               "{\"mimeType\":\"text/plain\",\"text\":\"Embedded resource content for testing.\"}}},"
                               "{\"role\":\"user\",\"content\":{\"type\":\"text\","
                               "\"text\":\"Please process the embedded resource above.\"}}]}");
    json_object *msgs = NULL, *content = NULL, *resource = NULL;
    json_object_object_get_ex(res, "messages", &msgs);
    json_object_object_get_ex(json_object_array_get_idx(msgs, 0), "content", &content);
    json_object_object_get_ex(content, "resource", &resource);
    json_object_object_add(resource, "uri", json_object_new_string(uri ? json_object_get_string(uri) : ""));
    mcp_call_reply(call, res);
}

static void s_prompt_image(mcp_call_t *call, json_object *args, void *ud)
{
    s_reply_json(call, "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"image\",\"data\":\"" TEST_PNG
                       "\",\"mimeType\":\"image/png\"}},{\"role\":\"user\",\"content\":{\"type\":\"text\","
                       "\"text\":\"Please analyze the image above.\"}}]}");
}

/* Completes prompt arguments from a small vocabulary by prefix. */
static void s_complete(mcp_call_t *call, json_object *ref, const char *argument, const char *value,
                       json_object *context, void *ud)
{
    static const char *words[] = {"alpha", "apple", "beta", "banana", "gamma", "grape"};
    json_object *values = json_object_new_array();
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strncmp(words[i], value, strlen(value)) == 0)
            json_object_array_add(values, json_object_new_string(words[i]));
    json_object *c = json_object_new_object();
    json_object_object_add(c, "total", json_object_new_int((int)json_object_array_length(values)));
    json_object_object_add(c, "values", values);
    json_object_object_add(c, "hasMore", json_object_new_boolean(false));
    json_object *res = json_object_new_object();
    json_object_object_add(res, "completion", c);
    mcp_call_reply(call, res);
}

static void s_prompts(mcp_server_t *srv)
{
    mcp_server_add_prompt(srv, "test_simple_prompt", "Simple Test Prompt", "A simple prompt without arguments", NULL,
                          s_prompt_simple, NULL);
    mcp_server_add_prompt(srv, "test_prompt_with_arguments", "Prompt With Arguments", "A prompt with required arguments",
                          "[{\"name\":\"arg1\",\"description\":\"First test argument\",\"required\":true},"
                          "{\"name\":\"arg2\",\"description\":\"Second test argument\",\"required\":true}]",
                          s_prompt_args, NULL);
    mcp_server_add_prompt(srv, "test_prompt_with_embedded_resource", "Prompt With Embedded Resource",
                          "A prompt that includes an embedded resource",
                          "[{\"name\":\"resourceUri\",\"description\":\"URI of the resource to embed\",\"required\":true}]",
                          s_prompt_resource, NULL);
    mcp_server_add_prompt(srv, "test_prompt_with_image", "Prompt With Image", "A prompt that includes image content",
                          NULL, s_prompt_image, NULL);
    mcp_server_add_prompt(srv, "test_input_required_result_prompt", "Prompt Needing Input",
                          "A prompt that asks the user for context first", NULL, s_ir_prompt, NULL);
    mcp_server_set_completion(srv, s_complete, NULL);
}

/* ------------------------------------------------------------ main */

static void s_on_signal(void *ud, int signo)
{
    if (signo != SIGCHLD)
        loop_stop(s_loop);
}

int main(int argc, char **argv)
{
    int port = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: conformance_server [--port N]\n");
            return 2;
        }
    }
    sigs_t *sigs = sigs_new();
    if (!sigs || sodium_init() < 0)
        return 1;
    s_loop = loop_new();
    sigs_attach(sigs, s_loop, s_on_signal, NULL);
    mcp_server_t *srv = mcp_server_new("rat-py-conformance-server", "1.0.0", "Fixtures for the MCP conformance suite.");
    s_tools(srv);
    s_resources(srv);
    s_prompts(srv);
    transport_http_opts_t o = {.port = port};
    char err[512];
    transport_http_t *http = transport_http_new(s_loop, srv, &o, err, sizeof err);
    if (!http) {
        fprintf(stderr, "conformance_server: %s\n", err);
        return 1;
    }
    fprintf(stderr, "conformance_server: serving MCP at http://127.0.0.1:%d/mcp\n", transport_http_port(http));
    loop_run(s_loop);
    transport_http_destroy(&http);
    mcp_server_destroy(&srv);
    sigs_destroy(&sigs);
    loop_destroy(&s_loop);
    return 0;
}
