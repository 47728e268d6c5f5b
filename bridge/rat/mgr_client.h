/* mgr_client: the `rat` manager's MCP client for a runtime's server
 * (Streamable HTTP at http://127.0.0.1:PORT/mcp), on libcurl (loaded at
 * run time, gw_dl). One session: initialize (protocol 2025-03-26, as
 * vscode-rat), then tool calls; a call's answer may be JSON or an SSE
 * stream whose notifications are handed to the caller as they come (live
 * output). A call can be interrupted: the caller's flag set (from a SIGINT
 * handler) makes the client send ctl {op: cancel} on a second request
 * while the first goes on, so the run ends the way it does for any client
 * and its result still arrives. Bounded: an answer of more than
 * MGR_CLIENT_MAX bytes, or an SSE event of more, ends the call with an
 * error. */
#ifndef RAT_MGR_CLIENT_H
#define RAT_MGR_CLIENT_H

#include <signal.h>
#include <stddef.h>
#include <json-c/json.h>

#define MGR_CLIENT_MAX (64u << 20)

typedef struct mgr_client mgr_client_t;
/* A notification on a call's stream: method and params (borrowed, for the
 * call's duration). */
typedef void (mgr_note_fn)(void *ud, const char *method, json_object *params);

/* Connects to the server on 127.0.0.1:port and opens a session as
 * client_name. timeout_ms bounds each step. NULL with err. */
mgr_client_t *mgr_client_new(long port, const char *client_name, int timeout_ms, char *err, size_t errlen);
/* Ends the session (DELETE) and frees. */
void mgr_client_destroy(mgr_client_t **self_p);
/* tools/call: the result object (caller owns), or NULL with err (transport
 * failure, JSON-RPC error, timeout). timeout_ms 0: none. on_note may be
 * NULL. interrupt may be NULL (see above). */
json_object *mgr_client_call(mgr_client_t *self, const char *tool, json_object *args, int timeout_ms,
                             mgr_note_fn *on_note, void *ud, volatile sig_atomic_t *interrupt, char *err,
                             size_t errlen);
/* The text items of a tool result joined by newlines (borrowed view into a
 * new string the caller owns). */
char *mgr_client_text(json_object *result);
/* For one HTTP header line of len bytes, not NUL-terminated (as curl hands
 * them over): 1 when it is a Content-Type naming text/event-stream, 0 for
 * another Content-Type, -1 for another header. */
int mgr_client_header_sse(const char *line, size_t len);
/* Whether a tool result says isError. */
int mgr_client_is_error(json_object *result);

#endif
