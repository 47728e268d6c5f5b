/* tool_run: the `run` tool: execute code, stream its output, answer input(). */
#define LOG_MODULE "run"
#include "tools.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assets.h"
#include "buf.h"
#include "log.h"
#include "mem.h"
#include "output.h"
#include "termcli.h"
#include "textfmt.h"
#include "tool_elicit.h"
#include "workdir.h"

#define FLUSH_MS 50                /* notifications: at most one batch per stream per 50 ms */
#define NOTIFY_MAX (64u << 10)     /* bytes of one batch; the rest is summarized */
#define KEEPALIVE_MS 5000          /* progress while silent, for resetTimeoutOnProgress */
#define HOLD_WAIT_S 86400.0        /* the default wait for clients that hold the call (tool_run_holds) */

static const char s_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"code\":{\"type\":\"string\",\"description\":\"Code to execute in the persistent kernel "
    "(\\\"\\\" when answering input).\"},"
    "\"input\":{\"type\":\"string\",\"description\":\"Answer to a pending input() prompt, with code \\\"\\\". "
    "(mcptocli and mcp2cli keep --input for themselves: there the answer is the code, py run ANSWER.)\"},"
    "\"allow_input\":{\"type\":\"boolean\",\"default\":true,\"description\":"
    "\"Let the code call input(); when false, input() raises.\"},"
    "\"wait\":{\"type\":\"number\",\"default\":25,\"minimum\":0,\"maximum\":3600,\"description\":"
    "\"Seconds to wait before returning with the output so far while the code keeps running.\"}},"
    "\"required\":[\"code\"],\"additionalProperties\":false}";

typedef struct {
    tools_ctx_t *ctx;
    mcp_call_t *call;
    runtime_exec_t *ex;
    double wait_s;
    uint64_t wait_timer, flush_timer, keepalive_timer;
    buf_t pending[2];              /* coalesced stdout / stderr text */
    size_t skipped[2];             /* bytes not sent because a batch was full */
    double progress;
    long elicit;                   /* pending elicitation request handle, 0 if none */
    bool elicit_refused;           /* the client declined: fall back to text */
    char *elicit_note;             /* what was wrong with the client's reply, or NULL */
} s_follow_t;

static void s_follow_free(s_follow_t *f)
{
    loop_timer_cancel(f->ctx->loop, f->wait_timer);
    loop_timer_cancel(f->ctx->loop, f->flush_timer);
    loop_timer_cancel(f->ctx->loop, f->keepalive_timer);
    buf_free(&f->pending[0]);
    buf_free(&f->pending[1]);
    free(f->elicit_note);
    free(f);
}

static void s_flush(s_follow_t *f)
{
    static const char *loggers[2] = {"stdout", "stderr"};
    static const mcp_log_level_t levels[2] = {MCP_LOG_INFO, MCP_LOG_WARNING};
    bool sent = false;
    for (int s = 0; s < 2; s++) {
        if (!f->pending[s].len && !f->skipped[s])
            continue;
        if (f->skipped[s])
            buf_printf(&f->pending[s], "\n… [%zu bytes not streamed; the result keeps the output] …\n", f->skipped[s]);
        mcp_call_log(f->call, levels[s], loggers[s], f->pending[s].data, f->pending[s].len);
        /* The same batch as rat/output {text, stream}, for vscode-rat alone
         * (tool_run_holds): it ignores notifications/message. Any other
         * client would get each batch twice, and a modern request without
         * logLevel an SSE stream it did not ask for. */
        if (tool_run_holds(mcp_call_session(f->call))) {
            json_object *p = json_object_new_object();
            json_object_object_add(p, "text", json_object_new_string_len(f->pending[s].data, (int)f->pending[s].len));
            json_object_object_add(p, "stream", json_object_new_string(loggers[s]));
            mcp_call_notify(f->call, "rat/output", p);
        }
        buf_reset(&f->pending[s]);
        f->skipped[s] = 0;
        sent = true;
    }
    if (sent && mcp_call_wants_progress(f->call)) {
        f->progress += 1;
        mcp_call_progress(f->call, f->progress, -1, NULL);
    }
}

static void s_flush_timer(loop_t *loop, void *ud)
{
    s_follow_t *f = ud;
    f->flush_timer = 0;
    if (f->pending[0].len || f->pending[1].len || f->skipped[0] || f->skipped[1]) {
        s_flush(f);
        f->flush_timer = loop_timer(loop, FLUSH_MS, s_flush_timer, f);
    }
}

static void s_on_output(void *ud, runtime_exec_t *ex, int stream, const char *text, size_t len)
{
    s_follow_t *f = ud;
    stream = stream ? 1 : 0;
    size_t room = NOTIFY_MAX > f->pending[stream].len ? NOTIFY_MAX - f->pending[stream].len : 0;
    if (len > room) {
        buf_append(&f->pending[stream], text, room);
        f->skipped[stream] += len - room;
    } else {
        buf_append(&f->pending[stream], text, len);
    }
    if (!f->flush_timer) {
        /* First output after a quiet spell goes out at once; what follows
         * within FLUSH_MS is batched. */
        s_flush(f);
        f->flush_timer = loop_timer(f->ctx->loop, FLUSH_MS, s_flush_timer, f);
    }
}

