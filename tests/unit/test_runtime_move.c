/* Unit tests of the runtime's moves (runtime_move: the kernel follows the
 * client's roots): after a running cell, before the first run, a fresh kernel
 * replaced for another interpreter, an interpreter at the next restart, a
 * refused move put back. The fake kernel connection and the harness:
 * runtime_fake.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "fileio.h"
#include "kernel_proc.h"
#include "loop.h"
#include "mem.h"
#include "runtime.h"
#include "runtime_fake.h"

/* ------------------------------------------------------------ moves */

static char g_dir2[64];

typedef struct {
    int calls;
    runtime_move_result_t result;
    char why[256];
} s_moved_t;

static void s_moved(void *ud, runtime_move_result_t result, const char *why)
{
    s_moved_t *m = ud;
    m->calls++;
    m->result = result;
    snprintf(m->why, sizeof m->why, "%s", why ? why : "");
}

static const char *s_cwd(void)
{
    runtime_status_t st;
    runtime_status(g_rt, &st);
    return st.cwd;
}

/* Where in fc's ring the newest message of msg_type containing needle
 * went (its sequence number), or -1. */
static long s_sent_seq(rtfake_conn_t *fc, const char *msg_type, const char *needle)
{
    for (size_t k = fc->nsent; k > 0 && fc->nsent - k < RTFAKE_MAX_SENT; k--) {
        rtfake_sent_t *s = &fc->sent[(k - 1) % RTFAKE_MAX_SENT];
        if (strcmp(s->type, msg_type) == 0 && (!needle || strstr(s->content, needle)))
            return (long)k;
    }
    return -1;
}

/* Answers the silent execute whose code contains needle. */
static void s_answer_silent(rtfake_conn_t *fc, const char *needle, const char *status)
{
    rtfake_sent_t *ex = rtfake_last_sent(fc, "execute_request", needle);
    CHECK(ex != NULL);
    if (!ex)
        return;
    char *reply = strcmp(status, "ok") == 0
                      ? xstrdup("{\"status\":\"ok\",\"execution_count\":1,\"user_expressions\":{}}")
                      : xstrdup("{\"status\":\"error\",\"ename\":\"FileNotFoundError\",\"evalue\":\"gone\","
                                "\"traceback\":[]}");
    rtfake_push(fc, KCHAN_SHELL, "execute_reply", ex->id, reply);
    free(reply);
    rtfake_deliver(fc);
}

/* A move asked while a cell runs waits for it to end, then the kernel
 * changes directory in place (variables kept); the note reaches the next
 * result. A move the kernel refuses puts everything back. */
static void test_move_waits_for_the_running_cell(void)
{
    rtfake_start_ready(false);
    rtfake_obs_t o;
    rtfake_run("import time; time.sleep(5)", &o);
    s_moved_t mv = {0};
    runtime_move(g_rt, &(runtime_place_t){.cwd = g_dir2, .python = "600"}, s_moved, &mv);
    CHECK_EQ_INT(mv.calls, 0);
    CHECK(rtfake_last_sent(g_conns[0], "execute_request", "os.chdir") == NULL);
    runtime_status_t st;
    runtime_status(g_rt, &st);
    CHECK_EQ_STR(st.move_to, g_dir2);
    CHECK_EQ_STR(st.cwd, g_dir);
    rtfake_answer_run(g_conns[0], "ok", NULL);
    CHECK_EQ_INT(o.done, 1);
    CHECK(rtfake_last_sent(g_conns[0], "execute_request", "os.chdir") != NULL);
    CHECK_EQ_STR(s_cwd(), g_dir2);
    CHECK_EQ_INT(mv.calls, 0); /* until the kernel answers */
    s_answer_silent(g_conns[0], "os.chdir", "ok");
    CHECK_EQ_INT(mv.calls, 1);
    CHECK_EQ_INT(mv.result, RUNTIME_MOVE_IN_PLACE);
    CHECK_EQ_INT(g_nconns, 1); /* the same kernel */
    runtime_note(g_rt, "[moved]");
    rtfake_obs_t o2;
    rtfake_run("print(2)", &o2);
    rtfake_answer_run(g_conns[0], "ok", "2\\n");
    CHECK(strncmp(o2.out, "[moved]\n2", 9) == 0);
    /* Refused: the directory stays the old one. */
    s_moved_t mv2 = {0};
    runtime_move(g_rt, &(runtime_place_t){.cwd = g_dir, .python = "600"}, s_moved, &mv2);
    s_answer_silent(g_conns[0], "os.chdir", "error");
    CHECK_EQ_INT(mv2.calls, 1);
    CHECK_EQ_INT(mv2.result, RUNTIME_MOVE_FAILED);
    CHECK(strstr(mv2.why, "gone") != NULL);
    CHECK_EQ_STR(s_cwd(), g_dir2);
    rtfake_stop();
}

/* A kernel that has run nothing is replaced by one started in the new
 * place when that needs another interpreter; runs queued meanwhile go to
 * the new one. */
