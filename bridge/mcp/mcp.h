/* mcp: the Model Context Protocol server, independent of transport and of
 * what the tools do.
 *
 * An mcp_server_t holds what is served (server info, instructions, tools,
 * extra method handlers). An mcp_session_t is one client connection: it
 * consumes JSON-RPC messages, answers the lifecycle and list methods, and
 * turns requests into mcp_call_t objects that handlers finish now or later.
 * Messages leave through the transport's send function together with the
 * "origin" the transport passed in with the request, so a transport can route
 * a response and the notifications of that request to the right stream.
 *
 * Knows nothing about Jupyter, stdio or HTTP. */
#ifndef RAT_MCP_H
#define RAT_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "rcbytes.h"

#define MCP_PROTOCOL_LATEST "2025-11-25"
/* The current ("modern") revision: no initialize, every request carries its
 * version and the client's capabilities in params._meta (doc/mcp.md). */
#define MCP_PROTOCOL_MODERN "2026-07-28"
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CLIENT_CAPS "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define MCP_ERR_RESOURCE_NOT_FOUND -32002
/* Errors the 2026-07-28 revision defines. */
#define MCP_ERR_HEADER_MISMATCH -32020
#define MCP_ERR_MISSING_CAPABILITY -32021
#define MCP_ERR_UNSUPPORTED_VERSION -32022

typedef struct mcp_server mcp_server_t;
typedef struct mcp_session mcp_session_t;
typedef struct mcp_call mcp_call_t;

typedef enum {
    MCP_LOG_DEBUG, MCP_LOG_INFO, MCP_LOG_NOTICE, MCP_LOG_WARNING,
    MCP_LOG_ERROR, MCP_LOG_CRITICAL, MCP_LOG_ALERT, MCP_LOG_EMERGENCY,
} mcp_log_level_t;

typedef enum {
    MCP_CANCEL_CLIENT,  /* notifications/cancelled: stop the work, no response */
    MCP_CANCEL_GONE,    /* the session ended; nobody will read a response */
} mcp_cancel_reason_t;

/* What an outgoing message is, so a transport never reads the JSON to know. */
typedef enum {
    MCP_MSG_NOTIFICATION, /* progress, log, list changes: a transport may drop it when the client does not read */
    MCP_MSG_REQUEST,      /* server -> client request (elicitation, ...): its answer is awaited */
    MCP_MSG_RESPONSE,     /* the result or error that ends the request it answers */
} mcp_msg_kind_t;

/* Transport hook: deliver one serialized message (no newline) to the client.
 * origin is what the transport passed to mcp_session_handle for the request
 * this message belongs to (NULL for messages tied to no request). A
 * MCP_MSG_RESPONSE ends that request. */
typedef void (mcp_send_fn)(void *transport, void *origin, const char *json, size_t len, mcp_msg_kind_t kind);
/* Optional transport hook for a notification tied to no request whose bytes
 * are shared with other sessions (mcp_session_notify_shared): msg is
 * borrowed for the call; a transport that keeps the bytes takes its own
 * reference (rcbytes_ref) instead of copying them. A transport without it
 * gets the same bytes through its mcp_send_fn (origin NULL). */
typedef void (mcp_send_shared_fn)(void *transport, rcbytes_t *msg);

/* Tool handler: args is the validated argument object with defaults filled in,
 * borrowed for the duration of the call only. The handler must eventually
 * finish the call (mcp_call_text / mcp_call_reply / mcp_call_error) unless
 * its cancel function runs first. */
typedef void (mcp_tool_fn)(mcp_call_t *call, json_object *args, void *ud);
/* Generic method handler (resources/read, prompts/get, ...); params may be NULL. */
typedef void (mcp_method_fn)(mcp_call_t *call, json_object *params, void *ud);
/* Called once when a call ends without a response; the call is freed right
 * after it returns, so drop every pointer to it. */
typedef void (mcp_cancel_fn)(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud);
/* Answer to a server->client request, called exactly once unless
 * mcp_call_abandon_request drops it first. Exactly one of three forms:
 * - result is a JSON object, error NULL: the client's result (its content
 *   is untrusted client input: check every field's type before use);
 * - result NULL, error a JSON-RPC error object ({code: int, message:
 *   string}): the client's error, or one mcp made because the reply was
 *   malformed (e.g. "result": null);
 * - both NULL: abandoned, because its call or session is ending.
 * Both are borrowed for the duration of the call. */
