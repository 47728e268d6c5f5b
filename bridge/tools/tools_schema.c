/* tools_schema: each tool's outputSchema, composed from bridge/tools/schemas.json
 * at build time (cmake/schemas.cmake). */
#include "tools.h"

#include <string.h>

extern const char tools_schema_run[];
extern const char tools_schema_look[];
extern const char tools_schema_ctl[];

const char *tools_schema(const char *tool)
{
    if (strcmp(tool, "run") == 0)
        return tools_schema_run;
    if (strcmp(tool, "look") == 0)
        return tools_schema_look;
    if (strcmp(tool, "ctl") == 0)
        return tools_schema_ctl;
    return NULL;
}