static void s_keepalive(loop_t *loop, void *ud)
{
    s_follow_t *f = ud;
    f->keepalive_timer = loop_timer(loop, KEEPALIVE_MS, s_keepalive, f);
    f->progress += 1;
    char msg[64];
    snprintf(msg, sizeof msg, "running %llds", (long long)(runtime_exec_elapsed_ms(f->ex) / 1000));
    mcp_call_progress(f->call, f->progress, -1, msg);
}

/* Appends the error / failure part of a finished run. */
static void s_render_problem(runtime_exec_t *ex, buf_t *b)
{
    runtime_outcome_t oc = runtime_exec_outcome(ex);
    if (oc == RUNTIME_ERROR) {
        runtime_error_t e;
        runtime_exec_error(ex, &e);
        if (b->len)
            buf_putc(b, '\n');
        /* An empty ename: the language adapter made evalue the whole text. */
        if (e.ename && !*e.ename && e.evalue && *e.evalue) {
            buf_puts(b, e.evalue);
        } else {
            buf_puts(b, e.ename ? e.ename : "Error");
            if (e.evalue && *e.evalue)
                buf_printf(b, ": %s", e.evalue);
        }
        if (e.line > 0 && e.source)
            buf_printf(b, "\n  line %ld: %s", e.line, e.source);
    } else if (oc == RUNTIME_ABORTED) {
        if (b->len)
            buf_putc(b, '\n');
        buf_puts(b, "aborted: the kernel did not run this code (an earlier error stopped the queue)");
    } else if (oc == RUNTIME_FAILED || oc == RUNTIME_CANCELLED) {
        if (b->len)
            buf_putc(b, '\n');
        buf_puts(b, runtime_exec_why(ex) ? runtime_exec_why(ex) : "failed");
    }
}

/* ------------------------------------------------------------ results */

/* Appends the run's output text as the call's client reads it: bounded by
 * vscode-rat's line limit for its sessions (TOOL_VSCODE_MAX_LINES), the
 * usual head and tail for every other client. */
static void s_render(mcp_call_t *call, runtime_exec_t *ex, buf_t *body)
{
    output_render_max(runtime_exec_output(ex), body,
                      tool_run_holds(mcp_call_session(call)) ? TOOL_VSCODE_MAX_LINES : 0);
}

/* What a run result's structuredContent says (the run_result schema in
 * schemas.json); body is the text without its footer. Reads the
 * truncation facts of the segment just rendered, so call it after
 * output_render and before output_reset. Caller owns the result. */
/* Appends to body one line `__RAT_PLOT__:<file>` per image saved in items:
 * vscode-rat's plot convention (it copies that file and shows it). */
static void s_plot_lines(struct assets *store, json_object *items, buf_t *body)
{
    for (size_t i = 0; store && i < json_object_array_length(items); i++) {
        json_object *assets = NULL;
        if (!json_object_object_get_ex(json_object_array_get_idx(items, i), "assets", &assets))
            continue;
        for (size_t k = 0; k < json_object_array_length(assets); k++) {
            const char *id = tool_vscode_image_id(json_object_array_get_idx(assets, k));
            char *path = id ? assets_path(store, id, NULL) : NULL;
            if (path)
                buf_printf(body, "%s__RAT_PLOT__:%s", body->len ? "\n" : "", path);
            free(path);
        }
    }
}