typedef void (mcp_response_fn)(void *ud, json_object *result, json_object *error);
/* Notified when a session finishes initialize (after the response is sent). */
typedef void (mcp_session_fn)(mcp_session_t *session, void *ud);
/* A notification from a client (mcp_server_on_notification): params is the
 * client's (borrowed for the call, may be NULL; untrusted: check every
 * field). Runs inside mcp_session_handle: it may send on the session
 * (requests, notifications) but must not destroy it. */
typedef void (mcp_notification_fn)(mcp_session_t *session, json_object *params, void *ud);

/* Reads a registered resource (uri: the requested URI; vars: the template
 * variables, or NULL for a static resource) and replies {contents: [...]}. */
typedef void (mcp_resource_fn)(mcp_call_t *call, const char *uri, json_object *vars, void *ud);
/* Dynamic resources: list appends {uri, name, ...} objects to arr; read
 * returns true when it handled (replied to) the URI. */
typedef void (mcp_resource_list_fn)(json_object *arr, void *ud);
typedef bool (mcp_resource_read_fn)(mcp_call_t *call, const char *uri, void *ud);
/* Builds a prompt from its (validated) arguments; replies {messages: [...]}. */
typedef void (mcp_prompt_fn)(mcp_call_t *call, json_object *args, void *ud);
/* completion/complete for a known ref; replies {completion: {values, ...}}. */
typedef void (mcp_complete_fn)(mcp_call_t *call, json_object *ref, const char *argument, const char *value,
                               json_object *context, void *ud);

/* Whether a tool runs as a task (the tasks extension, 2026-07-28): never,
 * when the client declares the extension, or only so (-32021 otherwise). */
typedef enum { MCP_TASK_NEVER = 0, MCP_TASK_OPTIONAL, MCP_TASK_REQUIRED } mcp_task_support_t;
#define MCP_EXT_TASKS "io.modelcontextprotocol/tasks"
/* MCP Apps (SEP-1865, stable 2026-01-26; doc/apps.md): a client that
 * declares capabilities.extensions[MCP_EXT_UI] = {mimeTypes: [MCP_UI_MIME]}
 * is told which ui:// resource renders a tool's results and can read it. */
#define MCP_EXT_UI "io.modelcontextprotocol/ui"
#define MCP_UI_MIME "text/html;profile=mcp-app"

typedef struct {
    const char *name;          /* tool name */
    const char *title;         /* optional display name */
    const char *description;   /* one or two sentences for a model */
    const char *input_schema;  /* JSON text of an object schema */
    /* JSON text of the object schema every non-error result's
     * structuredContent validates against (advertised as outputSchema), or
     * NULL for none. */
    const char *output_schema;
    bool read_only, destructive, idempotent; /* annotations */
    mcp_task_support_t task_support;         /* modern requests only */
    bool task_self;  /* the handler decides when the call becomes a task (mcp_call_become_task) */
    bool unlisted;   /* callable by name, never in tools/list (a client's compatibility call) */
    /* MCP Apps (mcp_server_set_tool_ui): the ui:// resource that renders
     * this tool's results, shown as _meta.ui.resourceUri only to a client
     * that declared the extension; NULL for none. */
    const char *ui_resource;
    /* Optional: a leniency the schema cannot say. Gets the client's
     * arguments (an object, borrowed) before they are checked and returns
     * a new reference to what is checked instead (args itself, or a copy
     * with what the client left out filled in). */
    json_object *(*prepare)(json_object *args);
    mcp_tool_fn *fn;
    void *ud;
} mcp_tool_t;

/* ---- server ---- */

/* name/version go to serverInfo; instructions may be NULL. Strings are copied. */
mcp_server_t *mcp_server_new(const char *name, const char *version, const char *instructions);
void mcp_server_destroy(mcp_server_t **self_p);
/* Registers a tool (copied). Aborts on an invalid schema: that is a bug. */
void mcp_server_add_tool(mcp_server_t *self, const mcp_tool_t *tool);
/* Handles an extra method: fn gets a call (finish it as a tool's) and the
 * params (borrowed, may be NULL). The resources, prompts and completion
 * methods (mcp_features.c) are registered this way. */
void mcp_server_add_method(mcp_server_t *self, const char *method, mcp_method_fn *fn, void *ud);
/* Calls fn for each notification named method from any legacy session
 * (those that began with initialize). "notifications/initialized" reaches
 * fn once per session, and only after its initialize was answered: the
 * moment the server may first send requests (e.g. roots/list).
 * "notifications/cancelled" is the MCP layer's own and never reaches fn. */
