/* runtime_fake: the fake kernel connection and the harness the runtime's unit
 * tests share (test_runtime.c: supervision; test_runtime_runs.c: runs;
 * test_runtime_move.c: moves).
 *
 * The kernel's channels are a fake kernel_conn_t handed to the runtime
 * through runtime_opts_t.connect; the test plays the kernel's side of the
 * protocol. The processes are real (`sleep`), so deaths are real exits seen
 * through waitpid, as rat-py sees them. Like kernel_zmq's receive loop, the
 * fake delivers a batch of messages and goes on using itself after each
 * handler: a connection freed inside a handler is a use-after-free that
 * ASan and valgrind report (issue 11, crash 1).
 *
 * One runtime at a time, in the globals below; checks count in the test
 * program's totals (check.h, CHECK_HELPER). */
#ifndef RAT_TEST_RUNTIME_FAKE_H
#define RAT_TEST_RUNTIME_FAKE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel_conn.h"
#include "loop.h"
#include "runtime.h"
#include "wire.h"

#define RTFAKE_MAX_CONNS 32
#define RTFAKE_MAX_SENT 256
#define RTFAKE_MAX_INBOX 16

/* One message the kernel side received. */
typedef struct {
    kchan_t ch;
    char type[48];
    char id[WIRE_ID_LEN + 1];
    char *content;
} rtfake_sent_t;

typedef struct {
    kernel_conn_t base;                  /* must be first */
    int index;                           /* creation order */
    char session[32];
    rtfake_sent_t sent[RTFAKE_MAX_SENT]; /* ring of what the kernel side received */
    size_t nsent;
    wire_msg_t inbox[RTFAKE_MAX_INBOX];  /* queued for rtfake_deliver */
    kchan_t inbox_ch[RTFAKE_MAX_INBOX];
    size_t ninbox;
} rtfake_conn_t;

extern loop_t *g_loop;
extern runtime_t *g_rt;
extern rtfake_conn_t *g_conns[RTFAKE_MAX_CONNS]; /* NULL once destroyed */
extern int g_nconns;
extern char g_dir[64];         /* the kernelspec, cwd and runtime directory */
extern const char *g_language; /* what the fake kernel says it runs: "python" */

/* Serves the loop (and SIGCHLD, which the test has no signalfd for) until
 * cond holds or max_ms passed. The bound only catches hangs. */
#define SPIN_UNTIL(cond, max_ms)                                         \
    do {                                                                 \
        int64_t spin_t0_ = loop_now_ms();                                \
        while (!(cond) && loop_now_ms() - spin_t0_ < (max_ms)) {         \
            if (g_rt)                                                    \
                runtime_on_sigchld(g_rt);                                \
            loop_run_once(g_loop, 5);                                    \
        }                                                                \
    } while (0)

/* The program's set-up (g_dir made, g_loop) and tear-down; 0 on success. */
int rtfake_setup(void);
void rtfake_teardown(void);

/* The fake's factory, for runtime_opts_t.connect. */
kernel_conn_t *rtfake_connect(void *factory_ud, loop_t *loop, const connfile_t *ci, kernel_conn_msg_fn *on_msg,
                              kernel_conn_event_fn *on_event, void *ud, char *err, size_t errlen);

/* The kernel's side of the protocol. */
rtfake_sent_t *rtfake_last_sent(rtfake_conn_t *fc, const char *msg_type, const char *needle);
void rtfake_push(rtfake_conn_t *fc, kchan_t ch, const char *msg_type, const char *parent_id, const char *content);
void rtfake_deliver(rtfake_conn_t *fc);
void rtfake_handshake(rtfake_conn_t *fc);
void rtfake_answer_run(rtfake_conn_t *fc, const char *status, const char *stdout_text);

/* The harness. */
int rtfake_live_conns(void);
void rtfake_settle(void);
const char *rtfake_state(void);
bool rtfake_state_is(const char *want);
pid_t rtfake_pid(bool spare);
runtime_t *rtfake_runtime_new(const runtime_opts_t *o, char *err, size_t errlen);
void rtfake_write_spec(void);
runtime_opts_t rtfake_opts(bool spare);
void rtfake_start(bool spare);
void rtfake_stop(void);
void rtfake_start_ready(bool spare);
rtfake_conn_t *rtfake_spare_conn(int index, bool ready);
void rtfake_kill_kernel(void);

/* A run's observer: what on_done saw. */
typedef struct {
    int done;
    runtime_outcome_t outcome;
    char why[512];
    char out[512];       /* the rendered output */
    bool release;        /* release the run inside on_done, as tool_run does */
    runtime_exec_t *ex;
} rtfake_obs_t;

runtime_exec_t *rtfake_run(const char *code, rtfake_obs_t *o);

/* What a restart's, reset's or move's callback said. */
typedef struct {
    int calls;
    bool ok;
    char text[512];
} rtfake_done_t;

void rtfake_done(void *ud, bool ok, const char *text);

#endif