static json_object *s_structured(struct assets *store, runtime_exec_t *ex, bool ansi, const char *status,
                                 const char *body, const char *footer)
{
    json_object *o = json_object_new_object();
    bool success = strcmp(status, "error") != 0 && strcmp(status, "cancelled") != 0;
    json_object_object_add(o, "status", json_object_new_string(status));
    json_object_object_add(o, "success", json_object_new_boolean(success));
    json_object *items = outitems_json(runtime_exec_items(ex));
    buf_t text;
    buf_init(&text, 0);
    buf_puts(&text, body);
    s_plot_lines(store, items, &text);
    json_object_object_add(o, "output", json_object_new_string(buf_str(&text)));
    buf_free(&text);
    json_object_object_add(o, "footer", json_object_new_string(footer));
    json_object_object_add(o, "exec_count", json_object_new_int64(runtime_exec_number(ex)));
    json_object_object_add(o, "duration_ms", json_object_new_int64(runtime_exec_elapsed_ms(ex)));
    bool done = runtime_exec_state(ex) == RUNTIME_EXEC_DONE;
    if (done && runtime_exec_vars(ex) >= 0)
        json_object_object_add(o, "vars", json_object_new_int64(runtime_exec_vars(ex)));
    json_object_object_add(o, "assets", json_object_new_int64(runtime_exec_assets(ex)));
    if (runtime_exec_state(ex) == RUNTIME_EXEC_QUEUED)
        json_object_object_add(o, "queue_position", json_object_new_int64((int64_t)runtime_exec_position(ex)));
    json_object_object_add(o, "outputs", items);
    runtime_outcome_t oc = runtime_exec_outcome(ex);
    if (done && oc == RUNTIME_ERROR) {
        runtime_error_t e;
        runtime_exec_error(ex, &e);
        json_object *err = json_object_new_object();
        json_object_object_add(err, "ename", json_object_new_string(e.ename ? e.ename : ""));
        json_object_object_add(err, "evalue", json_object_new_string(e.evalue ? e.evalue : ""));
        /* The frames as the kernel coloured them when the request's _meta
         * asks ("rat/ansi": true, the notebook page does), else cleaned. */
        json_object *tb = ansi && e.traceback_ansi ? e.traceback_ansi : e.traceback;
        json_object_object_add(err, "traceback", tb ? json_object_get(tb) : json_object_new_array());
        if (e.line > 0 && e.source) {
            json_object_object_add(err, "line", json_object_new_int64(e.line));
            json_object_object_add(err, "source", json_object_new_string(e.source));
        }
        json_object_object_add(o, "error", err);
    } else if (done && oc != RUNTIME_OK) {
        const char *why = oc == RUNTIME_ABORTED ? "aborted: the kernel did not run this code (an earlier error "
                                                  "stopped the queue)"
                                                : runtime_exec_why(ex);
        json_object_object_add(o, "failure", json_object_new_string(why ? why : "failed"));
    }
    bool password = false;
    const char *prompt = runtime_exec_prompt(ex, &password);
    if (prompt && strcmp(status, RUNTIME_STATE_WAITING) == 0) {
        json_object *in = json_object_new_object();
        json_object_object_add(in, "prompt", json_object_new_string(prompt));
        json_object_object_add(in, "password", json_object_new_boolean(password));
        json_object_object_add(o, "input", in);
    }
    output_t *out = runtime_exec_output(ex);
    size_t dropped = 0, dropped_bytes = 0;
    outitems_dropped(runtime_exec_items(ex), &dropped, &dropped_bytes);
    if (output_truncated(out) || dropped || dropped_bytes) {
        json_object *t = json_object_new_object();
        json_object_object_add(t, "lines", json_object_new_int64((int64_t)output_line_count(out)));
        json_object_object_add(t, "text_cut", json_object_new_boolean(output_truncated(out)));
        if (output_spill_path(out)) {
            json_object_object_add(t, "full_output", json_object_new_string(output_spill_path(out)));
            /* Over HTTP the file is also served, at /assets/output-<hex>.txt. */
            const char *name = strrchr(output_spill_path(out), '/');
            if (store && assets_http(store) && name && assets_output_ok(name + 1)) {
                char *url = xasprintf("/assets%s", name);
                json_object_object_add(t, "full_output_url", json_object_new_string(url));
                free(url);
            }
        }
        else if (output_spill_error(out))
            json_object_object_add(t, "full_output_error", json_object_new_string(output_spill_error(out)));
        json_object_object_add(t, "outputs_dropped", json_object_new_int64((int64_t)dropped));
        json_object_object_add(t, "bytes_dropped", json_object_new_int64((int64_t)dropped_bytes));
        json_object_object_add(o, "truncated", t);
    }
    return o;
}

/* The status word of a finished run. An error after a cancel's interrupt
 * is the cancel's doing. */
const char *tool_run_status_word(runtime_exec_t *ex)
{
    switch (runtime_exec_outcome(ex)) {
    case RUNTIME_OK:
        return "ok";
    case RUNTIME_CANCELLED:
        return "cancelled";
    case RUNTIME_ERROR:
        return runtime_exec_interrupted_ms(ex) >= 0 ? "cancelled" : "error";
    default:
        return "error";
    }
}

/* Joins body and footer into the result text (a blank line between). */
static void s_join(buf_t *text, const buf_t *body, const buf_t *footer)
{
    buf_append(text, body->data ? body->data : "", body->len);
    if (body->len)
        buf_puts(text, "\n\n");
    buf_append(text, footer->data ? footer->data : "", footer->len);
}

static void s_end(s_follow_t *f, const char *text, bool is_error, bool detach, json_object *structured)
{
    runtime_exec_t *ex = f->ex;
    runtime_exec_observe(ex, NULL, NULL);
    mcp_call_on_cancel(f->call, NULL, NULL);
    mcp_call_text_structured(f->call, text, is_error, structured);
    runtime_exec_release(ex, detach);
    s_follow_free(f);
}

/* Ends the call with body + footer; when reset, the segment handed out is
 * forgotten (ctl wait continues from here). The first out_len bytes of body
 * are the run's output (the rest says what went wrong). */