void mcp_server_on_notification(mcp_server_t *self, const char *method, mcp_notification_fn *fn, void *ud);
/* The tasks extension's bounds for the whole server: at most max_tasks
 * tasks and max_bytes of what they hold (arguments, results, as JSON);
 * defaults 256 and 32 MiB. now_ms is the wall clock in ms they are timed
 * by, NULL for the real one (tests move it). */
void mcp_server_set_task_limits(mcp_server_t *self, size_t max_tasks, size_t max_bytes, int64_t (*now_ms)(void));
/* Resources, templates (RFC 6570 level 1: {name} segments), prompts,
 * completion, subscriptions. Strings are copied. Registering any of them
 * declares the matching capability. */
void mcp_server_add_resource(mcp_server_t *self, const char *uri, const char *name, const char *title,
                             const char *description, const char *mime, mcp_resource_fn *fn, void *ud);
/* A ui:// resource (MCP Apps): listed and readable only by a client that
 * declared the extension; to any other it does not exist. Read with fn, as
 * mcp_server_add_resource's are. */
void mcp_server_add_ui_resource(mcp_server_t *self, const char *uri, const char *name, const char *title,
                                const char *description, const char *mime, mcp_resource_fn *fn, void *ud);
/* Names the ui:// resource (registered with mcp_server_add_ui_resource)
 * that renders tool `name`'s results; false when there is no such tool. */
bool mcp_server_set_tool_ui(mcp_server_t *self, const char *name, const char *resource_uri);
void mcp_server_add_resource_template(mcp_server_t *self, const char *uri_template, const char *name,
                                      const char *title, const char *description, const char *mime,
                                      mcp_resource_fn *fn, void *ud);
void mcp_server_set_resource_provider(mcp_server_t *self, mcp_resource_list_fn *list, mcp_resource_read_fn *read,
                                      void *ud);
/* args_json: a JSON array of {name, description, required} (NULL for none). */
void mcp_server_add_prompt(mcp_server_t *self, const char *name, const char *title, const char *description,
                           const char *args_json, mcp_prompt_fn *fn, void *ud);
void mcp_server_set_completion(mcp_server_t *self, mcp_complete_fn *fn, void *ud);
/* Accept resources/subscribe; then mcp_server_resource_updated notifies
 * every session subscribed to uri. */
void mcp_server_enable_subscriptions(mcp_server_t *self);
void mcp_server_resource_updated(mcp_server_t *self, const char *uri);
/* The parsed inputSchema of a registered tool (borrowed; NULL when there is
 * no such tool): an HTTP transport reads its x-mcp-header annotations. */
json_object *mcp_server_tool_schema(mcp_server_t *self, const char *name);
/* Calls fn for each session subscribed to uri (fn must not end sessions). */
void mcp_server_each_subscriber(mcp_server_t *self, const char *uri, mcp_session_fn *fn, void *ud);
/* Whether `version` is one of the legacy (initialize) versions we speak. */
bool mcp_protocol_supported(const char *version);
/* Whether `version` is a modern (per-request _meta) version we serve. */
bool mcp_protocol_modern(const char *version);

/* How the 2026-07-28 revision classifies the error that answered a modern
 * request at once, so that an HTTP transport can pick the status without
 * reading the JSON: a malformed request (missing _meta, unsupported version,
 * a capability the client did not declare) or a method that does not exist. */
typedef enum {
    MCP_REJECT_NONE,
    MCP_REJECT_BAD_REQUEST,  /* HTTP 400 */
    MCP_REJECT_NOT_FOUND,    /* HTTP 404 */
} mcp_reject_t;

/* ---- session ---- */

mcp_session_t *mcp_session_new(mcp_server_t *server, mcp_send_fn *send, void *transport);
/* Ends the session: in-flight calls get MCP_CANCEL_GONE, pending
 * server->client requests are abandoned. */
void mcp_session_destroy(mcp_session_t **self_p);
/* Marks a session as serving modern requests only (the HTTP transport's
 * sessionless requests): every request must carry the modern _meta, and
 * nothing is sent that is not tied to a request. Call before any message. */
void mcp_session_set_stateless(mcp_session_t *self);
/* The classification of the last error response this session sent for a
 * modern request, reset to MCP_REJECT_NONE by the call. */
