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
    mcp_prompt_entry_t *prompts;
    size_t nprompts;
    mcp_resource_list_fn *provider_list; /* dynamic resources */
    mcp_resource_read_fn *provider_read;
    void *provider_ud;
    mcp_complete_fn *complete;
    void *complete_ud;
    bool subscriptions;
} mcp_features_t;

typedef struct {
    mcp_tool_t tool;      /* strings owned */
    json_object *schema;  /* owned, parsed input_schema */
    json_object *output;  /* owned, parsed output_schema, or NULL */
} mcp_tool_entry_t;

typedef struct {
    char *method;         /* owned */
    mcp_method_fn *fn;
    void *ud;
} mcp_method_entry_t;

struct mcp_server {
    char *name, *version, *instructions;  /* owned */
    mcp_tool_entry_t *tools;              /* owned array */
    size_t ntools;
    mcp_method_entry_t *methods;          /* owned array */
    size_t nmethods;
    json_object *tools_list;              /* owned cache of the tools/list result */
    mcp_features_t features;              /* resources, prompts, completion */
    mcp_session_t *sessions;              /* borrowed list of live sessions */
    unsigned long next_serial;            /* sessions made so far */
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
    double last_progress;
    bool progress_sent;
    mcp_cancel_fn *cancel_fn;
    void *cancel_ud;
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
    void *transport;
    bool initialized;             /* initialize answered */
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
    mcp_session_t *next_in_server;
};


/* mcp.c: the server and session pieces the dispatcher uses. */
#define MCP_LOG_LEVELS 8
extern const char *const mcp_log_levels[MCP_LOG_LEVELS]; /* by mcp_log_level_t */
mcp_method_entry_t *mcp_server_find_method(mcp_server_t *self, const char *method);
mcp_tool_entry_t *mcp_server_find_tool(mcp_server_t *self, const char *name);
json_object *mcp_server_tools_list(mcp_server_t *self);
json_object *mcp_server_capabilities(mcp_server_t *self);
void mcp_call_free(mcp_call_t *call);
void mcp_session_send(mcp_session_t *self, void *origin, char *json, mcp_msg_kind_t kind);

/* mcp_dispatch.c */
json_object *mcp_error_object(int code, const char *message);

/* mcp_features.c: a client of the server's public method table. */
/* Registers the resources, prompts and completion methods over f (the
 * server's; f lives as long as srv). */
void mcp_features_register(mcp_server_t *srv, mcp_features_t *f);
void mcp_features_free(mcp_features_t *f);
void mcp_features_session_free(mcp_session_t *session);

#endif
