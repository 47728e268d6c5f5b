/* tool_ctl: the `ctl` tool: reset, cancel, restart, status, wait. */
#define LOG_MODULE "ctl"
#include "tools.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "assets.h"
#include "buf.h"
#include "log.h"
#include "mem.h"
#include "textfmt.h"

#define CANCEL_GIVE_UP_MS 5000

static const char s_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"op\":{\"type\":\"string\",\"enum\":[\"reset\",\"cancel\",\"restart\",\"status\",\"wait\"],"
    "\"description\":\"reset: clear variables; cancel: interrupt the running code; restart: fresh interpreter; "
    "status: kernel state; wait: follow a run that returned before it finished.\"},"
    "\"scope\":{\"type\":\"string\",\"enum\":[\"namespace\",\"all\"],\"default\":\"namespace\",\"description\":"
    "\"For reset: namespace (variables) or all (also history, the exec counter and saved outputs).\"}},"
    "\"required\":[\"op\"],\"additionalProperties\":false}";

typedef struct {
    tools_op_t base;         /* first: the runtime calls back with the op */
    bool all;
    bool cancel;             /* a cancel: the runtime may hold op as a verdict's ud */
    long exec_number;        /* cancel: the run being interrupted */
    uint64_t timer;
} s_op_t;

/* The call went. A reset or restart still calls back with the op; a
 * cancel's verdict would go nowhere: forget it, and free the op now. */
static bool s_op_detached(tools_op_t *base)
{
    s_op_t *op = (s_op_t *)base;
    if (!op->cancel)
        return false;
    runtime_cancel_forget(op->base.ctx->rt, op);
    return true;
}

static void s_op_free(tools_op_t *base)
{
    s_op_t *op = (s_op_t *)base;
    loop_timer_cancel(op->base.ctx->loop, op->timer);
    free(op);
}

static s_op_t *s_op_new(tools_ctx_t *ctx, mcp_call_t *call)
{
    s_op_t *op = xcalloc(1, sizeof *op);
    tools_op_start(&op->base, ctx, call, s_op_detached, s_op_free);
    return op;
}

static void s_op_finish(s_op_t *op, const char *text, bool is_error)
{
    tools_op_finish(&op->base, text, is_error, NULL);
}

static void s_reset_done(void *ud, bool ok, const char *text)
{
    s_op_t *op = ud;
    if (!ok) {
        s_op_finish(op, text, true);
        return;
    }
    if (op->all && op->base.ctx->assets)
        assets_clear(op->base.ctx->assets);
    buf_t b;
    buf_init(&b, 0);
    buf_printf(&b, "RESET | %s | ", op->all ? "namespace, history and saved outputs cleared" : "namespace cleared");
    textfmt_count(&b, strtol(text, NULL, 10), "var", "vars");
    s_op_finish(op, buf_str(&b), false);
    buf_free(&b);
}

static void s_restart_done(void *ud, bool ok, const char *text)
{
    s_op_t *op = ud;
    if (!ok) {
        char *msg = xasprintf("restart failed: %s", text);
        s_op_finish(op, msg, true);
        free(msg);
        return;
    }
    s_op_finish(op, "RESTARTED | interpreter reinitialized | 0 vars", false);
}

/* The cancelled run ended: say what the cancel really did. */
static void s_cancel_verdict(void *ud, runtime_exec_t *ex, runtime_cancel_verdict_t v)
{
    s_op_t *op = ud;
    long n = runtime_exec_number(ex) ? runtime_exec_number(ex) : op->exec_number;
    char text[400];
    bool is_error = false;
    switch (v) {
    case RUNTIME_CANCEL_INTERRUPTED:
        snprintf(text, sizeof text, "CANCELLED exec #%ld", n);
        break;
    case RUNTIME_CANCEL_DROPPED:
        snprintf(text, sizeof text, "CANCELLED before it started");
        break;
    case RUNTIME_CANCEL_LOST:
        snprintf(text, sizeof text, "CANCELLED exec #%ld: lost by the kernel after an interrupt (it never "
                                    "finished it; the queue moves on)", n);
        break;
    case RUNTIME_CANCEL_ENDED:
        snprintf(text, sizeof text, "NOT CANCELLED: exec #%ld ended on its own (%s): it finished before the interrupt arrived, or caught it; "
                                    "ctl(op=\"wait\") or its run call has its result",
                 n, runtime_exec_outcome(ex) == RUNTIME_OK ? "✓" : "✗");
        break;
    case RUNTIME_CANCEL_FAILED:
    default:
        snprintf(text, sizeof text, "exec #%ld ended: %s", n,
                 runtime_exec_why(ex) ? runtime_exec_why(ex) : "the kernel stopped");
        is_error = true;
        break;
    }
    op->cancel = false;
    s_op_finish(op, text, is_error);
}

