/* jsonrpc: JSON-RPC 2.0 framing only: classify one message, build replies.
 *
 * Knows json-c and the JSON-RPC rules (ids are strings or integers, never
 * null; no batches since MCP 2025-06-18), nothing about MCP methods. */
#ifndef RAT_JSONRPC_H
#define RAT_JSONRPC_H

#include <stddef.h>
#include <json-c/json.h>

#define JSONRPC_PARSE_ERROR      -32700
#define JSONRPC_INVALID_REQUEST  -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS   -32602
#define JSONRPC_INTERNAL_ERROR   -32603

/* Deepest JSON nesting accepted; deeper input is a parse error, not a crash. */
#define JSONRPC_MAX_DEPTH 64

typedef enum {
    JSONRPC_REQUEST,      /* method + id */
    JSONRPC_NOTIFICATION, /* method, no id */
    JSONRPC_RESPONSE,     /* result or error + id */
    JSONRPC_INVALID,      /* see err_code / err_msg; id set when it was readable */
} jsonrpc_kind_t;

typedef struct {
    jsonrpc_kind_t kind;
    json_object *root;    /* owned; NULL after a parse error */
    json_object *id;      /* borrowed from root; NULL when absent or unusable */
    const char *method;   /* borrowed from root */
    size_t method_len;    /* its length; above strlen(method) when it holds a NUL */
    json_object *params;  /* borrowed; NULL when absent */
    json_object *result;  /* borrowed (responses) */
    json_object *error;   /* borrowed (error responses) */
    int err_code;         /* JSONRPC_INVALID: the error to answer with */
    const char *err_msg;  /* JSONRPC_INVALID: static text */
} jsonrpc_msg_t;

/* Parses and classifies one message. Always fills *out; free with
 * jsonrpc_msg_free. */
void jsonrpc_parse(const char *data, size_t len, jsonrpc_msg_t *out);
void jsonrpc_msg_free(jsonrpc_msg_t *m);

/* Builders. Each returns one serialized message without a newline; caller
 * owns the string. `id` is borrowed (NULL means JSON null); `result`,
 * `params` and `data` are consumed. */
char *jsonrpc_result(json_object *id, json_object *result);
char *jsonrpc_error(json_object *id, int code, const char *message, json_object *data);
char *jsonrpc_notification(const char *method, json_object *params);
char *jsonrpc_request(json_object *id, const char *method, json_object *params);

/* Serializes compactly (no newlines, no escaped slashes) as valid UTF-8:
 * invalid bytes in strings become U+FFFD. Every builder above goes through
 * it, so every message rat-py sends is valid UTF-8. Caller owns it. */
char *jsonrpc_to_string(json_object *obj);

#endif