static void s_end_parts(s_follow_t *f, const char *status, buf_t *body, size_t out_len, buf_t *footer,
                        bool is_error, bool detach, bool reset)
{
    runtime_exec_t *ex = f->ex;
    json_object *sc = s_structured(f->ctx->assets, ex, mcp_call_meta_true(f->call, "rat/ansi"), status, buf_str(body),
                                   buf_str(footer));
    if (tool_run_holds(mcp_call_session(f->call))) {
        char *out = xstrndup(buf_str(body), out_len);
        tool_vscode_run_result(sc, f->ctx->assets, ex, out, buf_str(footer));
        free(out);
    }
    if (reset) {
        output_reset(runtime_exec_output(ex));
        outitems_reset(runtime_exec_items(ex));
    }
    buf_t text;
    buf_init(&text, 0);
    s_join(&text, body, footer);
    s_end(f, buf_str(&text), is_error, detach, sc);
    json_object_put(sc);
    buf_free(&text);
    buf_free(body);
    buf_free(footer);
}

static void s_on_done(void *ud, runtime_exec_t *ex)
{
    s_follow_t *f = ud;
    s_flush(f);
    buf_t body, footer;
    buf_init(&body, 0);
    buf_init(&footer, 0);
    s_render(f->call, ex, &body);
    size_t out_len = body.len;
    s_render_problem(ex, &body);
    bool ok = runtime_exec_outcome(ex) == RUNTIME_OK;
    textfmt_footer(&footer, ok, runtime_exec_elapsed_ms(ex), runtime_exec_vars(ex), runtime_exec_assets(ex));
    s_end_parts(f, tool_run_status_word(ex), &body, out_len, &footer, !ok, false, false);
}

static void s_end_with_input(s_follow_t *f)
{
    s_flush(f);
    bool password = false;
    const char *prompt = runtime_exec_prompt(f->ex, &password);
    buf_t body, footer;
    buf_init(&body, 0);
    buf_init(&footer, 0);
    s_render(f->call, f->ex, &body);
    buf_printf(&footer, "INPUT REQUESTED%s: ", password ? " (password; the answer is not echoed)" : "");
    buf_put_json_str(&footer, prompt ? prompt : "", prompt ? strlen(prompt) : 0);
    buf_putc(&footer, '\n');
    termcli_mode_t term = termcli_mode(mcp_call_session(f->call));
    if (term != TERMCLI_NONE) {
        runtime_status_t st;
        runtime_status(f->ctx->rt, &st);
        termcli_input_hint(&footer, term, termcli_command(st.language), runtime_exec_number(f->ex), password);
    } else {
        buf_printf(&footer, "⏳ exec #%ld waits: answer with run(code=\"\", input=\"...\") or stop it with "
                            "ctl(op=\"cancel\")",
                   runtime_exec_number(f->ex));
    }
    if (f->elicit_note) {
        buf_putc(&footer, '\n');
        buf_puts(&footer, f->elicit_note);
    }
    s_end_parts(f, RUNTIME_STATE_WAITING, &body, body.len, &footer, false, true, true);
}

/* The client's reply to elicitation/create (see mcp_response_fn: both NULL
 * when the request was abandoned because the call is ending, which frees f
 * right after). Whatever the client sent, the run is either answered or the
 * call ends with INPUT REQUESTED, so nothing is left waiting on a reply that
 * will not come. */
static void s_on_elicit(void *ud, json_object *result, json_object *error)
{
    s_follow_t *f = ud;
    f->elicit = 0;
    if (!result && !error)
        return; /* abandoned: the call ended */
    const char *value = NULL, *why = NULL;
    tool_elicit_kind_t kind = tool_elicit_reply(result, error, &value, &why);
    if (kind == TOOL_ELICIT_ACCEPT && runtime_exec_state(f->ex) == RUNTIME_EXEC_INPUT &&
        runtime_exec_answer(f->ex, value) == 0)
        return; /* keep following the same call */
    /* Declined, cancelled, failed or invalid: answer the usual way, saying
     * what was wrong with a reply that was not a plain refusal. */
    f->elicit_refused = true;
    free(f->elicit_note);
    f->elicit_note = tool_elicit_note(kind, why);
    if (f->elicit_note)
        log_warn("%s", f->elicit_note);
    if (runtime_exec_state(f->ex) == RUNTIME_EXEC_INPUT)
        s_end_with_input(f);
}

/* MCP 2026-07-28: the call ends with an input-required result asking for
 * the answer; the run keeps waiting. The client's retry of the same call
 * (run, or ctl wait) carries the answer and the sealed state naming this
 * prompt of this run: "input:<runtime_exec_id>:<runtime_exec_input_seq>",
 * which no other run or prompt shares (tool_run_resume). The output so far
 * stays in the run, for the result that ends it. */
