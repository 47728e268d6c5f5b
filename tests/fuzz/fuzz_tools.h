/* fuzz_tools: the stand-in tool handlers the MCP-level harnesses (fuzz_mcp,
 * fuzz_http) share. rat-py's real tool schemas (the tools' own describe
 * functions) sit in front of handlers that touch no kernel: run's plain code
 * goes through the output module as kernel text would, look parses `at` with
 * lookpath; each harness adds its own run and ctl behaviour on top. */
#ifndef RAT_FUZZ_TOOLS_H
#define RAT_FUZZ_TOOLS_H

#include <json-c/json.h>

#include "buf.h"
#include "lookpath.h"
#include "mcp.h"
#include "mem.h"
#include "output.h"
#include "tools.h"

/* A string argument, or NULL when absent or not a string. */
static inline const char *fuzz_arg(json_object *args, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(args, key, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

/* Answers with code as the real run treats kernel text: cleaned, bounded,
 * rendered. */
static inline void fuzz_answer_output(mcp_call_t *call, const char *code)
{
    output_t *out = output_new(NULL);
    output_write(out, code, strlen(code), NULL);
    buf_t b;
    buf_init(&b, 0);
    output_render(out, &b);
    mcp_call_text(call, buf_str(&b), false);
    buf_free(&b);
    output_destroy(&out);
}

static inline void fuzz_look(mcp_call_t *call, json_object *args, void *ud)
{
    (void)ud;
    const char *at = fuzz_arg(args, "at");
    if (!at) {
        mcp_call_text(call, "No variables.", false);
        return;
    }
    char err[512];
    char *segs = lookpath_parse(at, err, sizeof err);
    if (!segs) {
        char *msg = xasprintf("look: %s", err);
        mcp_call_text(call, msg, true);
        free(msg);
        return;
    }
    mcp_call_text(call, segs, false);
    free(segs);
}

/* Registers run, look (fuzz_look) and ctl with rat-py's schemas. */
static inline void fuzz_add_tools(mcp_server_t *srv, mcp_tool_fn *run, mcp_tool_fn *ctl)
{
    static void (*const describe[3])(mcp_tool_t *) = {tool_run_describe, tool_look_describe, tool_ctl_describe};
    mcp_tool_fn *const fns[3] = {run, fuzz_look, ctl};
    for (int i = 0; i < 3; i++) {
        mcp_tool_t t;
        describe[i](&t);
        t.fn = fns[i];
        mcp_server_add_tool(srv, &t);
    }
}

#endif
