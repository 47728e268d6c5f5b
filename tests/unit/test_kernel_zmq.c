/* Unit tests of the ZeroMQ kernel connection (bridge/jupyter/kernel_zmq.c) against
 * sockets playing an already running kernel, as when attaching; and of how
 * kernel_proc starts and ends a kernel process (bridge/jupyter/kernel_proc.c).
 *
 * Issue 14 item 3: the monitor that reports each channel's finished
 * handshake was started after the connect; with a kernel already
 * listening, the handshake could finish first, its event was lost, the
 * connection never reported KCONN_UP and the attach failed after the boot
 * timeout. kernel_zmq_test_connect_delay_ms makes that ordering certain. */
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>
#include <czmq.h>

#include "check.h"
#include "connfile.h"
#include "kernel_proc.h"
#include "kernel_zmq.h"
#include "loop.h"
#include "mem.h"
#include "zmqctx.h"

typedef struct {
    int up;
} s_state_t;

static void s_on_msg(void *ud, kchan_t ch, wire_msg_t *msg)
{
    (void)ud;
    (void)ch;
    (void)msg;
}

static void s_on_event(void *ud, kconn_event_t ev)
{
    s_state_t *st = ud;
    if (ev == KCONN_UP)
        st->up++;
}

static void s_attach_with(int delay_ms)
{
    zmqctx_init();
    loop_t *loop = loop_new();
    static const int types[CONN_NPORTS] = {
        [CONN_SHELL] = ZMQ_ROUTER, [CONN_IOPUB] = ZMQ_PUB, [CONN_STDIN] = ZMQ_ROUTER,
        [CONN_CONTROL] = ZMQ_ROUTER, [CONN_HB] = ZMQ_REP,
    };
    zsock_t *kside[CONN_NPORTS];
    connfile_t ci;
    memset(&ci, 0, sizeof ci);
    snprintf(ci.transport, sizeof ci.transport, "tcp");
    snprintf(ci.ip, sizeof ci.ip, "127.0.0.1");
    snprintf(ci.signature_scheme, sizeof ci.signature_scheme, "hmac-sha256");
    ci.key = xstrdup("secret");
    for (int i = 0; i < CONN_NPORTS; i++) {
        kside[i] = zsock_new(types[i]);
        ci.ports[i] = zsock_bind(kside[i], "tcp://127.0.0.1:*"); /* the port it got */
        CHECK(ci.ports[i] > 0);
    }
    kernel_zmq_test_connect_delay_ms = delay_ms;
    s_state_t st = {0};
    char err[256] = "";
    kernel_conn_t *c = kernel_zmq_new(loop, &ci, s_on_msg, s_on_event, &st, err, sizeof err);
    kernel_zmq_test_connect_delay_ms = 0;
    CHECK(c != NULL);
    /* The bound only catches a lost event (it used to wait forever). */
    int64_t t0 = loop_now_ms();
    while (c && !st.up && loop_now_ms() - t0 < 5000)
        loop_run_once(loop, 10);
    CHECK_EQ_INT(st.up, 1);
    kernel_conn_destroy(&c);
    for (int i = 0; i < CONN_NPORTS; i++)
        zsock_destroy(&kside[i]);
    connfile_free(&ci);
    loop_destroy(&loop);
}

/* The ordinary case: nothing delays the set-up. */
static void test_attach_up(void)
{
    s_attach_with(0);
}

/* Every handshake finishes before the rest of the set-up goes on. */
static void test_attach_up_when_handshakes_finish_first(void)
{
    s_attach_with(300);
}

/* An exec failure is reported by the child through a close-on-exec pipe.
 * With many descriptors open (HTTP mode raises RLIMIT_NOFILE) that pipe can
 * be above 1024; the child's clean-up must not close it, or the failure
 * reads as a successful start (review finding). */
