/* Unit tests of the runtime's supervision (bridge/runtime/runtime.c, bridge/jupyter/kernel.c):
 * deaths, automatic and requested restarts, the warm spare and resets, in
 * orders a real kernel produces only by chance. The fake kernel connection
 * and the harness: runtime_fake.h. The runs themselves (snapshots,
 * completions, the interrupt barrier, the queue) are test_runtime_runs.c's,
 * moves test_runtime_move.c's. */
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

/* The kernel dies while a run is going and another is queued: both fail,
 * saying why, and a new kernel starts by itself. */
static void test_death_while_running(void)
{
    rtfake_start_ready(false);
    rtfake_obs_t o1, o2;
    rtfake_run("import time; time.sleep(60)", &o1);
    rtfake_run("print(3)", &o2);
    rtfake_kill_kernel();
    CHECK_EQ_INT(o1.done, 1);
    CHECK_EQ_INT(o1.outcome, RUNTIME_FAILED);
    CHECK(strstr(o1.why, "a new kernel is starting") != NULL);
    CHECK_EQ_INT(o2.outcome, RUNTIME_FAILED);
    CHECK(strstr(o2.why, "not run") != NULL);
    CHECK_EQ_INT(g_nconns, 2);
    CHECK_EQ_STR(rtfake_state(), "restarting");
    rtfake_handshake(g_conns[1]);
    CHECK_EQ_STR(rtfake_state(), "idle");
    rtfake_obs_t o3;
    rtfake_run("print(4)", &o3);
    rtfake_answer_run(g_conns[1], "ok", "4\\n");
    CHECK_EQ_INT(o3.outcome, RUNTIME_OK);
    CHECK_EQ_STR(o3.out, "4"); /* the death was told in o1's result already */
    rtfake_stop();
}

/* Crash 1: with --spare, the kernel dies while the spare boots; a reset of
 * scope all waits for the automatic restart; the spare is ready first, so
 * when the restarted kernel becomes ready (inside its connection's receive
 * loop) the pending reset swaps the spare in and destroys that kernel. */
static void test_reset_all_during_restart_swaps_spare(void)
{
    rtfake_start_ready(true);
    rtfake_conn_t *spare = rtfake_spare_conn(1, false); /* booting, not ready */
    CHECK(spare != NULL);
    rtfake_kill_kernel();
    CHECK_EQ_INT(g_nconns, 3);
    CHECK_EQ_STR(rtfake_state(), "restarting");
    rtfake_done_t d = {0};
    runtime_reset(g_rt, true, rtfake_done, &d);
    CHECK_EQ_INT(d.calls, 0); /* waits for the restart */
    rtfake_handshake(g_conns[1]);  /* the spare is ready */
    CHECK_EQ_INT(d.calls, 0);
    rtfake_handshake(g_conns[2]);  /* the restarted kernel: pending reset -> swap */
    CHECK_EQ_INT(d.calls, 1);
    CHECK(d.ok);
    rtfake_settle();
    CHECK(g_conns[2] == NULL); /* destroyed, from the loop */
    CHECK(g_conns[1] != NULL); /* the spare is the session's kernel now */
    CHECK_EQ_STR(rtfake_state(), "idle");
    rtfake_obs_t o;
    rtfake_run("print(5)", &o);
    rtfake_answer_run(g_conns[1], "ok", "5\\n");
    CHECK_EQ_INT(o.outcome, RUNTIME_OK);
    rtfake_stop();
}

/* ctl restart with a ready spare: the running run fails, the spare takes
 * over at once and a new spare boots later. */
static void test_restart_swaps_ready_spare(void)
{
    rtfake_start_ready(true);
    rtfake_spare_conn(1, true);
    rtfake_obs_t o;
    rtfake_run("import time; time.sleep(60)", &o);
    rtfake_done_t d = {0};
    runtime_restart(g_rt, rtfake_done, &d);
    CHECK_EQ_INT(d.calls, 1);
    CHECK(d.ok);
    CHECK_EQ_INT(o.outcome, RUNTIME_FAILED);
    rtfake_settle();
    CHECK(g_conns[0] == NULL);
    CHECK_EQ_STR(rtfake_state(), "idle");
    rtfake_spare_conn(2, false); /* the next spare boots */
    rtfake_stop();
}

/* ctl restart without a spare, and the new kernel dies before it is ready:
 * the restart fails and says why; the next run starts another kernel. */
static void test_restart_then_death_while_starting(void)
{
    rtfake_start_ready(false);
    rtfake_done_t d = {0};
    runtime_restart(g_rt, rtfake_done, &d);
    CHECK_EQ_INT(d.calls, 0);
    CHECK_EQ_INT(g_nconns, 2);
    rtfake_kill_kernel();
    SPIN_UNTIL(d.calls, 10000);
    CHECK_EQ_INT(d.calls, 1);
    CHECK(!d.ok);
    CHECK_EQ_STR(rtfake_state(), "dead");
    rtfake_obs_t o;
    rtfake_run("print(6)", &o);
    CHECK_EQ_INT(g_nconns, 3);
    rtfake_handshake(g_conns[2]);
    rtfake_answer_run(g_conns[2], "ok", "6\\n");
    CHECK_EQ_INT(o.outcome, RUNTIME_OK);
    rtfake_stop();
}

