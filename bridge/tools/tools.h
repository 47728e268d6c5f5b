/* tools: rat-py's MCP tools (run, ctl; look) over the runtime.
 *
 * The only modules that know both MCP (mcp.h) and Jupyter (runtime.h). Each
 * tool family lives in its own file; this header is what they share. */
#ifndef RAT_TOOLS_H
#define RAT_TOOLS_H

#include <stdint.h>

#include "loop.h"
#include "mcp.h"
#include "runtime.h"

#define TOOLS_DEFAULT_WAIT_S 25.0   /* below mcp2cli's 30 s client timeout */
#define TOOLS_MAX_CODE (4u << 20)   /* bytes of code in one run */

struct assets;

typedef struct {
    loop_t *loop;              /* borrowed */
    runtime_t *rt;             /* borrowed */
    struct assets *assets;     /* borrowed: the asset store */
    int64_t started_ms;
    struct tool_watch *watch;  /* owned: tool_watch_register .. tool_watch_destroy */
    struct tool_tail *tail;    /* owned, with watch: the recent activity (tool_tail.c) */
    struct workdir *workdir;   /* borrowed, may be NULL: where the kernel works (workdir.h) */
} tools_ctx_t;

void tool_run_register(mcp_server_t *srv, tools_ctx_t *ctx);
void tool_ctl_register(mcp_server_t *srv, tools_ctx_t *ctx);
void tool_look_register(mcp_server_t *srv, tools_ctx_t *ctx);
/* Watching every run from any session (doc/tools.md#watching): the
 * resources rat://status, rat://variables and rat://events (subscribable),
 * and rat/event notifications for sessions subscribed to rat://events.
 * tool_watch_destroy (safe on a ctx never registered) stops it; call it
 * after the transports are gone and before the runtime is destroyed. */
void tool_watch_register(mcp_server_t *srv, tools_ctx_t *ctx);
void tool_watch_destroy(tools_ctx_t *ctx);
/* The recent activity that vscode-rat's `tail` call reads (tool_tail.c):
 * tool_watch makes it, feeds it every run event (tool_tail_note) and
 * registers the unlisted tool `tail` over it. */
struct tool_tail *tool_tail_new(void);
void tool_tail_destroy(struct tool_tail **self_p);
void tool_tail_note(struct tool_tail *self, const runtime_ev_t *ev);
void tool_tail_register(mcp_server_t *srv, tools_ctx_t *ctx);
/* ctl status's structuredContent as seen by session (see tool_ctl.c). */
json_object *tool_ctl_status_json(tools_ctx_t *ctx, mcp_session_t *session);
/* look's overview structuredContent from the current snapshot. */
json_object *tool_look_overview_json(tools_ctx_t *ctx);
/* resources/list and resources/read over the asset store. */
void tool_assets_register(mcp_server_t *srv, tools_ctx_t *ctx);

/* What each tool advertises (name, title, description, input schema,
 * annotations), without a handler: fn and ud are NULL and the strings are
 * static. The register functions use these; so do the fuzz harnesses, which
 * need rat-py's real schemas in front of their own handlers. */
void tool_run_describe(mcp_tool_t *out);
void tool_ctl_describe(mcp_tool_t *out);
void tool_look_describe(mcp_tool_t *out);

/* An operation that outlives its cancelled call (look, ctl): the runtime
 * calls back later with the op as its ud, whatever the client did
 * meanwhile, so the op cannot be freed when the call goes (client cancel,
 * session end). It is detached instead (call = NULL) and that callback,
 * through tools_op_finish, only frees it; unless detached (may be NULL)
 * returns true: nothing will call back with the op any more, and it is
 * freed at once. Embed it as the first member of the tool's op. */
typedef struct tools_op tools_op_t;
typedef bool (tools_op_detached_fn)(tools_op_t *op);
typedef void (tools_op_free_fn)(tools_op_t *op);
struct tools_op {
    tools_ctx_t *ctx;                /* borrowed */
    mcp_call_t *call;                /* NULL once the call is gone */
    tools_op_detached_fn *detached;
    tools_op_free_fn *free;          /* frees the whole op */
};
void tools_op_start(tools_op_t *op, tools_ctx_t *ctx, mcp_call_t *call, tools_op_detached_fn *detached,
                    tools_op_free_fn *free_fn);
/* Answers the call (text, plus structuredContent when not NULL) if it is
 * still there, then frees op. */
void tools_op_finish(tools_op_t *op, const char *text, bool is_error, json_object *structured);

/* Follows ex on behalf of call until it finishes, asks for input, or wait_s
 * elapses, then finishes call with the standard run text. Used by run and
 * by ctl wait. The caller must have claimed ex. */
void tool_run_follow(tools_ctx_t *ctx, mcp_call_t *call, runtime_exec_t *ex, double wait_s);

/* The retry of a call (tool "run", or "ctl" for ctl wait) that ended with
 * an input-required result (2026-07-28): the call's verified requestState
 * names the run and which of its input() prompts was asked; the client's
 * elicitation result is inputResponses.input. The answer goes to that
 * prompt only, if it still waits, its run belongs to the call's session
 * (as with run(input=...)) and it is not a password prompt; then the call
 * follows the run for wait_s like run. Anything else ends the call with an
 * error result saying why (a missing answer: input-required again). Tool
 * names the tool in those errors. */
void tool_run_resume(tools_ctx_t *ctx, mcp_call_t *call, const char *tool, double wait_s);

/* The outputSchema of tool "run", "look" or "ctl" (bridge/tools/schemas.json
 * with its shared $defs; static text), or NULL for another name. */
const char *tools_schema(const char *tool);

/* A finished run's status word: ok, error or cancelled (run's schema). */
const char *tool_run_status_word(runtime_exec_t *ex);
/* Whether the session's client holds a run's call open until the run ends:
 * it never calls ctl wait, answers input() with run {input} on another
 * request while the run's call stays open, and polls ctl status for a first
 * text item `waiting_for_input`. Known by the clientInfo.name it sends;
 * vscode-rat ("rat-vscode") is the one. Other clients get the seed's texts
 * alone. */
bool tool_run_holds(mcp_session_t *s);

/* The lines of a run's output vscode-rat shows: its notebook keeps the
 * first rat.maxOutputLines (100 by default) of the text and replaces the
 * rest by "… N more lines", so its sessions get a text that fits, the
 * full-output line included (output_render_max). */
#define TOOL_VSCODE_MAX_LINES 100

/* vscode-rat's run result (tool_vscode.c). sc is a run_result made for a
 * session tool_run_holds names as vscode-rat's; it gets status = the
 * footer's first line (`✓ 3ms | 1 var`), error = one string (the output,
 * the traceback, the exception line last) when the run did not succeed,
 * and output = the run's output with each saved image as a
 * `__RAT_PLOT__:<file>` line where the image was. output is the run's
 * output text alone (no error part), footer the text result's footer. */
void tool_vscode_run_result(json_object *sc, struct assets *store, runtime_exec_t *ex, const char *output,
                            const char *footer);
/* The id of an asset item ({mime, id, ...} of outitems) that is a saved
 * image (borrowed), or NULL. */
const char *tool_vscode_image_id(json_object *asset);

/* The instructions string sent at initialize. */
const char *tools_instructions(void);

#endif