mcp_reject_t mcp_session_take_reject(mcp_session_t *self);
/* Handles one incoming message (one line of stdio, one HTTP body). */
void mcp_session_handle(mcp_session_t *self, const char *data, size_t len, void *origin);
/* The transport says an origin (an HTTP stream) went away: its calls get
 * MCP_CANCEL_GONE (their work may continue; nobody reads the response), or,
 * without a cancel function, simply stop sending. */
void mcp_session_forget_origin(mcp_session_t *self, void *origin);
bool mcp_session_initialized(const mcp_session_t *self);
/* The clientInfo.name the client gave at initialize (at most 63 bytes), or "". */
const char *mcp_session_client_name(const mcp_session_t *self);
/* Whether the client declared a capability (e.g. "elicitation") at
 * initialize (legacy sessions; false on a modern-only session). */
bool mcp_session_client_has(const mcp_session_t *self, const char *capability);
/* Sends a notification not tied to any request. params consumed. */
void mcp_session_notify(mcp_session_t *self, const char *method, json_object *params);
/* Serializes a notification once (JSON-RPC, no newline) for
 * mcp_session_notify_shared to send to many sessions. params is borrowed
 * (may be NULL). The caller owns the result (rcbytes_unref). */
rcbytes_t *mcp_notification_bytes(const char *method, json_object *params);
/* Sends msg (borrowed; made by mcp_notification_bytes) as
 * mcp_session_notify would, through the transport's shared hook when it has
 * one, so that N sessions cost one serialization and no copies. */
void mcp_session_notify_shared(mcp_session_t *self, rcbytes_t *msg);
/* Declares the transport's shared hook (NULL: none, the default). */
void mcp_session_set_send_shared(mcp_session_t *self, mcp_send_shared_fn *fn);
/* Sends notifications/message if level passes the client's logging level. */
void mcp_session_log(mcp_session_t *self, mcp_log_level_t level, const char *logger, const char *text);
/* A number for this session, unique for the server's life (1, 2, ...):
 * what rat-py shows as "which session" and compares as a run's owner. */
unsigned long mcp_session_serial(const mcp_session_t *self);
/* Number of calls in flight. */
size_t mcp_session_calls(const mcp_session_t *self);
/* fn (NULL to clear) runs each time the number of calls in flight drops to
 * zero. It runs inside the finisher of the last call (mcp_call_text, a
 * cancel...), with callers up the stack still using the session: it must not
 * destroy the session; schedule that from the loop instead. */
void mcp_session_on_idle(mcp_session_t *self, mcp_session_fn *fn, void *ud);
/* The client will send nothing more (stdin reached EOF). Each pending
 * server->client request can never be answered: its response function runs
 * now with an error object. No task can be asked about again: each is
 * dropped, its round ended as MCP_CANCEL_GONE. Other calls in flight go on
 * and may still send. Afterwards mcp_session_can_request is false. Not from
 * inside a handler of this session. */
void mcp_session_input_closed(mcp_session_t *self);
/* Whether a server->client request can still be answered. */
bool mcp_session_can_request(const mcp_session_t *self);
/* A server->client request tied to no call (e.g. roots/list after
 * notifications/initialized): it goes out with no origin (stdio: stdout;
 * HTTP: the session's GET stream, kept until one opens). params consumed.
 * Returns a handle (> 0); fn gets the answer as for mcp_call_request, or
 * both NULL when the session ends first. Returns 0 when the session
 * cannot be asked (not initialized, modern-only, or its input closed):
 * fn is then never called. */
long mcp_session_request(mcp_session_t *self, const char *method, json_object *params, mcp_response_fn *fn,
                         void *ud);
/* Whether a call that came with this origin may still send its response
 * (false once it was answered, cancelled by the client or forgotten): a
 * transport ends the origin's stream when nothing more will come. */
bool mcp_session_origin_pending(const mcp_session_t *self, const void *origin);

/* ---- calls ---- */

mcp_session_t *mcp_call_session(const mcp_call_t *call);
void mcp_call_on_cancel(mcp_call_t *call, mcp_cancel_fn *fn, void *ud);
/* Whether the call runs as a task (tasks extension): its result is kept for
 * tasks/get instead of sent, so a handler should not end it early with a
 * "still running" answer; tasks/cancel arrives as MCP_CANCEL_CLIENT; a task
 * that expired, or whose client closed its input (stdio), ends its round as
 * MCP_CANCEL_GONE. A round that asked for input (mcp_call_input_required)
 * may be run again without inputResponses to check that the input still
 * waits: the handler asks again if so, and finishes otherwise. */
