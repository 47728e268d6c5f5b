/* mcp_internal: the structures shared by the MCP layer's own files (mcp.c
 * and mcp_features.c). Nothing outside the MCP layer includes this. */
#ifndef RAT_MCP_INTERNAL_H
#define RAT_MCP_INTERNAL_H

#include <stdint.h>

#include "jsonrpc.h"
#include "mcp.h"

typedef struct {
    char *uri, *name, *title, *description, *mime;   /* owned (uri is a template for templates) */
    mcp_resource_fn *fn;
    void *ud;
} mcp_resource_entry_t;

typedef struct {
    char *name, *title, *description;  /* owned */
    json_object *arguments;            /* owned: [{name, description, required}] */
    mcp_prompt_fn *fn;
    void *ud;
} mcp_prompt_entry_t;

typedef struct {
    mcp_resource_entry_t *resources;   /* owned arrays */
    size_t nresources;
    mcp_resource_entry_t *templates;
    size_t ntemplates;
    mcp_resource_entry_t *ui;          /* MCP Apps' ui:// resources (mcp_server_add_ui_resource) */
    size_t nui;
    mcp_prompt_entry_t *prompts;
    size_t nprompts;
    mcp_resource_list_fn *provider_list; /* dynamic resources */
    mcp_resource_read_fn *provider_read;
    void *provider_ud;
    mcp_complete_fn *complete;
    void *complete_ud;
    bool subscriptions;
} mcp_features_t;

/* A task (tasks extension): a tools/call whose result is kept for
 * tasks/get. Owned by the session that created it; counted in its server's
 * task_count and task_bytes. */
typedef struct mcp_task {
    char id[33];                  /* 128 random bits, hex */
    const char *status;           /* static: working, input_required, completed, failed, cancelled */
    int64_t created_ms, updated_ms; /* wall clock */
    int64_t seen_ms;              /* wall clock: creation or the client's last tasks/get, update or cancel of it */
    size_t bytes;                 /* what it holds (args, result, error, inputRequests) as JSON */
    bool probing;                 /* its round is a check that the input it waits for still waits */
    const char *status_message;   /* static, or NULL: why it ended (statusMessage) */
    json_object *result;          /* owned: completed */
    json_object *error;           /* owned: failed */
    json_object *input_requests;  /* owned: still unanswered (input_required) */
    json_object *responses;       /* owned: answers gathered for the next round */
    char *state;                  /* owned: the handler's state for the next round, or NULL */
    char *tool;                   /* owned */
    json_object *args;            /* owned: the validated arguments, for each round */
    json_object *caps;            /* owned: the creating request's client capabilities */
    mcp_call_t *call;             /* borrowed: the round running now, or NULL */
    struct mcp_task *next;
} mcp_task_t;

typedef struct {
    mcp_tool_t tool;      /* strings owned */
    json_object *schema;  /* owned, parsed input_schema */
} mcp_tool_entry_t;

typedef struct {
    char *method;         /* owned */
    mcp_method_fn *fn;
    void *ud;
} mcp_method_entry_t;

typedef struct {
    char *method;         /* owned */
    mcp_notification_fn *fn;
    void *ud;
} mcp_notif_entry_t;

struct mcp_server {
    char *name, *version, *instructions;  /* owned */
    mcp_tool_entry_t *tools;              /* owned array */
    size_t ntools;
    mcp_method_entry_t *methods;          /* owned array */
    size_t nmethods;
    mcp_notif_entry_t *notifs;            /* owned array: mcp_server_on_notification */
    size_t nnotifs;
    mcp_features_t features;              /* resources, prompts, completion */
    mcp_session_t *sessions;              /* borrowed list of live sessions */
    unsigned char state_key[32];          /* seals requestState (random per process) */
    unsigned long next_serial;            /* sessions made so far */
    size_t task_count, task_bytes;        /* the tasks of all its sessions (mcp_tasks.c) */
    size_t task_max, task_max_bytes;      /* their bounds (mcp_server_set_task_limits) */
    int64_t (*task_clock)(void);          /* wall ms for tasks, or NULL: the real clock */
};

struct mcp_call {
    mcp_session_t *session;       /* borrowed: the session owns its calls */
    json_object *id;              /* owned reference */
    char *method;                 /* owned */
    char *tool;                   /* owned, tools/call only */
    void *origin;                 /* transport's stream for this request */
    bool origin_gone;             /* messages are dropped once the origin is gone */
    bool cancelled;               /* cancelled while no cancel fn: drop the response */
    json_object *progress_token;  /* owned reference or NULL */
    json_object *meta;            /* owned reference to params._meta (an object) or NULL */
    double last_progress;
    bool progress_sent;
    mcp_cancel_fn *cancel_fn;
    void *cancel_ud;
    bool modern;                  /* a 2026-07-28 request: results get resultType, ... */
    int log_level;                /* modern: _meta logLevel (mcp_log_level_t), -1: no logs */
    json_object *client_caps;     /* modern: owned _meta clientCapabilities */
    json_object *input_responses; /* modern: owned params.inputResponses, or NULL */
    char *request_state;          /* modern: owned verified requestState payload, or NULL */
    char *name;                   /* modern: owned params.name / params.uri (what requestState is bound to) */
    mcp_task_t *task;             /* borrowed: the task this call is a round of, or NULL */
    json_object *args;            /* modern tools/call: owned validated arguments */
    mcp_call_t *next;
};

typedef struct mcp_pending {
    long handle;
    int64_t id;                   /* JSON-RPC id we sent */
    mcp_call_t *call;             /* borrowed, may be NULL */
    mcp_response_fn *fn;
    void *ud;
    struct mcp_pending *next;
} mcp_pending_t;