static void s_end_input_required(s_follow_t *f, const char *prompt)
{
    s_flush(f);
    runtime_exec_t *ex = f->ex;
    runtime_exec_observe(ex, NULL, NULL);
    mcp_call_on_cancel(f->call, NULL, NULL);
    json_object *req = json_object_new_object();
    json_object_object_add(req, "method", json_object_new_string("elicitation/create"));
    json_object_object_add(req, "params", tool_elicit_params(prompt));
    json_object *reqs = json_object_new_object();
    json_object_object_add(reqs, "input", req);
    char state[64];
    snprintf(state, sizeof state, "input:%lu:%lu", runtime_exec_id(ex), runtime_exec_input_seq(ex));
    mcp_call_input_required(f->call, reqs, state);
    runtime_exec_release(ex, true);
    s_follow_free(f);
}

/* See tools.h. */
bool tool_run_holds(mcp_session_t *s)
{
    return strcmp(mcp_session_client_name(s), "rat-vscode") == 0;
}

static void s_on_input(void *ud, runtime_exec_t *ex)
{
    s_follow_t *f = ud;
    bool password = false;
    const char *prompt = runtime_exec_prompt(ex, &password);
    mcp_session_t *s = mcp_call_session(f->call);
    /* A ctl wait may follow another session's run; only that session can
     * answer its input() (tool_run_resume and run(input=...) refuse the
     * others), so it is neither asked here nor pointed at an answer it
     * could not give. */
    uintptr_t owner = runtime_exec_owner(ex);
    if (owner && owner != (uintptr_t)mcp_session_serial(s)) {
        free(f->elicit_note);
        f->elicit_note = xstrdup("(the run is another session's: only that session can answer its input())");
        s_end_with_input(f);
        return;
    }
    if (mcp_call_modern(f->call)) {
        if (!password && mcp_call_client_has(f->call, "elicitation"))
            s_end_input_required(f, prompt);
        else
            s_end_with_input(f);
        return;
    }
    if (tool_run_holds(s)) {
        s_flush(f);
        return; /* the answer comes as run {input}; this call goes on */
    }
    /* Form elicitation must not collect secrets (MCP spec), so password
     * prompts always take the run(code="", input=...) route. */
    if (!password && !f->elicit_refused && mcp_session_client_has(s, "elicitation") && mcp_session_can_request(s)) {
        s_flush(f);
        f->elicit = tool_elicit_request(f->call, prompt, s_on_elicit, f);
        return;
    }
    s_end_with_input(f);
}

static void s_on_wait(loop_t *loop, void *ud)
{
    s_follow_t *f = ud;
    f->wait_timer = 0;
    s_flush(f);
    /* A client that takes tasks (2026-07-28) gets one instead of "running":
     * the run goes on and its result waits for tasks/get. */
    if (mcp_call_become_task(f->call))
        return;
    runtime_exec_t *ex = f->ex;
    buf_t body, footer;
    buf_init(&body, 0);
    buf_init(&footer, 0);
    s_render(f->call, ex, &body);
    bool queued = runtime_exec_state(ex) == RUNTIME_EXEC_QUEUED;
    if (queued) {
        buf_printf(&footer, "⏳ queued (%zu ahead) | not started yet\n", runtime_exec_position(ex));
        buf_puts(&footer, "↳ it runs when the kernel is free: ctl(op=\"wait\") follows it, ctl(op=\"cancel\") drops it");
    } else {
        buf_printf(&footer, "⏳ running %.1fs | exec #%ld\n", (double)runtime_exec_elapsed_ms(ex) / 1000.0,
                   runtime_exec_number(ex));
        buf_puts(&footer, "↳ still running: ctl(op=\"wait\") follows it, ctl(op=\"cancel\") stops it");
    }
    s_end_parts(f, queued ? "queued" : "running", &body, body.len, &footer, false, true, true);
}

/* The shell watchdog says the kernel is not answering (runtime_silent_ms):
 * the call returns now with the reason and what to do; the run stays where
 * it is (detached, as after the wait) and goes on if the kernel answers
 * again (doc/tools.md#a-kernel-that-stops-answering). A task's round ends
 * the same way: its result says so. */
static void s_on_silent(void *ud, runtime_exec_t *ex)
{
    s_follow_t *f = ud;
    s_flush(f);
    char *why = runtime_silent_why(f->ctx->rt);
    buf_t body, footer;
    buf_init(&body, 0);
    buf_init(&footer, 0);
    s_render(f->call, ex, &body);
    bool queued = runtime_exec_state(ex) == RUNTIME_EXEC_QUEUED;
    if (queued)
        buf_printf(&footer, "⚠ not answering | queued (%zu ahead), not started: %s\n", runtime_exec_position(ex),
                   why ? why : "the kernel does not answer");
    else
        buf_printf(&footer, "⚠ not answering | sent %llds ago, not acknowledged: %s\n",
                   (long long)(runtime_exec_age_ms(ex) / 1000), why ? why : "the kernel does not answer");
    buf_puts(&footer, "↳ ctl(op=\"wait\") follows this run, ctl(op=\"cancel\") drops it, ctl(op=\"restart\") "
                      "starts a new kernel");
    free(why);
    s_end_parts(f, queued ? "queued" : "running", &body, body.len, &footer, true, true, true);
}