bool mcp_call_is_task(const mcp_call_t *call);
/* Turns a modern tools/call in progress into a task, when the request
 * declared the tasks extension and the tool supports tasks: the client gets
 * a CreateTaskResult now, and whatever finishes the call later goes to the
 * task. False otherwise: nothing changes, except when the server holds as
 * many tasks (or bytes of them) as it may, where the request was answered
 * with an error and whatever the call sends later is dropped. */
bool mcp_call_become_task(mcp_call_t *call);
/* Whether the request came in the modern revision (2026-07-28). */
bool mcp_call_modern(const mcp_call_t *call);
/* Whether the client declared a capability for this request: its _meta's
 * clientCapabilities (modern), or the session's (legacy). */
bool mcp_call_client_has(const mcp_call_t *call, const char *capability);
/* Finishers: each sends the response and frees the call. */
void mcp_call_reply(mcp_call_t *call, json_object *result);               /* consumed */
void mcp_call_error(mcp_call_t *call, int code, const char *message);
/* An error with a data member (consumed; may be NULL). */
void mcp_call_error_data(mcp_call_t *call, int code, const char *message, json_object *data);
/* Whether the client of this request declared MCP Apps: the extension with
 * MCP_UI_MIME among its mimeTypes. */
bool mcp_call_client_ui(const mcp_call_t *call);
/* The -32021 error (MissingRequiredClientCapability) naming one capability,
 * e.g. "sampling": error.data.requiredCapabilities = {capability: {}}. */
void mcp_call_error_capability(mcp_call_t *call, const char *capability);
void mcp_call_text(mcp_call_t *call, const char *text, bool is_error);   /* tool result */
/* A tool result with one text item plus structuredContent (borrowed). */
void mcp_call_text_structured(mcp_call_t *call, const char *text, bool is_error, json_object *structured);
/* notifications/message tied to this call, filtered by the client's level. */
void mcp_call_log(mcp_call_t *call, mcp_log_level_t level, const char *logger, const char *text, size_t len);
/* A notification on this call's stream (params consumed). */
void mcp_call_notify(mcp_call_t *call, const char *method, json_object *params);
/* Whether the request's params._meta has key set to true (an extension
 * flag a client opts into, e.g. "rat/ansi"). */
bool mcp_call_meta_true(const mcp_call_t *call, const char *key);
/* Whether the request carried _meta.progressToken. */
bool mcp_call_wants_progress(const mcp_call_t *call);
/* notifications/progress; progress must increase between calls (enforced:
 * a value not above the last one is bumped). total < 0 means none. */
void mcp_call_progress(mcp_call_t *call, double progress, double total, const char *message);
/* Server->client request tied to this call (e.g. elicitation/create). params
 * consumed. Returns a request handle (> 0) for mcp_call_abandon_request. */
long mcp_call_request(mcp_call_t *call, const char *method, json_object *params, mcp_response_fn *fn, void *ud);
/* ---- multi-round requests (2026-07-28 InputRequiredResult) ----
 * A modern request cannot be answered with a server->client request; the
 * server answers "input required" instead, and the client retries the same
 * request (a new id) with inputResponses and the requestState it was given. */

/* The inputResponses object the request carried (borrowed; NULL: none).
 * Untrusted client input: check every field. */
json_object *mcp_call_input_responses(const mcp_call_t *call);
/* The requestState the request carried, verified (NULL: none). A state that
 * fails verification (altered, expired, sealed for another method or name)
 * never reaches a handler: the request is refused with -32602. */
const char *mcp_call_request_state(const mcp_call_t *call);
/* Finishes a modern tools/call, prompts/get or resources/read with an
 * InputRequiredResult: input_requests (consumed, may be NULL) maps the
 * server's keys to {method, params}; state (may be NULL) is sealed into
 * requestState (HMAC-SHA256 with a key of this process, bound to the method
 * and name, valid MCP_STATE_TTL_S). At least one of the two is required. */
void mcp_call_input_required(mcp_call_t *call, json_object *input_requests, const char *state);
#define MCP_STATE_TTL_S 86400

/* Drops a pending server->client request without calling its function. */
void mcp_call_abandon_request(mcp_call_t *call, long handle);

#endif
