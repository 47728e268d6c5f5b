/* tool_elicit: asking the client for the answer to a kernel's input() through
 * MCP elicitation (elicitation/create), and reading what the client replies.
 *
 * The reply is client input, untrusted like any request: tool_elicit_reply is
 * the only code that reads it, so the fuzz harnesses drive exactly what
 * run drives (tests/fuzz/fuzz_mcp.c, fuzz_http.c). */
#ifndef RAT_TOOL_ELICIT_H
#define RAT_TOOL_ELICIT_H

#include <json-c/json.h>

#include "mcp.h"

typedef enum {
    TOOL_ELICIT_ACCEPT,   /* *value is the answer */
    TOOL_ELICIT_DECLINE,  /* the user declined or cancelled the form */
    TOOL_ELICIT_FAILED,   /* a JSON-RPC error; *why is its message (client text) */
    TOOL_ELICIT_INVALID,  /* the reply is not a valid ElicitResult; *why says how (static) */
} tool_elicit_kind_t;

/* The elicitation/create params for input() with prompt (may be NULL): one
 * string field "value". Caller owns it. Also what a 2026-07-28 request gets
 * inside its input-required result. */
json_object *tool_elicit_params(const char *prompt);

/* Sends elicitation/create for input() with prompt (may be NULL) on call's
 * stream, asking for one string field "value". fn/ud as for
 * mcp_call_request, which this returns the handle of. */
long tool_elicit_request(mcp_call_t *call, const char *prompt, mcp_response_fn *fn, void *ud);

/* Classifies a reply given to an mcp_response_fn (result and error as mcp
 * passes them, not both NULL). Sets *value (ACCEPT) and *why (FAILED,
 * INVALID), NULL otherwise; both are borrowed from result/error or static.
 * Nothing is assumed about the reply's shape beyond mcp_response_fn's
 * contract. */
tool_elicit_kind_t tool_elicit_reply(json_object *result, json_object *error, const char **value, const char **why);

/* The line a run's result ends with when the reply was not a plain
 * accept/decline (FAILED, INVALID), e.g. `the elicitation failed: "…"`
 * (client text is quoted and cut to 200 bytes at a character boundary);
 * NULL for ACCEPT and DECLINE. Caller owns it. */
char *tool_elicit_note(tool_elicit_kind_t kind, const char *why);

#endif