static void s_on_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_follow_t *f = ud;
    runtime_exec_t *ex = f->ex;
    runtime_exec_observe(ex, NULL, NULL);
    if (f->elicit)
        mcp_call_abandon_request(call, f->elicit);
    if (reason == MCP_CANCEL_CLIENT) {
        /* The client gave up on this run: stop it (interrupt, or drop it from
         * the queue). No response is sent. */
        runtime_cancel(f->ctx->rt, ex);
        runtime_exec_release(ex, false);
    } else {
        /* Nobody is listening any more; the run goes on and ctl wait can
         * collect its output later. */
        runtime_exec_release(ex, true);
    }
    s_follow_free(f);
}

static const runtime_observer_t s_observer = {
    .on_output = s_on_output,
    .on_input = s_on_input,
    .on_done = s_on_done,
    .on_silent = s_on_silent,
};

void tool_run_follow(tools_ctx_t *ctx, mcp_call_t *call, runtime_exec_t *ex, double wait_s)
{
    s_follow_t *f = xcalloc(1, sizeof *f);
    f->ctx = ctx;
    f->call = call;
    f->ex = ex;
    f->wait_s = wait_s;
    buf_init(&f->pending[0], 0);
    buf_init(&f->pending[1], 0);
    mcp_call_on_cancel(call, s_on_cancel, f);
    if (runtime_exec_state(ex) == RUNTIME_EXEC_DONE) {
        s_on_done(f, ex);
        return;
    }
    if (runtime_exec_state(ex) == RUNTIME_EXEC_INPUT) {
        runtime_exec_observe(ex, &s_observer, f);
        s_on_input(f, ex);
        return;
    }
    if (runtime_silent_ms(ctx->rt) >= 0) {
        /* Not answering already: waiting would only hide that. */
        s_on_silent(f, ex);
        return;
    }
    runtime_exec_observe(ex, &s_observer, f);
    if (!mcp_call_is_task(call)) /* a task's round follows the run to its end */
        f->wait_timer = loop_timer(ctx->loop, (int64_t)(wait_s * 1000.0), s_on_wait, f);
    if (mcp_call_wants_progress(call))
        f->keepalive_timer = loop_timer(ctx->loop, KEEPALIVE_MS, s_keepalive, f);
}

/* The answer went to a run another call follows: that call gets the output,
 * this one a run_result saying so (status running, no outputs), like every
 * non-error result of run and ctl (their outputSchema). */
static void s_input_sent(tools_ctx_t *ctx, mcp_call_t *call, runtime_exec_t *ex)
{
    const char *text = "✓ input sent (another call is following this run)";
    json_object *sc = s_structured(ctx->assets, ex, false, "running", "", text);
    json_object_object_add(sc, "outputs", json_object_new_array());
    json_object_object_del(sc, "truncated");
    if (tool_run_holds(mcp_call_session(call)))
        json_object_object_add(sc, "status", json_object_new_string(text)); /* its trailer (tool_vscode.c) */
    mcp_call_text_structured(call, text, false, sc);
    json_object_put(sc);
}

/* Parses the state s_end_input_required seals, "input:<exec id>:<prompt>".
 * Returns false for anything else (it was sealed by this process, so only a
 * bug makes it fail; still, nothing is assumed). */
static bool s_parse_state(const char *state, unsigned long *id, unsigned long *seq)
{
    if (strncmp(state, "input:", 6) != 0 || state[6] < '0' || state[6] > '9')
        return false;
    char *end = NULL;
    *id = strtoul(state + 6, &end, 10);
    if (*end != ':' || end[1] < '0' || end[1] > '9')
        return false;
    *seq = strtoul(end + 1, &end, 10);
    return *end == '\0';
}

