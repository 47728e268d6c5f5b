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

#endif