/* The run did not end within CANCEL_GIVE_UP_MS of the interrupt. */
static void s_cancel_give_up(loop_t *loop, void *ud)
{
    s_op_t *op = ud;
    op->timer = 0;
    runtime_cancel_forget(op->base.ctx->rt, op);
    op->cancel = false;
    runtime_status_t st;
    runtime_status(op->base.ctx->rt, &st);
    if (st.running && runtime_exec_number(st.running))
        op->exec_number = runtime_exec_number(st.running);
    char text[400];
    if (!st.heartbeat_ok)
        snprintf(text, sizeof text,
                 "exec #%ld could not be stopped: the kernel process does not respond (no heartbeat: stopped, or "
                 "blocked outside Python); ctl(op=\"restart\") ends it, losing the variables",
                 op->exec_number);
    else
        snprintf(text, sizeof text,
                 "exec #%ld did not stop within %d s of the interrupt (code that ignores KeyboardInterrupt, or a "
                 "long call in C); ctl(op=\"restart\") ends it, losing the variables",
                 op->exec_number, CANCEL_GIVE_UP_MS / 1000);
    s_op_finish(op, text, true);
}

static void s_status(tools_ctx_t *ctx, buf_t *b)
{
    runtime_status_t st;
    runtime_status(ctx->rt, &st);
    buf_printf(b, "%s %s | exec #%ld | rev %lu | up %llds", st.language ? st.language : "kernel", st.state,
               st.exec_count, st.rev, (long long)(st.up_ms / 1000));
    if (st.running) {
        buf_printf(b, " | running exec #%ld %llds", runtime_exec_number(st.running),
                   (long long)(runtime_exec_elapsed_ms(st.running) / 1000));
        /* What makes a stuck run visible: the kernel never took it, or an
         * interrupt has not ended it. */
        if (!runtime_exec_acknowledged(st.running))
            buf_printf(b, " (sent %llds ago, not acknowledged by the kernel)",
                       (long long)(runtime_exec_age_ms(st.running) / 1000));
        if (runtime_exec_interrupted_ms(st.running) >= 0)
            buf_printf(b, " (interrupted %llds ago)", (long long)(runtime_exec_interrupted_ms(st.running) / 1000));
    }
    if (st.queued)
        buf_printf(b, " | %zu queued", st.queued);
    if (st.reset_ms >= 0)
        buf_printf(b, " | reset pending %llds", (long long)(st.reset_ms / 1000));
    buf_puts(b, "\n\n");
    if (st.attached)
        buf_printf(b, "kernel: attached via %s", st.connection_file ? st.connection_file : "?");
    else
        buf_printf(b, "kernel: %s", st.kernel_name ? st.kernel_name : "python (ipykernel)");
    if (st.display_name)
        buf_printf(b, " (%s)", st.display_name);
    if (st.pid)
        buf_printf(b, ", pid %ld", (long)st.pid);
    if (st.boot_ms)
        buf_printf(b, ", ready in %lldms", (long long)st.boot_ms);
    if (st.interpreter)
        buf_printf(b, "\ninterpreter: %s", st.interpreter);
    if (st.env_note)
        buf_printf(b, "\nenvironment: %s", st.env_note);
    if (st.vars >= 0) {
        buf_puts(b, "\nvariables: ");
        buf_printf(b, "%ld", st.vars);
    }
    if (!st.heartbeat_ok && st.state && strcmp(st.state, "dead") != 0)
        buf_puts(b, "\nheartbeat: no reply for 3 s — the kernel process is unresponsive "
                    "(stopped, or blocked outside Python); ctl cancel or ctl restart");
    if (st.spare) {
        buf_printf(b, "\nspare kernel: %s", st.spare);
        if (st.spare_pid)
            buf_printf(b, ", pid %ld", (long)st.spare_pid);
    }
    if (st.restarts)
        buf_printf(b, "\nautomatic restarts: %u", st.restarts);
    if (st.last_death)
        buf_printf(b, "\nlast failure: %s", st.last_death);
    if (st.wire.dropped)
        buf_printf(b, "\nrejected kernel messages: %lu (bad signature %lu, replayed %lu)", st.wire.dropped,
                   st.wire.bad_sig, st.wire.replayed);
    if (st.connection_file && !st.attached)
        buf_printf(b, "\nconnection file: %s", st.connection_file);
    if (st.log_path)
        buf_printf(b, "\nkernel log: %s", st.log_path);
}

