/* schema: the subset of JSON Schema that tool arguments use, applied to
 * arguments before a tool sees them.
 *
 * Supported: type (string, integer, number, boolean, object, array), enum,
 * required, properties, default, additionalProperties:false, minimum, maximum.
 * Null-valued arguments count as absent (mcp2py sends null for every omitted
 * parameter), and defaults are filled in, so handlers see complete input. */
#ifndef RAT_SCHEMA_H
#define RAT_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

/* Validates args (an object, or NULL for none) against an object schema.
 * On success returns 0 and sets *out to a new object (caller owns it) holding
 * the arguments with nulls removed and defaults filled in. On failure returns
 * -1 and writes a one-line explanation into err. What the schema advertises
 * is what is enforced (a client that validates with a JSON Schema library
 * accepts exactly the calls this accepts, nulls aside). */
int schema_apply(json_object *schema, json_object *args, json_object **out, char *err, size_t errlen);

#endif
