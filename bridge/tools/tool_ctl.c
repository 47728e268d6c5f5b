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
#include "output.h"
#include "textfmt.h"
#include "workdir.h"

#define CANCEL_GIVE_UP_MS 5000

static const char s_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"op\":{\"type\":\"string\",\"enum\":[\"reset\",\"cancel\",\"restart\",\"status\",\"wait\",\"output\"],"
    "\"description\":\"reset: clear variables; cancel: interrupt the running code; restart: fresh interpreter; "
    "status: kernel state; wait: follow a run that returned before it finished; output: the running code's "
    "output so far (empty when nothing runs).\"},"
    "\"scope\":{\"type\":\"string\",\"enum\":[\"namespace\",\"all\"],\"default\":\"namespace\",\"description\":"
    "\"For reset: namespace (variables) or all (also history, the exec counter and saved outputs).\"},"
    "\"exec\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"For wait: the execution count of the run to "
    "follow (default: the first run that returned early and is waiting to be followed).\"}},"
    "\"required\":[\"op\"],\"additionalProperties\":false}";

typedef struct {
    tools_op_t base;         /* first: the runtime calls back with the op */
    bool all;
    bool cancel;             /* a cancel: the runtime may hold op as a verdict's ud */
    long exec_number;        /* cancel: the run being interrupted */
    uint64_t timer;
    const char *opname;      /* static: reset, restart, cancel */
    bool cancel_op;          /* a cancel (op->cancel clears once the verdict came) */
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

/* An action's structuredContent (ctl's schema: {op, ok, ...}). Caller owns it. */
static json_object *s_action(const char *opname, bool ok)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "op", json_object_new_string(opname));
    json_object_object_add(o, "ok", json_object_new_boolean(ok));
    return o;
}

/* Finishes with text and sc (consumed; NULL: {op, ok: !is_error}). */
static void s_op_finish_sc(s_op_t *op, const char *text, bool is_error, json_object *sc)
{
    if (!sc)
        sc = s_action(op->cancel_op ? "cancel" : op->opname, !is_error);
    tools_op_finish(&op->base, text, is_error, sc);
    json_object_put(sc);
}

static void s_op_finish(s_op_t *op, const char *text, bool is_error)
{
    s_op_finish_sc(op, text, is_error, NULL);
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
    long vars = strtol(text, NULL, 10);
    textfmt_count(&b, vars, "var", "vars");
    json_object *sc = s_action("reset", true);
    json_object_object_add(sc, "vars", json_object_new_int64(vars));
    s_op_finish_sc(op, buf_str(&b), false, sc);
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
    json_object *sc = s_action("restart", true);
    json_object_object_add(sc, "vars", json_object_new_int64(0));
    s_op_finish_sc(op, "RESTARTED | interpreter reinitialized | 0 vars", false, sc);
}