/* See tools.h. */
void tool_run_resume(tools_ctx_t *ctx, mcp_call_t *call, const char *tool, double wait_s)
{
    const char *state = mcp_call_request_state(call);
    unsigned long id = 0, seq = 0;
    runtime_exec_t *cur = runtime_current(ctx->rt);
    if (!state || !s_parse_state(state, &id, &seq) || !cur || runtime_exec_state(cur) != RUNTIME_EXEC_INPUT ||
        runtime_exec_id(cur) != id || runtime_exec_input_seq(cur) != seq) {
        char *msg = xasprintf("%s: the input() this answer was for is no longer waiting (its run ended, was "
                              "cancelled, or asks something else now); run the code again",
                              tool);
        mcp_call_text(call, msg, true);
        free(msg);
        return;
    }
    uintptr_t me = (uintptr_t)mcp_session_serial(mcp_call_session(call));
    if (runtime_exec_owner(cur) && runtime_exec_owner(cur) != me) {
        /* As run(input=...): only the session whose run asked answers. */
        char *msg = xasprintf("%s: the input() waiting is exec #%ld's, a run of another session; only that "
                              "session can answer it (ctl(op=\"cancel\") stops it)",
                              tool, runtime_exec_number(cur));
        mcp_call_text(call, msg, true);
        free(msg);
        return;
    }
    bool password = false;
    const char *prompt = runtime_exec_prompt(cur, &password);
    if (password) {
        /* Never sealed for one (s_on_input): secrets do not go through
         * elicitation (MCP spec). */
        char *msg = xasprintf("%s: the input() waiting is a password prompt, which is not answered through "
                              "elicitation: answer with run(code=\"\", input=\"...\")",
                              tool);
        mcp_call_text(call, msg, true);
        free(msg);
        return;
    }
    json_object *responses = mcp_call_input_responses(call), *reply = NULL;
    if (!responses || !json_object_object_get_ex(responses, "input", &reply)) {
        /* The answer is missing: ask again (mrtr.mdx: re-request, not an error). */
        json_object *req = json_object_new_object();
        json_object_object_add(req, "method", json_object_new_string("elicitation/create"));
        json_object_object_add(req, "params", tool_elicit_params(prompt));
        json_object *reqs = json_object_new_object();
        json_object_object_add(reqs, "input", req);
        mcp_call_input_required(call, reqs, state);
        return;
    }
    const char *value = NULL, *why = NULL;
    tool_elicit_kind_t kind = tool_elicit_reply(reply, NULL, &value, &why);
    if (kind != TOOL_ELICIT_ACCEPT) {
        char *note = tool_elicit_note(kind, why);
        char *msg = xasprintf("INPUT REQUESTED: exec #%ld still waits (%s): answer with run(code=\"\", "
                              "input=\"...\") or stop it with ctl(op=\"cancel\")",
                              runtime_exec_number(cur), note ? note : "the user declined");
        mcp_call_text(call, msg, true);
        free(msg);
        free(note);
        return;
    }
    if (runtime_exec_answer(cur, value) < 0) {
        char *msg = xasprintf("%s: the kernel could not be reached to deliver the input", tool);
        mcp_call_text(call, msg, true);
        free(msg);
        return;
    }
    if (runtime_exec_claim(cur) < 0) {
        s_input_sent(ctx, call, cur);
        return;
    }
    tool_run_follow(ctx, call, cur, wait_s);
}

/* run(input=...): the answer to the input() the session's run waits on. */
static void s_answer(tools_ctx_t *ctx, mcp_call_t *call, runtime_exec_t *cur, bool waiting, uintptr_t me,
                     const char *input, double wait_s)
{
    if (waiting && runtime_exec_owner(cur) && runtime_exec_owner(cur) != me) {
        /* A prompt is answered by the session whose run asked, and the
         * rest of that run's output goes to it alone. */
        char *msg = xasprintf("run: the input() waiting is exec #%ld's, a run of another session; only "
                              "that session can answer it (ctl(op=\"cancel\") stops it)",
                              runtime_exec_number(cur));
        mcp_call_text(call, msg, true);
        free(msg);
        return;
    }
    if (!waiting) {
        mcp_call_text(call, "run: no input() is waiting for an answer. Run code first; when it calls input(), "
                            "the result says INPUT REQUESTED.", true);
        return;
    }
    if (runtime_exec_answer(cur, input) < 0) {
        mcp_call_text(call, "run: the kernel could not be reached to deliver the input", true);
        return;
    }
    if (runtime_exec_claim(cur) < 0) {
        /* The output belongs to the call that follows the run. */
        s_input_sent(ctx, call, cur);
        return;
    }
    tool_run_follow(ctx, call, cur, wait_s);
}

