/* fuzz_check: the invariants the fuzz harnesses assert, shared by all of
 * them. A failed check prints what broke and aborts, which libFuzzer (and the
 * corpus replay in the normal build) reports as a crash with the input. */
#ifndef RAT_FUZZ_CHECK_H
#define RAT_FUZZ_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "utf8.h"

#define FUZZ_ASSERT(cond)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* Whether s[0..n) is entirely valid UTF-8 (shortest forms, no surrogates). */
static inline bool fuzz_utf8_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t c = utf8_valid_char(s + i, n - i);
        if (!c)
            return false;
        i += c;
    }
    return true;
}

/* Parses s[0..n) as one strict JSON value (UTF-8 validated, nothing after
 * it). Returns NULL when it is not. Caller owns the result. */
static inline json_object *fuzz_parse_json(const char *s, size_t n)
{
    json_tokener *tok = json_tokener_new_ex(256);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    json_object *o = json_tokener_parse_ex(tok, s, (int)n);
    bool ok = o && json_tokener_get_error(tok) == json_tokener_success &&
              (size_t)json_tokener_get_parse_end(tok) == n;
    json_tokener_free(tok);
    if (!ok) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

/* What a message sent to the client is expected to be. */
typedef enum {
    FUZZ_MSG_RESPONSE, /* the response that ends a request */
    FUZZ_MSG_OTHER,    /* a notification or a server->client request */
    FUZZ_MSG_ANY,      /* either; the caller learns which from the result */
} fuzz_msg_t;

/* Asserts that json[0..len) is one JSON-RPC 2.0 message in strict UTF-8, on
 * one line, with no NUL: a response has an id (null only for an error) and
 * exactly one of result and error (an error with an integer code and a string
 * message); anything else has a string method, no result or error, and at
 * most an integer id. Returns whether it is a response. */
static inline bool fuzz_check_jsonrpc(const char *json, size_t len, fuzz_msg_t want)
{
    FUZZ_ASSERT(len > 0 && !memchr(json, '\0', len));
    FUZZ_ASSERT(!memchr(json, '\n', len) && !memchr(json, '\r', len));
    FUZZ_ASSERT(fuzz_utf8_ok(json, len));
    json_object *m = fuzz_parse_json(json, len);
    FUZZ_ASSERT(m && json_object_is_type(m, json_type_object));
    json_object *v = NULL, *id = NULL, *method = NULL, *err = NULL;
    FUZZ_ASSERT(json_object_object_get_ex(m, "jsonrpc", &v) && json_object_is_type(v, json_type_string) &&
                strcmp(json_object_get_string(v), "2.0") == 0);
    bool has_id = json_object_object_get_ex(m, "id", &id);
    bool has_method = json_object_object_get_ex(m, "method", &method);
    bool has_result = json_object_object_get_ex(m, "result", NULL);
    bool has_error = json_object_object_get_ex(m, "error", &err);
    bool response = !has_method;
    FUZZ_ASSERT(want == FUZZ_MSG_ANY || response == (want == FUZZ_MSG_RESPONSE));
    if (response) {
        FUZZ_ASSERT(has_id && has_result != has_error);
        FUZZ_ASSERT(id == NULL ? has_error
                               : json_object_is_type(id, json_type_int) || json_object_is_type(id, json_type_string));
        if (has_error) {
            json_object *code = NULL, *msg = NULL;
            FUZZ_ASSERT(json_object_object_get_ex(err, "code", &code) && json_object_is_type(code, json_type_int));
            FUZZ_ASSERT(json_object_object_get_ex(err, "message", &msg) && json_object_is_type(msg, json_type_string));
        }
    } else {
        FUZZ_ASSERT(json_object_is_type(method, json_type_string) && !has_result && !has_error);
        FUZZ_ASSERT(!has_id || json_object_is_type(id, json_type_int));
    }
    json_object_put(m);
    return response;
}

#endif
