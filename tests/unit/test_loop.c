/* Unit tests of the reactor (bridge/base/loop.c): ZMQ sockets are polled through
 * their edge-triggered descriptor (zsock_fd), so every way a wake-up could
 * be lost is checked here with a real inproc czmq socket pair; plain fds
 * keep zmq_poll's revents mapping. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <czmq.h>

#include "check.h"
#include "loop.h"
#include "zmqctx.h"

typedef struct {
    zsock_t *sock;
    int calls;    /* callback invocations */
    int received; /* messages taken */
    int per_call; /* messages taken per call (0: all) */
    int revents;  /* last revents */
} s_sink_t;

static void s_on_zsock(loop_t *loop, void *ud, int revents)
{
    (void)loop;
    s_sink_t *s = ud;
    s->calls++;
    s->revents = revents;
    for (int n = 0; s->per_call == 0 || n < s->per_call; n++) {
        zframe_t *f = zframe_recv(s->sock); /* receive timeout 0: NULL when none */
        if (!f)
            break;
        zframe_destroy(&f);
        s->received++;
    }
}

static void s_on_fd(loop_t *loop, void *ud, int revents)
{
    (void)loop;
    s_sink_t *s = ud;
    s->calls++;
    s->revents = revents;
}

static bool s_fd_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1;
}

/* Runs iterations until nothing more happens within 100 ms per pass. */
static void s_settle(loop_t *loop)
{
    for (int i = 0; i < 20 && loop_run_once(loop, 100) > 0; i++)
        ;
}

typedef struct {
    zsock_t *a, *b;
    loop_t *loop;
} s_pair_t;

static void s_pair_open(s_pair_t *p, const char *name)
{
    zmqctx_init();
    p->a = zsock_new_pair(NULL);
    p->b = zsock_new_pair(NULL);
    zsock_set_rcvtimeo(p->a, 0);
    CHECK(zsock_bind(p->a, "inproc://%s", name) == 0);
    CHECK(zsock_connect(p->b, "inproc://%s", name) == 0);
    p->loop = loop_new();
}

static void s_pair_close(s_pair_t *p)
{
    loop_destroy(&p->loop);
    zsock_destroy(&p->a);
    zsock_destroy(&p->b);
}

static void test_message_wakes_watch(void)
{
    s_pair_t p;
    s_pair_open(&p, "wake");
    s_sink_t s = {.sock = p.a};
    loop_watch_zsock(p.loop, p.a, ZMQ_POLLIN, s_on_zsock, &s);
    s_settle(p.loop);
    CHECK_EQ_INT(s.received, 0);
    zstr_send(p.b, "x");
    s_settle(p.loop);
    CHECK_EQ_INT(s.received, 1);
    CHECK(s.revents & ZMQ_POLLIN);
    s_pair_close(&p);
}

/* Reading its events (like any operation on the socket) consumes the fd's
 * signal while the message stays queued: only loop_watch_kick tells the
 * loop to look again. */
static void test_kick_after_outside_use(void)
{
    s_pair_t p;
    s_pair_open(&p, "kick");
    s_sink_t s = {.sock = p.a};
    int id = loop_watch_zsock(p.loop, p.a, ZMQ_POLLIN, s_on_zsock, &s);
    s_settle(p.loop);
    zstr_send(p.b, "x");
    int fd = zsock_fd(p.a);
    CHECK(s_fd_readable(fd));
    CHECK(zsock_events(p.a) & ZMQ_POLLIN);
    CHECK(!s_fd_readable(fd)); /* the premise: the signal is gone */
    loop_watch_kick(p.loop, id);
    CHECK(loop_run_once(p.loop, 200) > 0);
    CHECK_EQ_INT(s.received, 1);
    s_pair_close(&p);
}

/* A callback that leaves messages behind (a drain budget) is called again
 * without a new signal. */
static void test_leftovers_served_without_new_signal(void)
{
    s_pair_t p;
    s_pair_open(&p, "budget");
    s_sink_t s = {.sock = p.a, .per_call = 1};
    loop_watch_zsock(p.loop, p.a, ZMQ_POLLIN, s_on_zsock, &s);
    s_settle(p.loop);
    for (int i = 0; i < 3; i++)
        zstr_send(p.b, "x");
    s_settle(p.loop);
    CHECK_EQ_INT(s.received, 3);
    CHECK_EQ_INT(s.calls, 3);
    s_pair_close(&p);
}

/* A message that arrives while the watch is paused is served on resume. */
static void test_resume_serves_pending(void)
{
    s_pair_t p;
    s_pair_open(&p, "pause");
    s_sink_t s = {.sock = p.a};
    int id = loop_watch_zsock(p.loop, p.a, ZMQ_POLLIN, s_on_zsock, &s);
    s_settle(p.loop);
    loop_watch_set(p.loop, id, 0);
    zstr_send(p.b, "x");
    s_settle(p.loop);
    CHECK_EQ_INT(s.received, 0);
    loop_watch_set(p.loop, id, ZMQ_POLLIN);
    s_settle(p.loop);
    CHECK_EQ_INT(s.received, 1);
    s_pair_close(&p);
}

