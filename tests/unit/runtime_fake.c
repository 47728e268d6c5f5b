/* runtime_fake: the runtime tests' fake kernel connection and harness
 * (runtime_fake.h says what they are for). */
#define CHECK_HELPER
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "fileio.h"
#include "mem.h"
#include "output.h"
#include "runtime_fake.h"

loop_t *g_loop;
runtime_t *g_rt;
rtfake_conn_t *g_conns[RTFAKE_MAX_CONNS];
int g_nconns;
char g_dir[64];

/* ------------------------------------------------------------ the fake */

static int s_fake_send(kernel_conn_t *base, kchan_t ch, const char *msg_type, const char *content,
                       json_object *parent, char id_out[WIRE_ID_LEN + 1])
{
    (void)parent;
    rtfake_conn_t *fc = (rtfake_conn_t *)base;
    rtfake_sent_t *s = &fc->sent[fc->nsent++ % RTFAKE_MAX_SENT];
    free(s->content);
    s->ch = ch;
    snprintf(s->type, sizeof s->type, "%s", msg_type);
    wire_new_id(s->id);
    s->content = xstrdup(content ? content : "{}");
    if (id_out)
        memcpy(id_out, s->id, WIRE_ID_LEN + 1);
    return 0;
}

static void s_fake_heartbeat(kernel_conn_t *base, int interval_ms, int tolerance_ms)
{
    (void)base;
    (void)interval_ms;
    (void)tolerance_ms;
}

static void s_fake_stats(const kernel_conn_t *base, kconn_stats_t *out)
{
    (void)base;
    memset(out, 0, sizeof *out);
    out->hb_ok = true;
    out->hb_rtt_us = -1;
}

static void s_fake_destroy(kernel_conn_t *base)
{
    rtfake_conn_t *fc = (rtfake_conn_t *)base;
    g_conns[fc->index] = NULL;
    for (size_t i = 0; i < RTFAKE_MAX_SENT; i++)
        free(fc->sent[i].content);
    for (size_t i = 0; i < fc->ninbox; i++)
        wire_msg_free(&fc->inbox[i]);
    free(fc);
}

static const kernel_conn_ops_t s_fake_ops = {
    .send = s_fake_send,
    .heartbeat = s_fake_heartbeat,
    .stats = s_fake_stats,
    .destroy = s_fake_destroy,
};

kernel_conn_t *rtfake_connect(void *factory_ud, loop_t *loop, const connfile_t *ci, kernel_conn_msg_fn *on_msg,
                              kernel_conn_event_fn *on_event, void *ud, char *err, size_t errlen)
{
    (void)factory_ud;
    (void)loop;
    (void)ci;
    if (g_nconns >= RTFAKE_MAX_CONNS) {
        snprintf(err, errlen, "too many fake connections");
        return NULL;
    }
    rtfake_conn_t *fc = xcalloc(1, sizeof *fc);
    fc->base.ops = &s_fake_ops;
    fc->base.on_msg = on_msg;
    fc->base.on_event = on_event;
    fc->base.ud = ud;
    fc->index = g_nconns;
    snprintf(fc->session, sizeof fc->session, "fake-kernel-%d", g_nconns);
    g_conns[g_nconns++] = fc;
    return &fc->base;
}

/* The newest message of msg_type the kernel side received (NULL if none);
 * with needle, the newest whose content contains it. */
rtfake_sent_t *rtfake_last_sent(rtfake_conn_t *fc, const char *msg_type, const char *needle)
{
    for (size_t k = fc->nsent; k > 0 && fc->nsent - k < RTFAKE_MAX_SENT; k--) {
        rtfake_sent_t *s = &fc->sent[(k - 1) % RTFAKE_MAX_SENT];
        if (strcmp(s->type, msg_type) == 0 && (!needle || strstr(s->content, needle)))
            return s;
    }
    return NULL;
}

/* Queues a message from the kernel; rtfake_deliver hands the batch over. */
void rtfake_push(rtfake_conn_t *fc, kchan_t ch, const char *msg_type, const char *parent_id, const char *content)
{
    if (fc->ninbox >= RTFAKE_MAX_INBOX)
        abort();
    wire_msg_t *m = &fc->inbox[fc->ninbox];
    fc->inbox_ch[fc->ninbox++] = ch;
    memset(m, 0, sizeof *m);
    char id[WIRE_ID_LEN + 1];
    wire_new_id(id);
    m->header = json_object_new_object();
    json_object_object_add(m->header, "msg_id", json_object_new_string(id));
    json_object_object_add(m->header, "msg_type", json_object_new_string(msg_type));
    json_object_object_add(m->header, "session", json_object_new_string(fc->session));
    m->parent = json_object_new_object();
    if (parent_id)
        json_object_object_add(m->parent, "msg_id", json_object_new_string(parent_id));
    m->content = json_tokener_parse(content ? content : "{}");
    m->msg_type = wire_get_str(m->header, "msg_type");
    m->msg_id = wire_get_str(m->header, "msg_id");
    m->session = wire_get_str(m->header, "session");
    m->parent_id = parent_id ? wire_get_str(m->parent, "msg_id") : NULL;
}

