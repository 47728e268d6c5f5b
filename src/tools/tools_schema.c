/* tools_schema: each tool's outputSchema, from src/tools/schemas.json
 * (embedded at build time). */
#define LOG_MODULE "tools"
#include "tools.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mem.h"

extern const char tools_schemas_json[];
extern const size_t tools_schemas_json_len;

/* Built once, kept for the process's life (the strings are handed out as
 * static text, like the input schemas). */
static char *s_cache[3];
static const char *const s_names[3] = {"run", "look", "ctl"};

const char *tools_schema(const char *tool)
{
    int i = 0;
    while (i < 3 && strcmp(s_names[i], tool) != 0)
        i++;
    if (i == 3)
        return NULL;
    if (s_cache[i])
        return s_cache[i];
    json_object *all = json_tokener_parse(tools_schemas_json);
    json_object *defs = NULL, *one = NULL;
    if (!all || !json_object_object_get_ex(all, "$defs", &defs)) {
        log_error("schemas.json is not valid");
        abort();
    }
    /* run's schema is the run result itself, which ctl wait also returns. */
    if (i == 0 ? !json_object_object_get_ex(defs, "run_result", &one) : !json_object_object_get_ex(all, tool, &one)) {
        log_error("schemas.json has no schema for %s", tool);
        abort();
    }
    json_object *copy = NULL;
    json_object_deep_copy(one, &copy, NULL);
    json_object *dcopy = NULL;
    json_object_deep_copy(defs, &dcopy, NULL);
    json_object_object_add(copy, "$defs", dcopy);
    s_cache[i] = xstrdup(json_object_to_json_string_ext(copy, JSON_C_TO_STRING_PLAIN));
    json_object_put(copy);
    json_object_put(all);
    return s_cache[i];
}