static void test_move_replaces_a_fresh_kernel(void)
{
    rtfake_start_ready(false);
    s_moved_t mv = {0};
    runtime_move(g_rt, &(runtime_place_t){.cwd = g_dir2, .python = "601", .interpreter = "/venv/python"}, s_moved,
                 &mv);
    CHECK_EQ_INT(mv.calls, 1);
    CHECK_EQ_INT(mv.result, RUNTIME_MOVE_STARTED);
    CHECK_EQ_INT(g_nconns, 2);
    CHECK(g_conns[0] == NULL); /* the old one is gone */
    runtime_status_t st;
    runtime_status(g_rt, &st);
    CHECK_EQ_STR(st.cwd, g_dir2);
    CHECK_EQ_STR(st.interpreter, "/venv/python");
    rtfake_obs_t o;
    rtfake_run("print(1)", &o);
    rtfake_handshake(g_conns[1]);
    rtfake_answer_run(g_conns[1], "ok", "1\\n");
    CHECK_EQ_INT(o.outcome, RUNTIME_OK);
    rtfake_stop();
}

/* Held runs wait; a kernel that ran nothing moves in place as soon as it
 * is ready, before the first run, which goes once the hold is released. */
static void test_move_before_the_first_run(void)
{
    rtfake_start(false);
    runtime_hold(g_rt, true);
    rtfake_obs_t o;
    rtfake_run("print(1)", &o);
    s_moved_t mv = {0};
    runtime_move(g_rt, &(runtime_place_t){.cwd = g_dir2, .python = "600"}, s_moved, &mv);
    CHECK_EQ_INT(g_nconns, 1); /* booting with the same interpreter: kept */
    rtfake_handshake(g_conns[0]);
    long chdir_at = s_sent_seq(g_conns[0], "execute_request", "os.chdir");
    CHECK(chdir_at > 0);
    CHECK(rtfake_last_sent(g_conns[0], "execute_request", "\"store_history\":true") == NULL); /* held */
    runtime_hold(g_rt, false);
    rtfake_settle();
    CHECK(rtfake_last_sent(g_conns[0], "execute_request", "\"store_history\":true") == NULL); /* the move first */
    s_answer_silent(g_conns[0], "os.chdir", "ok");
    CHECK_EQ_INT(mv.result, RUNTIME_MOVE_IN_PLACE);
    CHECK(s_sent_seq(g_conns[0], "execute_request", "\"store_history\":true") > chdir_at);
    rtfake_answer_run(g_conns[0], "ok", "1\\n");
    CHECK_EQ_INT(o.done, 1);
    rtfake_stop();
}

/* A used kernel whose new place needs another interpreter changes
 * directory now and interpreter at the next restart; a move still waiting
 * at a restart is made by it. */
static void test_move_interpreter_at_restart(void)
{
    rtfake_start_ready(false);
    rtfake_obs_t o;
    rtfake_run("x = 1", &o);
    rtfake_answer_run(g_conns[0], "ok", NULL);
    s_moved_t mv = {0};
    runtime_move(g_rt, &(runtime_place_t){.cwd = g_dir2, .python = "601", .interpreter = "/venv/python"}, s_moved,
                 &mv);
    s_answer_silent(g_conns[0], "os.chdir", "ok");
    CHECK_EQ_INT(mv.result, RUNTIME_MOVE_PARTLY);
    runtime_status_t st;
    runtime_status(g_rt, &st);
    CHECK_EQ_STR(st.next_interpreter, "/venv/python");
    rtfake_done_t d = {0};
    runtime_restart(g_rt, rtfake_done, &d);
    CHECK_EQ_INT(g_nconns, 2);
    runtime_status(g_rt, &st);
    CHECK_EQ_STR(st.interpreter, "/venv/python");
    CHECK(st.next_interpreter == NULL);
    rtfake_handshake(g_conns[1]);
    CHECK_EQ_INT(d.calls, 1);
    /* Busy: the move waits, and the restart makes it. */
    rtfake_run("import time; time.sleep(5)", &o);
    s_moved_t mv2 = {0};
    runtime_move(g_rt, &(runtime_place_t){.cwd = g_dir, .python = "601"}, s_moved, &mv2);
    CHECK_EQ_INT(mv2.calls, 0);
    rtfake_done_t d2 = {0};
    runtime_restart(g_rt, rtfake_done, &d2);
    CHECK_EQ_INT(mv2.calls, 1);
    CHECK_EQ_INT(mv2.result, RUNTIME_MOVE_STARTED);
    CHECK_EQ_STR(s_cwd(), g_dir);
    rtfake_stop();
}

int main(void)
{
    if (rtfake_setup() != 0)
        return 2;
    snprintf(g_dir2, sizeof g_dir2, "/tmp/rat-test-runtime2-XXXXXX");
    if (!mkdtemp(g_dir2))
        return 2;
    RUN_CASE(test_move_waits_for_the_running_cell);
    RUN_CASE(test_move_replaces_a_fresh_kernel);
    RUN_CASE(test_move_before_the_first_run);
    RUN_CASE(test_move_interpreter_at_restart);
    rtfake_teardown();
    rmdir(g_dir2);
    return check_report("unit.runtime_move");
}