/* The spare dies while it boots: the session's kernel is untouched and a
 * new spare boots; a restart afterwards still works. */
static void test_spare_death(void)
{
    rtfake_start_ready(true);
    rtfake_spare_conn(1, false);
    pid_t sp = rtfake_pid(true);
    CHECK(sp > 0);
    kill(sp, SIGKILL);
    SPIN_UNTIL(g_conns[1] == NULL, 10000);
    CHECK(g_conns[1] == NULL);
    CHECK_EQ_STR(rtfake_state(), "idle");
    rtfake_conn_t *again = rtfake_spare_conn(2, true);
    CHECK(again != NULL);
    rtfake_done_t d = {0};
    runtime_restart(g_rt, rtfake_done, &d);
    CHECK(d.ok);
    rtfake_stop();
}

/* A reset (namespace) during an automatic restart without a spare runs on
 * the new kernel once it is ready. */
static void test_reset_during_restart(void)
{
    rtfake_start_ready(false);
    rtfake_kill_kernel();
    rtfake_done_t d = {0};
    runtime_reset(g_rt, false, rtfake_done, &d);
    CHECK_EQ_INT(d.calls, 0);
    rtfake_handshake(g_conns[1]);
    rtfake_sent_t *r = rtfake_last_sent(g_conns[1], "execute_request", "reset");
    CHECK(r != NULL);
    if (r) {
        char id[WIRE_ID_LEN + 1];
        memcpy(id, r->id, sizeof id);
        rtfake_push(g_conns[1], KCHAN_SHELL, "execute_reply", id, "{\"status\":\"ok\",\"user_expressions\":{}}");
        rtfake_deliver(g_conns[1]);
    }
    CHECK_EQ_INT(d.calls, 1);
    CHECK(d.ok);
    rtfake_stop();
}

/* Issue 11 item 14: a restart kills the old kernel and does not wait for
 * it to be reaped (that blocked the loop, and every session, up to 2 s);
 * it is reaped when SIGCHLD is served, and none is left behind. */
static void test_restart_does_not_wait_for_the_old_process(void)
{
    /* Before the fix every attempt fails (the restart reaped it). Under
     * valgrind and load all three once failed too: kernel_proc_destroy
     * stopped the process a second time, reaping it when it had died since
     * the SIGKILL; it no longer does. The attempts stay for an old `sleep`
     * gone before the restart runs. */
    bool waited = true;
    pid_t old = 0;
    rtfake_done_t d = {0};
    for (int attempt = 0; attempt < 3 && waited; attempt++) {
        if (attempt) {
            fprintf(stderr, "note: kernel pid %ld was gone at once; again\n", (long)old);
            rtfake_stop();
        }
        rtfake_start_ready(false);
        old = rtfake_pid(false);
        memset(&d, 0, sizeof d);
        runtime_restart(g_rt, rtfake_done, &d);
        waited = kill(old, 0) != 0;
    }
    CHECK(!waited); /* not reaped inside the restart */
    CHECK_EQ_INT(kernel_proc_orphans(), 1); /* left to the SIGCHLD reaper */
    SPIN_UNTIL(kill(old, 0) < 0, 10000);
    CHECK(kill(old, 0) < 0); /* reaped from the loop */
    CHECK_EQ_INT(kernel_proc_orphans(), 0);
    rtfake_handshake(g_conns[1]);
    CHECK_EQ_INT(d.calls, 1);
    pid_t cur = rtfake_pid(false);
    rtfake_stop();
    CHECK(kill(cur, 0) < 0); /* killed and reaped by runtime_destroy */
}

/* Issue 11 item 7: --existing --allow-restart, ctl restart while still
 * attaching. The old kernel answers (same session) before it shuts down;
 * that must not pass for the restarted kernel. Only a new session does. */