/* Delivers the queued batch the way kernel_zmq's receive loop does: fc is
 * used again after every handler returns. */
void rtfake_deliver(rtfake_conn_t *fc)
{
    for (size_t i = 0; i < fc->ninbox; i++) {
        fc->base.on_msg(fc->base.ud, fc->inbox_ch[i], &fc->inbox[i]);
        wire_msg_free(&fc->inbox[i]);
    }
    fc->ninbox = 0;
}

/* Plays the kernel's side of the readiness handshake: channels up, iopub
 * traffic, kernel_info_reply. The kernel becomes ready inside the last
 * message's handler, as it does over ZeroMQ. */
const char *g_language = "python";

void rtfake_handshake(rtfake_conn_t *fc)
{
    fc->base.on_event(fc->base.ud, KCONN_UP);
    rtfake_sent_t *info = rtfake_last_sent(fc, "kernel_info_request", NULL);
    CHECK(info != NULL);
    rtfake_push(fc, KCHAN_IOPUB, "status", NULL, "{\"execution_state\":\"idle\"}");
    char *reply = xasprintf("{\"status\":\"ok\",\"implementation\":\"%s\",\"protocol_version\":\"5.3\","
                            "\"language_info\":{\"name\":\"%s\"}}",
                            strcmp(g_language, "R") == 0 ? "IRkernel" : "ipython", g_language);
    rtfake_push(fc, KCHAN_SHELL, "kernel_info_reply", info ? info->id : NULL, reply);
    free(reply);
    rtfake_deliver(fc);
}

/* Answers the user execution (store_history true) last sent to fc. */
void rtfake_answer_run(rtfake_conn_t *fc, const char *status, const char *stdout_text)
{
    rtfake_sent_t *ex = rtfake_last_sent(fc, "execute_request", "\"store_history\":true");
    CHECK(ex != NULL);
    if (!ex)
        return;
    char id[WIRE_ID_LEN + 1];
    memcpy(id, ex->id, sizeof id);
    rtfake_push(fc, KCHAN_IOPUB, "status", id, "{\"execution_state\":\"busy\"}");
    rtfake_push(fc, KCHAN_IOPUB, "execute_input", id, "{\"execution_count\":1,\"code\":\"\"}");
    if (stdout_text) {
        char *c = xasprintf("{\"name\":\"stdout\",\"text\":\"%s\"}", stdout_text);
        rtfake_push(fc, KCHAN_IOPUB, "stream", id, c);
        free(c);
    }
    if (strcmp(status, "error") == 0)
        rtfake_push(fc, KCHAN_IOPUB, "error", id,
               "{\"ename\":\"ZeroDivisionError\",\"evalue\":\"division by zero\",\"traceback\":[]}");
    rtfake_push(fc, KCHAN_IOPUB, "status", id, "{\"execution_state\":\"idle\"}");
    char *reply = strcmp(status, "error") == 0
                      ? xasprintf("{\"status\":\"error\",\"execution_count\":1,\"ename\":\"ZeroDivisionError\","
                                  "\"evalue\":\"division by zero\",\"traceback\":[]}")
                      : xasprintf("{\"status\":\"%s\",\"execution_count\":1,\"user_expressions\":{}}", status);
    rtfake_push(fc, KCHAN_SHELL, "execute_reply", id, reply);
    free(reply);
    rtfake_deliver(fc);
}

/* ------------------------------------------------------------ harness */

int rtfake_live_conns(void)
{
    int n = 0;
    for (int i = 0; i < g_nconns; i++)
        n += g_conns[i] != NULL;
    return n;
}

void rtfake_settle(void)
{
    for (int i = 0; i < 10; i++)
        loop_run_once(g_loop, 0);
}

const char *rtfake_state(void)
{
    runtime_status_t st;
    runtime_status(g_rt, &st);
    return st.state;
}

bool rtfake_state_is(const char *want)
{
    return strcmp(rtfake_state(), want) == 0;
}

pid_t rtfake_pid(bool spare)
{
    runtime_status_t st;
    runtime_status(g_rt, &st);
    return spare ? st.spare_pid : st.pid;
}

/* runtime_new, then the loop's first pass, which launches the kernel: none
 * is launched before it (the MCP handshake waiting on stdin is answered
 * first, server.c). */
