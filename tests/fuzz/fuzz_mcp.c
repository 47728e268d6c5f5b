/* fuzz_mcp: the MCP request path, as stdio drives it.
 *
 * The input is split into lines; each line goes to mcp_session_handle the way
 * transport_stdio hands it over, in front of rat-py's real tool schemas (the
 * tools' own describe functions). The handlers stand in for the kernel: run
 * cleans its code through the output module, look parses `at` with lookpath,
 * ctl echoes its op; code starting with "keep" keeps the call open (so
 * cancellation and session teardown are exercised) and "ask" sends run's own
 * elicitation request (tool_elicit_request), whose reply the input may give:
 * the reply goes through mcp's response dispatch and tool_elicit_reply, the
 * code run's input() handler reads client replies with. Checked for every message the
 * session sends: it is one valid JSON-RPC 2.0 message in valid UTF-8 on one
 * line, and each input line gets exactly the responses its kind calls for. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "fuzz_check.h"
#include "fuzz_tools.h"
#include "tool_elicit.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "mem.h"

#define KEEP_MAX 8

static int s_finals;                 /* responses sent for the current line */
static mcp_call_t *s_kept[KEEP_MAX]; /* calls left open by "keep" / "ask" */

static void s_send(void *transport, void *origin, const char *json, size_t len, mcp_msg_kind_t kind)
{
    bool final = kind == MCP_MSG_RESPONSE;
    FUZZ_ASSERT(strlen(json) == len);
    fuzz_check_jsonrpc(json, len, final ? FUZZ_MSG_RESPONSE : FUZZ_MSG_OTHER);
    if (final)
        s_finals++;
}

static void s_forget(mcp_call_t *call)
{
    for (int i = 0; i < KEEP_MAX; i++)
        if (s_kept[i] == call)
            s_kept[i] = NULL;
}

static bool s_keep(mcp_call_t *call);

static void s_on_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_forget(call);
}

/* The elicitation reply goes through what run uses: mcp's response
 * dispatch, then tool_elicit_reply, the only code that reads it, and
 * tool_elicit_note, which quotes what the client said back in the result. */
static void s_on_answer(void *ud, json_object *result, json_object *error)
{
    mcp_call_t *call = ud;
    if (!result && !error)
        return; /* abandoned: the call is being freed */
    /* mcp_response_fn's contract, which run's handler relies on. */
    FUZZ_ASSERT(result ? !error && json_object_is_type(result, json_type_object)
                       : json_object_is_type(error, json_type_object));
    const char *value = NULL, *why = NULL;
    tool_elicit_kind_t kind = tool_elicit_reply(result, error, &value, &why);
    FUZZ_ASSERT(kind == TOOL_ELICIT_ACCEPT ? value && !why : !value);
    FUZZ_ASSERT(kind == TOOL_ELICIT_DECLINE ? !why : kind == TOOL_ELICIT_ACCEPT || why);
    s_forget(call);
    mcp_call_on_cancel(call, NULL, NULL);
    char *note = tool_elicit_note(kind, why);
    FUZZ_ASSERT((note != NULL) == (kind == TOOL_ELICIT_FAILED || kind == TOOL_ELICIT_INVALID));
    mcp_call_text(call, value ? value : note ? note : "declined", kind != TOOL_ELICIT_ACCEPT);
    free(note);
}

static bool s_keep(mcp_call_t *call)
{
    for (int i = 0; i < KEEP_MAX; i++) {
        if (!s_kept[i]) {
            s_kept[i] = call;
            mcp_call_on_cancel(call, s_on_cancel, NULL);
            return true;
        }
    }
    return false;
}

static void s_run(mcp_call_t *call, json_object *args, void *ud)
{
    const char *code = fuzz_arg(args, "code");
    if (!code)
        code = fuzz_arg(args, "input");
    if (!code) {
        mcp_call_text(call, "run: nothing to do", true);
        return;
    }
    if (strncmp(code, "keep", 4) == 0 && s_keep(call)) {
        mcp_call_log(call, MCP_LOG_INFO, "stdout", code, strlen(code));
        mcp_call_progress(call, 1, -1, code);
        return;
    }
    if (strncmp(code, "ask", 3) == 0 && s_keep(call)) {
        tool_elicit_request(call, code, s_on_answer, call);
        return;
    }
    fuzz_answer_output(call, code);
}

static void s_ctl(mcp_call_t *call, json_object *args, void *ud)
{
    const char *op = fuzz_arg(args, "op");
    mcp_call_text(call, op ? op : "?", false);
}

static mcp_server_t *s_server(void)
{
    static mcp_server_t *srv;
    if (srv)
        return srv;
    srv = mcp_server_new("rat-py", "0.0.0-fuzz", tools_instructions());
    fuzz_add_tools(srv, s_run, s_ctl);
    return srv;
}

/* How many responses a line must produce, from its JSON-RPC class. */
static void s_handle_line(mcp_session_t *session, const char *line, size_t len)
{
    jsonrpc_msg_t m;
    jsonrpc_parse(line, len, &m);
    jsonrpc_kind_t kind = m.kind;
    jsonrpc_msg_free(&m);
    size_t calls_before = mcp_session_calls(session);
    s_finals = 0;
    mcp_session_handle(session, line, len, NULL);
    size_t calls_after = mcp_session_calls(session);
    switch (kind) {
    case JSONRPC_INVALID:
        FUZZ_ASSERT(s_finals == 1);
        break;
    case JSONRPC_REQUEST:
        /* Answered now, or kept open (then nothing was sent for it yet). */
        FUZZ_ASSERT(calls_after == calls_before + 1 ? s_finals == 0 : s_finals == 1);
        break;
    case JSONRPC_NOTIFICATION:
        FUZZ_ASSERT(s_finals == 0);
        break;
    case JSONRPC_RESPONSE:
        /* It may answer an elicitation, which finishes that call. */
        FUZZ_ASSERT(s_finals <= 1);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mcp_session_t *session = mcp_session_new(s_server(), s_send, NULL);
    const char *p = (const char *)data;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i < size && p[i] != '\n')
            continue;
        if (i > start)
            s_handle_line(session, p + start, i - start);
        start = i + 1;
    }
    /* Half of what is still open is answered, the rest goes with the session. */
    for (int i = 0; i < KEEP_MAX; i += 2) {
        mcp_call_t *call = s_kept[i];
        if (call) {
            s_kept[i] = NULL;
            mcp_call_on_cancel(call, NULL, NULL);
            mcp_call_text(call, "done", false);
        }
    }
    mcp_session_destroy(&session);
    for (int i = 0; i < KEEP_MAX; i++)
        FUZZ_ASSERT(s_kept[i] == NULL);
    return 0;
}