/* Plain fds: data is ZMQ_POLLIN, a hang-up is ZMQ_POLLERR (zmq_poll's mapping,
 * which the stdio transport's EOF handling relies on). */
static void test_fd_revents_mapping(void)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    loop_t *loop = loop_new();
    s_sink_t s = {0};
    int id = loop_watch_fd(loop, fds[0], ZMQ_POLLIN, s_on_fd, &s);
    CHECK(write(fds[1], "x", 1) == 1);
    CHECK(loop_run_once(loop, 200) == 1);
    CHECK(s.revents & ZMQ_POLLIN);
    char c;
    CHECK(read(fds[0], &c, 1) == 1);
    close(fds[1]);
    CHECK(loop_run_once(loop, 200) == 1);
    CHECK(s.revents & ZMQ_POLLERR);
    loop_unwatch(loop, id);
    CHECK_EQ_INT(loop_run_once(loop, 0), 0);
    loop_destroy(&loop);
    close(fds[0]);
}

static int s_deferred_ran;
static void s_deferred(loop_t *loop, void *ud)
{
    s_deferred_ran++;
}
static void s_plain(loop_t *loop, void *ud)
{
    s_deferred_ran += 100;
}
static void s_stop_and_defer(loop_t *loop, void *ud)
{
    loop_defer(loop, s_deferred, NULL);
    loop_timer(loop, 0, s_plain, NULL);
    loop_stop(loop);
}

/* Work deferred out of a callback (a kernel freed inside its own handler) is
 * sure to run even when the loop stops before its next pass: loop_destroy
 * runs it; a plain timer is dropped as before. */
static void test_defer_runs_at_destroy(void)
{
    s_deferred_ran = 0;
    loop_t *loop = loop_new();
    loop_timer(loop, 0, s_stop_and_defer, NULL);
    CHECK(loop_run(loop) == 0);
    CHECK_EQ_INT(s_deferred_ran, 0);
    loop_destroy(&loop);
    CHECK_EQ_INT(s_deferred_ran, 1);
}

/* After loop_run returned on loop_stop, loop_run_once serves nothing (a
 * last exchange at shutdown waited on a loop that never ran: runtime_detach);
 * loop_resume makes it serve again. */
static void test_resume_after_stop(void)
{
    s_deferred_ran = 0;
    loop_t *loop = loop_new();
    loop_timer(loop, 0, s_stop_and_defer, NULL);
    CHECK(loop_run(loop) == 0);
    CHECK(loop_stopping(loop));
    loop_timer(loop, 0, s_plain, NULL);
    loop_run_once(loop, 10);
    CHECK_EQ_INT(s_deferred_ran, 0); /* stopped: neither timer ran */
    loop_resume(loop);
    CHECK(!loop_stopping(loop));
    for (int i = 0; i < 10 && s_deferred_ran < 201; i++)
        loop_run_once(loop, 10);
    CHECK_EQ_INT(s_deferred_ran, 201); /* both plain timers and the deferred work */
    loop_destroy(&loop);
    CHECK_EQ_INT(s_deferred_ran, 201);
}

/* czmq's context as zmqctx sets it up: its log never reaches stdout (the
 * MCP channel), even when the environment asks for it, and it leaves
 * SIGINT and SIGTERM alone (rat-py reads them from a signalfd). Runs first:
 * the set-up happens once per process. */
static void test_zmqctx_keeps_stdout_and_signals(void)
{
    setenv("ZSYS_LOGSTREAM", "stdout", 1);
    int fds[2];
    CHECK(pipe2(fds, O_NONBLOCK) == 0);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    zmqctx_init();
    zsock_t *s = zsock_new(ZMQ_PAIR); /* the context exists */
    zsys_error("rat-py test: this line belongs on stderr");
    zsock_destroy(&s);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    char c;
    CHECK(read(fds[0], &c, 1) < 0); /* nothing was written */
    close(fds[0]);
    close(fds[1]);
    struct sigaction sa;
    CHECK(sigaction(SIGINT, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL);
    CHECK(sigaction(SIGTERM, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL);
    unsetenv("ZSYS_LOGSTREAM");
}

int main(void)
{
    RUN_CASE(test_zmqctx_keeps_stdout_and_signals);
    RUN_CASE(test_defer_runs_at_destroy);
    RUN_CASE(test_resume_after_stop);
    RUN_CASE(test_message_wakes_watch);
    RUN_CASE(test_kick_after_outside_use);
    RUN_CASE(test_leftovers_served_without_new_signal);
    RUN_CASE(test_resume_serves_pending);
    RUN_CASE(test_fd_revents_mapping);
    return check_report("loop");
}