static void test_exec_failure_reported_with_high_fds(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max < 2048) {
        fprintf(stderr, "skip: RLIMIT_NOFILE hard limit below 2048\n");
        return;
    }
    struct rlimit saved = rl;
    rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) { /* e.g. under valgrind, which keeps the top for itself */
        fprintf(stderr, "skip: cannot raise RLIMIT_NOFILE\n");
        return;
    }
    int fillers[1200];
    int nfill = 0;
    while (nfill < 1200) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            break;
        fillers[nfill++] = fd;
    }
    char path[] = "/tmp/rat-test-noexec-XXXXXX";
    int f = mkstemp(path);
    CHECK(f >= 0);
    if (f >= 0) {
        const char text[] = "\x7f" "ELF not really";
        CHECK(write(f, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
        close(f);
        CHECK(chmod(path, 0700) == 0); /* executable, but no format the kernel can load */
        char *argv[] = {path, NULL};
        kernel_proc_opts_t o = {.argv = argv};
        char err[256] = "";
        kernel_proc_t *p = kernel_proc_spawn(&o, err, sizeof err);
        CHECK(p == NULL);
        CHECK(strstr(err, "Exec format error") != NULL);
        if (p) {
            fprintf(stderr, "spawned anyway (err: %s)\n", err);
            kernel_proc_stop(p, 0);
            kernel_proc_destroy(&p);
        }
        unlink(path);
    }
    while (nfill > 0)
        close(fillers[--nfill]);
    setrlimit(RLIMIT_NOFILE, &saved);
}

static void s_sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The state letter of /proc/PID/stat ('Z': a zombie), or 0 when it is gone. */
static char s_proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* A replaced kernel that was asked to shut down (kernel_destroy's shutdown
 * request, for R) is freed without a SIGKILL; if it has not gone when its
 * grace is up, the reaper SIGKILLs it. */
static void test_deferred_destroy_kills_when_grace_is_up(void)
{
    char *argv[] = {"sleep", "60", NULL};
    kernel_proc_opts_t o = {.argv = argv};
    char err[256] = "";
    kernel_proc_t *p = kernel_proc_spawn(&o, err, sizeof err);
    CHECK(p != NULL);
    if (!p)
        return;
    pid_t pid = kernel_proc_pid(p);
    int64_t t0 = loop_now_ms();
    kernel_proc_destroy_deferred(&p, 300);
    CHECK(p == NULL);
    CHECK_EQ_INT(kernel_proc_orphans(), 1);
    int due = kernel_proc_orphans_due_ms();
    CHECK(due > 0 && due <= 300);
    s_sleep_ms(100);
    kernel_proc_reap_orphans();
    CHECK(s_proc_state(pid) != 0 && s_proc_state(pid) != 'Z'); /* not killed at once */
    CHECK_EQ_INT(kernel_proc_orphans(), 1);
    s_sleep_ms(kernel_proc_orphans_due_ms() + 5);
    kernel_proc_reap_orphans(); /* grace is up: SIGKILL */
    CHECK_EQ_INT(kernel_proc_orphans_due_ms(), -1);
    while (kernel_proc_orphans() && loop_now_ms() - t0 < 10000) {
        s_sleep_ms(5);
        kernel_proc_reap_orphans();
    }
    CHECK_EQ_INT(kernel_proc_orphans(), 0);
    CHECK(loop_now_ms() - t0 >= 300);
    CHECK(s_proc_state(pid) == 0); /* reaped */
}

/* One that goes by itself within its grace is reaped then, and what it
 * started (its process group) is SIGKILLed with it. */
static void test_deferred_destroy_reaps_what_goes(void)
{
    char file[] = "/tmp/rat-test-quit-XXXXXX";
    int fd = mkstemp(file);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    close(fd);
    char *script = xasprintf("sleep 60 & echo $! > %s; wait", file);
    char *argv[] = {"sh", "-c", script, NULL};
    kernel_proc_opts_t o = {.argv = argv};
    char err[256] = "";
    kernel_proc_t *p = kernel_proc_spawn(&o, err, sizeof err);
    CHECK(p != NULL);
    pid_t child = 0;
    for (int64_t t0 = loop_now_ms(); p && !child && loop_now_ms() - t0 < 10000; s_sleep_ms(5)) {
        FILE *f = fopen(file, "r");
        long v = 0;
        if (f && fscanf(f, "%ld", &v) == 1)
            child = (pid_t)v;
        if (f)
            fclose(f);
    }
    CHECK(child > 0);
    if (p) {
        pid_t pid = kernel_proc_pid(p);
        int64_t t0 = loop_now_ms();
        kernel_proc_destroy_deferred(&p, 5000);
        kill(pid, SIGTERM); /* the shell goes (a kernel would, on its shutdown request) */
        while (kernel_proc_orphans() && loop_now_ms() - t0 < 10000) {
            s_sleep_ms(5);
            kernel_proc_reap_orphans();
        }
        CHECK_EQ_INT(kernel_proc_orphans(), 0);
        CHECK(loop_now_ms() - t0 < 5000); /* reaped when it went, not at the deadline */
        CHECK(s_proc_state(pid) == 0);
        CHECK_EQ_INT(kernel_proc_orphans_due_ms(), -1);
        /* The group's `sleep` was SIGKILLed when the shell was reaped (it is
         * init's child now: gone, or a zombie until init reaps it). */
        for (int64_t t1 = loop_now_ms(); child > 0 && s_proc_state(child) != 0 && s_proc_state(child) != 'Z' &&
                               loop_now_ms() - t1 < 10000;)
            s_sleep_ms(5);
        CHECK(child > 0 && (s_proc_state(child) == 0 || s_proc_state(child) == 'Z'));
    }
    free(script);
    unlink(file);
}

int main(void)
{
    RUN_CASE(test_exec_failure_reported_with_high_fds);
    RUN_CASE(test_attach_up);
    RUN_CASE(test_attach_up_when_handshakes_finish_first);
    RUN_CASE(test_deferred_destroy_kills_when_grace_is_up);
    RUN_CASE(test_deferred_destroy_reaps_what_goes);
    return check_report("unit.kernel_zmq");
}
