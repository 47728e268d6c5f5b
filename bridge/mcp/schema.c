/* schema: tool-argument validation (a small JSON Schema subset). */
#include "schema.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *s_type_of(json_object *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return "null";
    case json_type_boolean: return "boolean";
    case json_type_double: return "number";
    case json_type_int: return "integer";
    case json_type_object: return "object";
    case json_type_array: return "array";
    case json_type_string: return "string";
    }
    return "value";
}

static int s_type_matches(const char *want, json_object *v)
{
    json_type t = json_object_get_type(v);
    if (strcmp(want, "string") == 0)
        return t == json_type_string;
    if (strcmp(want, "boolean") == 0)
        return t == json_type_boolean;
    if (strcmp(want, "integer") == 0) {
        if (t == json_type_int)
            return 1;
        if (t == json_type_double) {
            double d = json_object_get_double(v);
            return isfinite(d) && d == floor(d) && fabs(d) < 9.0e15;
        }
        return 0;
    }
    if (strcmp(want, "number") == 0)
        return t == json_type_int || t == json_type_double;
    if (strcmp(want, "object") == 0)
        return t == json_type_object;
    if (strcmp(want, "array") == 0)
        return t == json_type_array;
    return 1;
}

static int s_check_value(const char *name, json_object *prop, json_object *v, char *err, size_t errlen)
{
    json_object *type = NULL, *en = NULL, *lim = NULL;
    if (json_object_object_get_ex(prop, "type", &type) && json_object_is_type(type, json_type_string)) {
        const char *want = json_object_get_string(type);
        if (!s_type_matches(want, v)) {
            snprintf(err, errlen, "argument '%s' must be a%s %s, not %s", name,
                     (want[0] == 'a' || want[0] == 'i' || want[0] == 'o') ? "n" : "", want, s_type_of(v));
            return -1;
        }
    }
    if (json_object_is_type(v, json_type_string) &&
        strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
        /* Handlers see C strings: the text after a NUL would be silently
         * dropped (code would run cut short), so refuse it. */
        snprintf(err, errlen, "argument '%s' must not contain NUL characters", name);
        return -1;
    }
    if (json_object_object_get_ex(prop, "enum", &en) && json_object_is_type(en, json_type_array)) {
        size_t n = json_object_array_length(en);
        char list[256] = "";
        size_t used = 0;
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(en, i);
            if (json_object_equal(e, v))
                return 0;
            int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", json_object_get_string(e));
            if (w > 0 && (size_t)w < sizeof list - used)
                used += (size_t)w;
        }
        snprintf(err, errlen, "argument '%s' is '%s'; valid values: %s", name, json_object_get_string(v), list);
        return -1;
    }
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (!isfinite(d)) {
            snprintf(err, errlen, "argument '%s' must be a finite number", name);
            return -1;
        }
        if (json_object_object_get_ex(prop, "minimum", &lim) && d < json_object_get_double(lim)) {
            snprintf(err, errlen, "argument '%s' must be at least %g", name, json_object_get_double(lim));
            return -1;
        }
        if (json_object_object_get_ex(prop, "maximum", &lim) && d > json_object_get_double(lim)) {
            snprintf(err, errlen, "argument '%s' must be at most %g", name, json_object_get_double(lim));
            return -1;
        }
    }
    return 0;
}

int schema_apply(json_object *schema, json_object *args, json_object **out, char *err, size_t errlen)
{
    *out = NULL;
    if (args && !json_object_is_type(args, json_type_object)) {
        snprintf(err, errlen, "arguments must be an object, not %s", s_type_of(args));
        return -1;
    }
    json_object *props = NULL, *required = NULL, *addl = NULL;
    json_object_object_get_ex(schema, "properties", &props);
    json_object_object_get_ex(schema, "required", &required);
    int closed = json_object_object_get_ex(schema, "additionalProperties", &addl) &&
                 json_object_is_type(addl, json_type_boolean) && !json_object_get_boolean(addl);
    json_object *res = json_object_new_object();
    if (args) {
        json_object_object_foreach(args, key, val) {
            if (!val || json_object_is_type(val, json_type_null))
                continue; /* null means "not given" */
            json_object *prop = NULL;
            if (!props || !json_object_object_get_ex(props, key, &prop)) {
                if (closed) {
                    char names[256] = "";
                    size_t used = 0;
                    if (props) {
                        json_object_object_foreach(props, pk, pv) {
                            (void)pv;
                            int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", pk);
                            if (w > 0 && (size_t)w < sizeof names - used)
                                used += (size_t)w;
                        }
                    }
                    snprintf(err, errlen, "unknown argument '%.64s' (valid: %s)", key, names);
                    json_object_put(res);
                    return -1;
                }
                json_object_object_add(res, key, json_object_get(val));
                continue;
            }
            if (s_check_value(key, prop, val, err, errlen) < 0) {
                json_object_put(res);
                return -1;
            }
            json_object_object_add(res, key, json_object_get(val));
        }
    }
    if (required && json_object_is_type(required, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(required); i++) {
            const char *name = json_object_get_string(json_object_array_get_idx(required, i));
            if (name && !json_object_object_get_ex(res, name, NULL)) {
                snprintf(err, errlen, "missing required argument '%s'", name);
                json_object_put(res);
                return -1;
            }
        }
    }
    if (props) {
        json_object_object_foreach(props, key, prop) {
            json_object *def = NULL;
            if (!json_object_object_get_ex(res, key, NULL) && json_object_object_get_ex(prop, "default", &def))
                json_object_object_add(res, key, json_object_get(def));
        }
    }
    *out = res;
    return 0;
}