struct mcp_session {
    mcp_server_t *server;         /* borrowed */
    mcp_send_fn *send;
    mcp_send_shared_fn *send_shared; /* or NULL */
    void *transport;
    bool initialized;             /* initialize answered */
    bool initialized_told;        /* notifications/initialized went to the server's handlers */
    unsigned long serial;         /* mcp_session_serial */
    char client_name[64];         /* clientInfo.name from initialize (cut), or "" */
    char protocol[32];
    json_object *client_caps;     /* owned */
    mcp_log_level_t log_level;
    mcp_call_t *calls;            /* owned list of in-flight calls */
    size_t ncalls;
    mcp_pending_t *pending;       /* owned list of server->client requests */
    int64_t next_request_id;
    bool input_closed;            /* the client can send nothing more */
    mcp_session_fn *idle_fn;      /* called when ncalls drops to 0 */
    void *idle_ud;
    long next_handle;
    char **subscriptions;         /* owned: resource URIs this client subscribed to */
    size_t nsubscriptions;
    bool stateless;               /* modern requests only (mcp_session_set_stateless) */
    bool modern_seen;             /* a modern request came before any initialize */
    mcp_reject_t reject;          /* see mcp_session_take_reject */
    mcp_task_t *tasks;            /* owned list, newest first */
    size_t ntasks;
    mcp_session_t *next_in_server;
};


/* mcp.c: the server and session pieces the dispatcher uses. */
#define MCP_LOG_LEVELS 8
extern const char *const mcp_log_levels[MCP_LOG_LEVELS]; /* by mcp_log_level_t */
mcp_method_entry_t *mcp_server_find_method(mcp_server_t *self, const char *method);
/* Calls the handlers of a client notification (mcp_server_on_notification). */
void mcp_server_notified(mcp_server_t *self, mcp_session_t *session, const char *method, json_object *params);
mcp_tool_entry_t *mcp_server_find_tool(mcp_server_t *self, const char *name);
/* A new tools/list result (the caller owns it), built for each request. */
json_object *mcp_server_tools_list(mcp_server_t *self, bool ui);
/* Whether client capabilities (object or NULL) declare MCP Apps: the
 * MCP_EXT_UI extension with MCP_UI_MIME among its mimeTypes. */
bool mcp_ui_declared(json_object *caps);
json_object *mcp_server_capabilities(mcp_server_t *self);
void mcp_call_free(mcp_call_t *call);
void mcp_session_send(mcp_session_t *self, void *origin, char *json, mcp_msg_kind_t kind);

/* mcp_dispatch.c */
json_object *mcp_error_object(int code, const char *message);
/* A modern result: a shallow copy of result (consumed) with resultType and,
 * for cacheable methods, ttlMs and cacheScope. */
json_object *mcp_modern_result(const char *method, json_object *result);
/* The reject class of an error code answering a modern request. */
mcp_reject_t mcp_modern_reject(int code);

/* mcp_state.c: requestState sealing (HMAC-SHA256, base64url). */
/* A token for payload, bound to method and name, expiring at expiry (unix s). */
char *mcp_state_seal(const mcp_server_t *srv, const char *method, const char *name, const char *payload, long expiry);
/* The payload of a valid, unexpired token for method and name, or NULL. */
char *mcp_state_open(const mcp_server_t *srv, const char *method, const char *name, const char *token, long now);

/* mcp_tasks.c: the tasks extension over the method table. */
void mcp_tasks_register(mcp_server_t *srv);
/* Whether the client capabilities (object or NULL) declare the extension. */
bool mcp_tasks_declared(json_object *caps);
/* The error data of -32021 for a client that did not declare the tasks
 * extension: {requiredCapabilities: {extensions: {<tasks>: {}}}} (new;
 * the caller owns it). */
json_object *mcp_tasks_missing_data(void);
/* Starts tools/call of tool as a task on session s: answers the request
 * (id, origin) with a CreateTaskResult. args borrowed. The call made for
 * each round gets caps (borrowed) as its client capabilities. */
void mcp_tasks_start(mcp_session_t *s, json_object *id, void *origin, mcp_tool_entry_t *tool, json_object *args,
                     json_object *caps);
/* A round's finishers: the result or error goes to the task. */
void mcp_tasks_settle(mcp_call_t *call, json_object *result, json_object *error);
/* The round asked for input: the task waits in input_required. */
void mcp_tasks_input(mcp_call_t *call, json_object *input_requests, const char *state);
json_object *mcp_server_tools_list_modern(mcp_server_t *self, bool ui);
void mcp_tasks_session_free(mcp_session_t *s);
/* Drops the session's tasks past their expiry (TASK_TTL_MS after creation or
 * after the client last asked about them), finished or not. An expired
 * task's round still running is ended as MCP_CANCEL_GONE only when
 * may_cancel: the caller is not inside a handler (whose objects the cancel
 * function may free); otherwise that task waits for a later sweep. */
void mcp_tasks_sweep(mcp_session_t *s, bool may_cancel);
/* The client can send nothing more (stdio EOF): no task result can be
 * fetched again, so every task is dropped and its round ended as
 * MCP_CANCEL_GONE. Not from inside a handler. */
void mcp_tasks_input_closed(mcp_session_t *s);
/* s_call_create for internal calls (mcp_dispatch.c). */
mcp_call_t *mcp_call_new_internal(mcp_session_t *self, const char *method, const char *tool, json_object *caps);

/* mcp_features.c: a client of the server's public method table. */
/* Registers the resources, prompts and completion methods over f (the
 * server's; f lives as long as srv). */
void mcp_features_register(mcp_server_t *srv, mcp_features_t *f);
void mcp_features_free(mcp_features_t *f);
void mcp_features_session_free(mcp_session_t *session);

#endif