static void test_attached_restart_while_attaching(void)
{
    char file[128];
    snprintf(file, sizeof file, "%s/kernel-attached.json", g_dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("{\"shell_port\": 50001, \"iopub_port\": 50002, \"stdin_port\": 50003, \"control_port\": 50004, "
          "\"hb_port\": 50005, \"ip\": \"127.0.0.1\", \"key\": \"k\", \"transport\": \"tcp\", "
          "\"signature_scheme\": \"hmac-sha256\"}",
          f);
    fclose(f);
    runtime_opts_t o = {
        .existing = file,
        .runtime_dir = g_dir,
        .assets_dir = g_dir,
        .boot_timeout_ms = 30000,
        .allow_restart = true,
        .connect = rtfake_connect,
    };
    char err[256] = "";
    memset(g_conns, 0, sizeof g_conns);
    g_nconns = 0;
    /* The restart comes before the loop's first pass has attached: it must
     * still be the attached kernel's restart, not the attach taken for one. */
    g_rt = runtime_new(g_loop, &o, err, sizeof err);
    CHECK(g_rt != NULL);
    if (!g_rt)
        return;
    CHECK_EQ_INT(g_nconns, 0);
    rtfake_done_t d = {0};
    runtime_restart(g_rt, rtfake_done, &d); /* the first call: still attaching */
    CHECK_EQ_INT(d.calls, 0);
    CHECK_EQ_INT(g_nconns, 1);
    rtfake_conn_t *fc = g_conns[0];
    loop_run_once(g_loop, 0);
    CHECK_EQ_INT(g_nconns, 1);
    CHECK_EQ_INT(d.calls, 0);
    rtfake_handshake(fc); /* attached: now the restart is asked for */
    CHECK(rtfake_last_sent(fc, "shutdown_request", "\"restart\":true") != NULL);
    rtfake_handshake(fc); /* the old kernel, still answering */
    rtfake_settle();
    CHECK_EQ_INT(d.calls, 0);
    CHECK_EQ_STR(rtfake_state(), "restarting");
    snprintf(fc->session, sizeof fc->session, "fake-kernel-restarted");
    rtfake_handshake(fc); /* its owner started a new one */
    CHECK_EQ_INT(d.calls, 1);
    CHECK(d.ok);
    CHECK_EQ_STR(rtfake_state(), "idle");
    runtime_destroy(&g_rt, 0);
    rtfake_settle();
    unlink(file);
}

/* Issue 11 item 11: a kernel that dies when nobody follows a run (idle, or
 * a run whose caller has gone, as xeus-python exiting on an interrupt) is
 * restarted by itself; the next result says so, once. */
static void test_unfollowed_death_is_announced(void)
{
    rtfake_start_ready(false);
    runtime_exec_t *gone = runtime_execute(g_rt, "import time; time.sleep(60)", false);
    runtime_exec_release(gone, true); /* its caller returned before the end */
    rtfake_kill_kernel();
    CHECK_EQ_INT(g_nconns, 2);
    rtfake_handshake(g_conns[1]);
    rtfake_obs_t o;
    rtfake_run("print(x)", &o);
    rtfake_answer_run(g_conns[1], "ok", "7\\n");
    CHECK(strstr(o.out, "[kernel died (signal 9 (Killed)); a new kernel was started, variables are lost]\n7") == o.out);
    rtfake_obs_t o2;
    rtfake_run("print(8)", &o2);
    rtfake_answer_run(g_conns[1], "ok", "8\\n");
    CHECK_EQ_STR(o2.out, "8");
    /* Idle death, then a restart asked for: the restart's answer tells. */
    rtfake_kill_kernel();
    rtfake_done_t d = {0};
    runtime_restart(g_rt, rtfake_done, &d);
    rtfake_handshake(g_conns[3]);
    CHECK(d.ok);
    rtfake_obs_t o3;
    rtfake_run("print(9)", &o3);
    rtfake_answer_run(g_conns[3], "ok", "9\\n");
    CHECK_EQ_STR(o3.out, "9");
    rtfake_stop();
}

/* A kernel freed out of its own death handler is freed from the loop; when
 * the loop stops before that pass (a death, then EOF or SIGTERM in the same
 * pass), loop_destroy must still free it: its ZMQ sockets would otherwise
 * keep the ZeroMQ context's end waiting at exit. */
static void test_death_then_shutdown_frees_the_kernel(void)
{
    loop_t *saved = g_loop;
    g_loop = loop_new();
    rtfake_start_ready(false);
    rtfake_kill_kernel();
    CHECK(g_conns[0] != NULL); /* doomed, its free deferred to the next pass */
    runtime_destroy(&g_rt, 0);
    loop_destroy(&g_loop); /* the loop never ran that pass */
    CHECK(g_conns[0] == NULL);
    CHECK_EQ_INT(rtfake_live_conns(), 0);
    g_loop = saved;
}

int main(void)
{
    if (rtfake_setup() != 0)
        return 2;
    RUN_CASE(test_death_while_running);
    RUN_CASE(test_reset_all_during_restart_swaps_spare);
    RUN_CASE(test_restart_swaps_ready_spare);
    RUN_CASE(test_restart_then_death_while_starting);
    RUN_CASE(test_spare_death);
    RUN_CASE(test_reset_during_restart);
    RUN_CASE(test_restart_does_not_wait_for_the_old_process);
    RUN_CASE(test_attached_restart_while_attaching);
    RUN_CASE(test_unfollowed_death_is_announced);
    RUN_CASE(test_death_then_shutdown_frees_the_kernel);
    rtfake_teardown();
    return check_report("unit.runtime");
}