/* The cancelled run ended: say what the cancel really did. */
static void s_cancel_verdict(void *ud, runtime_exec_t *ex, runtime_cancel_verdict_t v)
{
    s_op_t *op = ud;
    long n = runtime_exec_number(ex) ? runtime_exec_number(ex) : op->exec_number;
    char text[400];
    bool is_error = false;
    static const char *const verdicts[] = {
        [RUNTIME_CANCEL_INTERRUPTED] = "interrupted", [RUNTIME_CANCEL_DROPPED] = "dropped",
        [RUNTIME_CANCEL_ENDED] = "ended",             [RUNTIME_CANCEL_LOST] = "lost",
        [RUNTIME_CANCEL_FAILED] = "failed",
    };
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
    json_object *sc = s_action("cancel", v != RUNTIME_CANCEL_ENDED && !is_error);
    json_object_object_add(sc, "verdict", json_object_new_string((unsigned)v < 5 ? verdicts[v] : "failed"));
    if (n)
        json_object_object_add(sc, "exec_count", json_object_new_int64(n));
    s_op_finish_sc(op, text, is_error, sc);
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
    json_object *sc = s_action("cancel", false);
    json_object_object_add(sc, "verdict", json_object_new_string("timeout"));
    s_op_finish_sc(op, text, true, sc);
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
    if (st.silent_ms >= 0)
        buf_printf(b, " | not answering %llds", (long long)(st.silent_ms / 1000));
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
    if (st.next_interpreter)
        buf_printf(b, "\nafter the next restart: interpreter %s", st.next_interpreter);
    if (ctx->workdir)
        workdir_status_text(ctx->workdir, b);
    if (st.vars >= 0) {
        buf_puts(b, "\nvariables: ");
        buf_printf(b, "%ld", st.vars);
    }
    if (!st.heartbeat_ok && st.state && strcmp(st.state, "dead") != 0)
        buf_puts(b, "\nheartbeat: no reply for 3 s — the kernel process is unresponsive "
                    "(stopped, or blocked outside Python); ctl cancel or ctl restart");
    char *silent = runtime_silent_why(ctx->rt);
    if (silent)
        buf_printf(b, "\nnot answering: %s", silent);
    free(silent);
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

/* ctl status as structuredContent (ctl's schema, op "status"). */
json_object *tool_ctl_status_json(tools_ctx_t *ctx, mcp_session_t *session)
{
    runtime_status_t st;
    runtime_status(ctx->rt, &st);
    json_object *o = json_object_new_object();
    runtime_exec_t *cur = runtime_current(ctx->rt);
    bool waiting = cur && runtime_exec_state(cur) == RUNTIME_EXEC_INPUT;
    json_object_object_add(o, "op", json_object_new_string("status"));
    json_object_object_add(o, "state", json_object_new_string(st.state));
    json_object_object_add(o, "waiting_for_input", json_object_new_boolean(waiting));
    if (st.language)
        json_object_object_add(o, "language", json_object_new_string(st.language));
    json_object_object_add(o, "exec_count", json_object_new_int64(st.exec_count));
    json_object_object_add(o, "rev", json_object_new_int64((int64_t)st.rev));
    json_object_object_add(o, "uptime_ms", json_object_new_int64(st.up_ms));
    json_object *k = json_object_new_object();
    if (st.kernel_name)
        json_object_object_add(k, "name", json_object_new_string(st.kernel_name));
    if (st.display_name)
        json_object_object_add(k, "display_name", json_object_new_string(st.display_name));
    if (st.pid)
        json_object_object_add(k, "pid", json_object_new_int64((int64_t)st.pid));
    json_object_object_add(k, "attached", json_object_new_boolean(st.attached));
    if (st.interpreter)
        json_object_object_add(k, "interpreter", json_object_new_string(st.interpreter));
    if (st.boot_ms)
        json_object_object_add(k, "ready_ms", json_object_new_int64(st.boot_ms));
    json_object_object_add(o, "kernel", k);
    json_object_object_add(o, "restarts", json_object_new_int64(st.restarts));
    if (st.last_death)
        json_object_object_add(o, "last_failure", json_object_new_string(st.last_death));
    json_object_object_add(o, "heartbeat_ok", json_object_new_boolean(st.heartbeat_ok));
    if (st.silent_ms >= 0)
        json_object_object_add(o, "not_answering_ms", json_object_new_int64(st.silent_ms));
    if (st.vars >= 0)
        json_object_object_add(o, "vars", json_object_new_int64(st.vars));
    json_object_object_add(o, "queued", json_object_new_int64((int64_t)st.queued));
    if (st.running) {
        json_object *r = json_object_new_object();
        json_object_object_add(r, "exec_count", json_object_new_int64(runtime_exec_number(st.running)));
        json_object_object_add(r, "elapsed_ms", json_object_new_int64(runtime_exec_elapsed_ms(st.running)));
        json_object_object_add(r, "acknowledged", json_object_new_boolean(runtime_exec_acknowledged(st.running)));
        if (runtime_exec_interrupted_ms(st.running) >= 0)
            json_object_object_add(r, "interrupted_ms", json_object_new_int64(runtime_exec_interrupted_ms(st.running)));
        json_object_object_add(r, "mine", json_object_new_boolean(runtime_exec_owner(st.running) ==
                                                                   (uintptr_t)mcp_session_serial(session)));
        json_object_object_add(o, "running", r);
    }
    if (waiting) {
        bool password = false;
        const char *prompt = runtime_exec_prompt(cur, &password);
        json_object *in = json_object_new_object();
        json_object_object_add(in, "prompt", json_object_new_string(prompt ? prompt : ""));
        json_object_object_add(in, "password", json_object_new_boolean(password));
        json_object_object_add(o, "input", in);
    }
    if (st.reset_ms >= 0)
        json_object_object_add(o, "reset_pending_ms", json_object_new_int64(st.reset_ms));
    json_object *wd = ctx->workdir ? workdir_status_json(ctx->workdir) : NULL;
    if (wd)
        json_object_object_add(o, "workdir", wd);
    return o;
}

/* ctl status's result. While an input() waits, a client that holds its
 * runs' calls (tool_run_holds: vscode-rat) gets a first text item reading
 * `waiting_for_input` (it polls for that on the first line; the seed's
 * status text follows unchanged as the second item). Every other client
 * gets the seed's text alone (mcp2cli prints every item), and
 * structuredContent.waiting_for_input. */
static void s_status_reply(tools_ctx_t *ctx, mcp_call_t *call)
{
    buf_t b;
    buf_init(&b, 0);
    s_status(ctx, &b);
    json_object *sc = tool_ctl_status_json(ctx, mcp_call_session(call)), *w = NULL;
    json_object *res = json_object_new_object(), *content = json_object_new_array();
    if (tool_run_holds(mcp_call_session(call)) && json_object_object_get_ex(sc, "waiting_for_input", &w) &&
        json_object_get_boolean(w)) {
        json_object *item = json_object_new_object();
        json_object_object_add(item, "type", json_object_new_string("text"));
        json_object_object_add(item, "text", json_object_new_string("waiting_for_input"));
        json_object_array_add(content, item);
    }
    json_object *item = json_object_new_object();
    json_object_object_add(item, "type", json_object_new_string("text"));
    json_object_object_add(item, "text", json_object_new_string(buf_str(&b)));
    json_object_array_add(content, item);
    json_object_object_add(res, "content", content);
    json_object_object_add(res, "structuredContent", sc);
    json_object_object_add(res, "isError", json_object_new_boolean(false));
    mcp_call_reply(call, res);
    buf_free(&b);
}

/* ctl output: the text the running code (or the run waiting for input)
 * has printed so far, as its result would show it; "" when nothing runs.
 * It reads the run's output without handing it out: the run's own call
 * still gets all of it. (vscode-rat's client asks for it while a run is
 * open; the Go server answers the same way.) */
static void s_output_reply(tools_ctx_t *ctx, mcp_call_t *call)
{
    runtime_exec_t *cur = runtime_current(ctx->rt);
    json_object *sc = s_action("output", cur != NULL);
    buf_t b;
    buf_init(&b, 0);
    if (cur) {
        output_render(runtime_exec_output(cur), &b);
        json_object_object_add(sc, "exec_count", json_object_new_int64(runtime_exec_number(cur)));
    }
    json_object_object_add(sc, "output", json_object_new_string(buf_str(&b)));
    mcp_call_text_structured(call, buf_str(&b), false, sc);
    json_object_put(sc);
    buf_free(&b);
}

static void s_wait_nothing(mcp_call_t *call, const char *text)
{
    json_object *sc = s_action("wait", false);
    mcp_call_text_structured(call, text, false, sc);
    json_object_put(sc);
}

static void s_ctl(mcp_call_t *call, json_object *args, void *ud)
{
    tools_ctx_t *ctx = ud;
    json_object *v = NULL;
    const char *op = json_object_object_get_ex(args, "op", &v) ? json_object_get_string(v) : "";
    const char *scope = json_object_object_get_ex(args, "scope", &v) ? json_object_get_string(v) : "namespace";
    if (mcp_call_request_state(call)) {
        /* The retry of a ctl wait that ended input-required (2026-07-28):
         * the answer goes to the prompt it named, as run's retry does;
         * following the run again would only ask again. */
        if (strcmp(op, "wait") == 0)
            tool_run_resume(ctx, call, "ctl", TOOLS_DEFAULT_WAIT_S);
        else
            mcp_call_text(call, "ctl: this requestState answers the input() a ctl(op=\"wait\") asked for; send it "
                                "with op \"wait\"", true);
        return;
    }
    if (strcmp(op, "status") == 0) {
        s_status_reply(ctx, call);
    } else if (strcmp(op, "reset") == 0) {
        s_op_t *o = s_op_new(ctx, call);
        o->opname = "reset";
        o->all = strcmp(scope, "all") == 0;
        runtime_reset(ctx->rt, o->all, s_reset_done, o);
    } else if (strcmp(op, "restart") == 0) {
        s_op_t *o = s_op_new(ctx, call);
        o->opname = "restart";
        runtime_restart(ctx->rt, s_restart_done, o);
    } else if (strcmp(op, "cancel") == 0) {
        /* The running run, or (while the kernel starts) the next queued
         * one, which is dropped, never interrupted. */
        runtime_exec_t *cur = runtime_current(ctx->rt);
        if (!cur)
            cur = runtime_first_queued(ctx->rt);
        if (!cur) {
            json_object *sc = s_action("cancel", false);
            json_object_object_add(sc, "verdict", json_object_new_string("none"));
            mcp_call_text_structured(call, "No active execution.", false, sc);
            json_object_put(sc);
            return;
        }
        s_op_t *o = s_op_new(ctx, call);
        o->opname = "cancel";
        o->cancel_op = true;
        o->cancel = true;
        o->exec_number = runtime_exec_number(cur);
        o->timer = loop_timer(ctx->loop, CANCEL_GIVE_UP_MS, s_cancel_give_up, o);
        /* The verdict may come (and free o) before this returns. */
        if (runtime_cancel_run(ctx->rt, cur, s_cancel_verdict, o) < 0) {
            o->cancel = false;
            json_object *sc = s_action("cancel", false);
            json_object_object_add(sc, "verdict", json_object_new_string("unreachable"));
            s_op_finish_sc(o, "the running code cannot be interrupted (the kernel is not reachable); "
                              "ctl(op=\"restart\") ends it", true, sc);
        }
    } else if (strcmp(op, "output") == 0) {
        s_output_reply(ctx, call);
    } else if (strcmp(op, "wait") == 0) {
        /* exec: that run only (a notebook reloaded while its run goes on
         * follows its own, not another client's that waits to be collected). */
        long want = json_object_object_get_ex(args, "exec", &v) ? (long)json_object_get_int64(v) : 0;
        runtime_exec_t *ex = runtime_detached_number(ctx->rt, (uintptr_t)mcp_session_serial(mcp_call_session(call)),
                                                     want);
        if (!ex) {
            runtime_exec_t *cur = runtime_current(ctx->rt);
            if (cur && runtime_exec_state(cur) == RUNTIME_EXEC_INPUT && runtime_exec_owner(cur) &&
                runtime_exec_owner(cur) != (uintptr_t)mcp_session_serial(mcp_call_session(call))) {
                s_wait_nothing(call, "Nothing to wait for: the running code waits for input() from the session "
                                     "that started it.");
                return;
            }
            s_wait_nothing(call, cur ? "Nothing to wait for: the running code is already being followed by another "
                                       "call."
                                     : "Nothing to wait for: no run is in progress.");
            return;
        }
        tool_run_follow(ctx, call, ex, TOOLS_DEFAULT_WAIT_S);
    } else {
        char *msg = xasprintf("ctl: unknown op '%s'; valid ops: reset, cancel, restart, status, wait, output", op);
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
        .output_schema = tools_schema("ctl"),
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