static void s_run(mcp_call_t *call, json_object *args, void *ud)
{
    tools_ctx_t *ctx = ud;
    json_object *v = NULL;
    const char *code = json_object_object_get_ex(args, "code", &v) ? json_object_get_string(v) : NULL;
    const char *input = json_object_object_get_ex(args, "input", &v) ? json_object_get_string(v) : NULL;
    bool allow_input = !json_object_object_get_ex(args, "allow_input", &v) || json_object_get_boolean(v);
    double wait_s = json_object_object_get_ex(args, "wait", &v) ? json_object_get_double(v) : TOOLS_DEFAULT_WAIT_S;
    if (!isfinite(wait_s) || wait_s < 0)
        wait_s = TOOLS_DEFAULT_WAIT_S;
    if (tool_run_holds(mcp_call_session(call)) && wait_s == TOOLS_DEFAULT_WAIT_S)
        wait_s = HOLD_WAIT_S;
    if (mcp_call_request_state(call)) {
        tool_run_resume(ctx, call, "run", wait_s);
        return;
    }
    runtime_exec_t *cur = runtime_current(ctx->rt);
    bool waiting = cur && runtime_exec_state(cur) == RUNTIME_EXEC_INPUT;
    uintptr_t me = (uintptr_t)mcp_session_serial(mcp_call_session(call));
    char *answer = NULL; /* owned: a terminal client's code taken as the answer */
    if (!input && code && waiting && (!runtime_exec_owner(cur) || runtime_exec_owner(cur) == me) &&
        termcli_mode(mcp_call_session(call)) != TERMCLI_NONE) {
        /* mcp2cli and mcptocli cannot send `input` (termcli.h): while their
         * own run's input() waits, `py run Alice` answers it. */
        answer = termcli_answer(code);
        input = answer;
        code = NULL;
    }
    bool has_code = code && code[strspn(code, " \t\r\n")] != '\0';
    if (input && has_code) {
        mcp_call_text(call, "run: give either code (to execute) or input (to answer a pending input()), not both", true);
        return;
    }
    if (input) {
        s_answer(ctx, call, cur, waiting, me, input, wait_s);
        free(answer);
        return;
    }
    if (!has_code) {
        mcp_call_text(call, "run: code is empty. Pass the code to execute, or input (with code \"\") to answer a pending input().", true);
        return;
    }
    if (strlen(code) > TOOLS_MAX_CODE) {
        mcp_call_text(call, "run: code is larger than 4 MiB; write it to a file and run that file instead", true);
        return;
    }
    if (waiting) {
        bool password = false;
        const char *prompt = runtime_exec_prompt(cur, &password);
        buf_t b;
        buf_init(&b, 0);
        buf_printf(&b, "INPUT PENDING: exec #%ld is waiting for input ", runtime_exec_number(cur));
        buf_put_json_str(&b, prompt ? prompt : "", prompt ? strlen(prompt) : 0);
        buf_puts(&b, ". Answer it with run(code=\"\", input=\"...\") or stop it with ctl(op=\"cancel\"), then run new code.");
        mcp_call_text(call, buf_str(&b), true);
        buf_free(&b);
        return;
    }
    char full[256] = "run: the queue has no room for this run";
    if (!runtime_queue_room(ctx->rt, strlen(code), full, sizeof full)) {
        mcp_call_text(call, full, true);
        return;
    }
    workdir_on_run(ctx->workdir); /* a run is about to be queued */
    runtime_exec_t *ex = runtime_execute(ctx->rt, code, allow_input);
    if (!ex) {
        mcp_call_text(call, full, true);
        return;
    }
    runtime_exec_set_owner(ex, me);
    tool_run_follow(ctx, call, ex, wait_s);
}

const char *tools_instructions(void)
{
    return "A live, persistent Jupyter kernel (Python by default); state survives between calls.\n"
           "- run(code): execute code; the result is the output, then a footer like `✓ 3ms | 2 vars` "
           "(✗ on error). If it says INPUT REQUESTED, answer with run(code=\"\", input=\"...\"). Long runs return "
           "after `wait` seconds with `⏳ running`: follow with ctl(op=\"wait\") or stop with ctl(op=\"cancel\").\n"
           "- look(): the variables; look(at=\"x\") inspects x (drill down: data.scores.0, model.layers.0); "
           "look(code=\"math.sq\", cursor=7) completes.\n"
           "- ctl(op): reset (clear variables), cancel (interrupt), restart (fresh interpreter), "
           "status, wait.";
}

/* `input` without `code` counts as code "" (vscode-rat answers input()
 * that way; `code` stays required in the schema, which makes it mcp2cli's
 * positional argument). */
static json_object *s_prepare(json_object *args)
{
    json_object *in = NULL, *code = NULL;
    bool has_input = json_object_object_get_ex(args, "input", &in) && in && !json_object_is_type(in, json_type_null);
    bool has_code = json_object_object_get_ex(args, "code", &code) && code && !json_object_is_type(code, json_type_null);
    if (!has_input || has_code)
        return json_object_get(args);
    json_object *copy = NULL;
    json_object_deep_copy(args, &copy, NULL);
    json_object_object_add(copy, "code", json_object_new_string(""));
    return copy;
}

void tool_run_describe(mcp_tool_t *out)
{
    *out = (mcp_tool_t){
        .name = "run",
        .title = "Run code",
        .description = "Execute code in the persistent kernel and return its output (stdout, stderr, the value "
                       "of the last expression, errors) with a status footer. Also answers a pending input() "
                       "prompt when called with `input` (and `code` empty).",
        .input_schema = s_schema,
        .output_schema = tools_schema("run"),
        .prepare = s_prepare,
        .destructive = true,
        .task_support = MCP_TASK_OPTIONAL, /* a run outliving `wait` becomes a task (doc/mcp.md) */
        .task_self = true,
    };
}

void tool_run_register(mcp_server_t *srv, tools_ctx_t *ctx)
{
    mcp_tool_t t;
    tool_run_describe(&t);
    t.fn = s_run;
    t.ud = ctx;
    mcp_server_add_tool(srv, &t);
}
