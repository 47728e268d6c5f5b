/* tools_op: an operation that outlives its cancelled call (see tools.h). */
#include "tools.h"

static void s_gone(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    tools_op_t *op = ud;
    op->call = NULL; /* the callback still comes; then tools_op_finish only frees */
    if (op->detached && op->detached(op))
        op->free(op);
}

void tools_op_start(tools_op_t *op, tools_ctx_t *ctx, mcp_call_t *call, tools_op_detached_fn *detached,
                    tools_op_free_fn *free_fn)
{
    op->ctx = ctx;
    op->call = call;
    op->detached = detached;
    op->free = free_fn;
    mcp_call_on_cancel(call, s_gone, op);
}

void tools_op_finish(tools_op_t *op, const char *text, bool is_error, json_object *structured)
{
    if (op->call) {
        mcp_call_on_cancel(op->call, NULL, NULL);
        mcp_call_text_structured(op->call, text, is_error, structured);
    }
    op->free(op);
}