runtime_t *rtfake_runtime_new(const runtime_opts_t *o, char *err, size_t errlen)
{
    runtime_t *rt = runtime_new(g_loop, o, err, errlen);
    CHECK(rt != NULL);
    if (!rt)
        return NULL;
    runtime_status_t st;
    runtime_status(rt, &st);
    CHECK_EQ_INT(g_nconns, 0);
    CHECK_EQ_INT(st.pid, 0);
    CHECK_EQ_STR(st.state, "starting");
    loop_run_once(g_loop, 0);
    return rt;
}

/* The kernel process is a `sleep` launched from a kernelspec in g_dir (the
 * --kernelspec-dir path), its {python} the seconds: "600", or "601" for the
 * "other interpreter" a move may bring; the fake connection plays its
 * channels. */
void rtfake_write_spec(void)
{
    char *spec = xasprintf("%s/kernel.json", g_dir);
    static const char json[] = "{\"argv\": [\"sleep\", \"{python}\"], \"language\": \"python\"}";
    CHECK(fileio_write_atomic(spec, json, sizeof json - 1, 0600) == 0);
    free(spec);
}

runtime_opts_t rtfake_opts(bool spare)
{
    return (runtime_opts_t){
        .kernelspec_dir = g_dir,
        .python = "600",
        .cwd = g_dir,
        .runtime_dir = g_dir,
        .assets_dir = g_dir,
        .boot_timeout_ms = 30000,
        .spare = spare,
        .connect = rtfake_connect,
    };
}

void rtfake_start(bool spare)
{
    rtfake_write_spec();
    runtime_opts_t o = rtfake_opts(spare);
    char err[256] = "";
    memset(g_conns, 0, sizeof g_conns);
    g_nconns = 0;
    g_rt = rtfake_runtime_new(&o, err, sizeof err);
    CHECK(g_rt != NULL);
    CHECK_EQ_INT(g_nconns, 1);
}

void rtfake_stop(void)
{
    runtime_destroy(&g_rt, 0);
    rtfake_settle();
    CHECK_EQ_INT(rtfake_live_conns(), 0);
}

/* Boots the session's kernel (connection 0). */
void rtfake_start_ready(bool spare)
{
    rtfake_start(spare);
    rtfake_handshake(g_conns[0]);
    CHECK_EQ_STR(rtfake_state(), "idle");
}

/* Waits for the spare's connection (the next one) and, with ready, boots it. */
rtfake_conn_t *rtfake_spare_conn(int index, bool ready)
{
    SPIN_UNTIL(g_nconns > index, 10000);
    CHECK(g_nconns > index);
    if (g_nconns <= index)
        return NULL;
    rtfake_conn_t *fc = g_conns[index];
    if (ready && fc)
        rtfake_handshake(fc);
    return fc;
}

/* Kills the session's kernel process and waits until the runtime saw it. */
void rtfake_kill_kernel(void)
{
    pid_t pid = rtfake_pid(false);
    CHECK(pid > 0);
    int before = g_nconns;
    kill(pid, SIGKILL);
    SPIN_UNTIL(g_nconns > before || rtfake_state_is("dead"), 10000);
}

static void s_on_done(void *ud, runtime_exec_t *ex)
{
    rtfake_obs_t *o = ud;
    o->done++;
    o->outcome = runtime_exec_outcome(ex);
    snprintf(o->why, sizeof o->why, "%s", runtime_exec_why(ex) ? runtime_exec_why(ex) : "");
    buf_t b;
    buf_init(&b, 0);
    output_render(runtime_exec_output(ex), &b);
    snprintf(o->out, sizeof o->out, "%s", buf_str(&b));
    buf_free(&b);
    if (o->release) {
        runtime_exec_release(ex, false);
        o->ex = NULL;
    }
}

static const runtime_observer_t s_observer = {.on_done = s_on_done};

runtime_exec_t *rtfake_run(const char *code, rtfake_obs_t *o)
{
    memset(o, 0, sizeof *o);
    o->release = true;
    runtime_exec_t *ex = runtime_execute(g_rt, code, false);
    o->ex = ex;
    runtime_exec_observe(ex, &s_observer, o);
    return ex;
}

void rtfake_done(void *ud, bool ok, const char *text)
{
    rtfake_done_t *d = ud;
    d->calls++;
    d->ok = ok;
    snprintf(d->text, sizeof d->text, "%s", text ? text : "");
}

int rtfake_setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    snprintf(g_dir, sizeof g_dir, "/tmp/rat-test-runtime-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    g_loop = loop_new();
    return 0;
}

void rtfake_teardown(void)
{
    loop_destroy(&g_loop);
    char *spec = xasprintf("%s/kernel.json", g_dir);
    unlink(spec);
    free(spec);
    rmdir(g_dir);
}