static void s_ctl(mcp_call_t *call, json_object *args, void *ud)
{
    tools_ctx_t *ctx = ud;
    json_object *v = NULL;
    const char *op = json_object_object_get_ex(args, "op", &v) ? json_object_get_string(v) : "";
    const char *scope = json_object_object_get_ex(args, "scope", &v) ? json_object_get_string(v) : "namespace";
    if (strcmp(op, "status") == 0) {
        buf_t b;
        buf_init(&b, 0);
        s_status(ctx, &b);
        mcp_call_text(call, buf_str(&b), false);
        buf_free(&b);
    } else if (strcmp(op, "reset") == 0) {
        s_op_t *o = s_op_new(ctx, call);
        o->all = strcmp(scope, "all") == 0;
        runtime_reset(ctx->rt, o->all, s_reset_done, o);
    } else if (strcmp(op, "restart") == 0) {
        s_op_t *o = s_op_new(ctx, call);
        runtime_restart(ctx->rt, s_restart_done, o);
    } else if (strcmp(op, "cancel") == 0) {
        /* The running run, or (while the kernel starts) the next queued
         * one, which is dropped, never interrupted. */
        runtime_exec_t *cur = runtime_current(ctx->rt);
        if (!cur)
            cur = runtime_first_queued(ctx->rt);
        if (!cur) {
            mcp_call_text(call, "No active execution.", false);
            return;
        }
        s_op_t *o = s_op_new(ctx, call);
        o->cancel = true;
        o->exec_number = runtime_exec_number(cur);
        o->timer = loop_timer(ctx->loop, CANCEL_GIVE_UP_MS, s_cancel_give_up, o);
        /* The verdict may come (and free o) before this returns. */
        if (runtime_cancel_run(ctx->rt, cur, s_cancel_verdict, o) < 0) {
            o->cancel = false;
            s_op_finish(o, "the running code cannot be interrupted (the kernel is not reachable); "
                           "ctl(op=\"restart\") ends it", true);
        }
    } else if (strcmp(op, "wait") == 0) {
        runtime_exec_t *ex = runtime_detached(ctx->rt, (uintptr_t)mcp_call_session(call));
        if (!ex) {
            runtime_exec_t *cur = runtime_current(ctx->rt);
            if (cur && runtime_exec_state(cur) == RUNTIME_EXEC_INPUT && runtime_exec_owner(cur) &&
                runtime_exec_owner(cur) != (uintptr_t)mcp_call_session(call)) {
                mcp_call_text(call, "Nothing to wait for: the running code waits for input() from the session that "
                                    "started it.", false);
                return;
            }
            mcp_call_text(call, cur ? "Nothing to wait for: the running code is already being followed by another call."
                                    : "Nothing to wait for: no run is in progress.", false);
            return;
        }
        tool_run_follow(ctx, call, ex, TOOLS_DEFAULT_WAIT_S);
    } else {
        char *msg = xasprintf("ctl: unknown op '%s'; valid ops: reset, cancel, restart, status, wait", op);
        mcp_call_text(call, msg, true);
        free(msg);
    }
}

void tool_ctl_describe(mcp_tool_t *out)
{
    *out = (mcp_tool_t){
        .name = "ctl",
        .title = "Control the kernel",
        .description = "Control the kernel session: reset clears variables, cancel interrupts running code "
                       "(variables survive), restart starts a fresh interpreter, status reports the kernel's "
                       "state, wait follows a run that returned before it finished.",
        .input_schema = s_schema,
        .destructive = true,
    };
}

void tool_ctl_register(mcp_server_t *srv, tools_ctx_t *ctx)
{
    mcp_tool_t t;
    tool_ctl_describe(&t);
    t.fn = s_ctl;
    t.ud = ctx;
    mcp_server_add_tool(srv, &t);
}
