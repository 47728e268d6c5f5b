/* kernel_internal: the state of one kernel that kernel.c (process, channels,
 * readiness, death) and kernel_gw.c (a kernel on a Jupyter Server gateway:
 * its REST calls) share, and what each calls of the other. kernel.h is the
 * contract for everyone else; nothing outside these two files includes this. */
#ifndef RAT_KERNEL_INTERNAL_H
#define RAT_KERNEL_INTERNAL_H

#include "connfile.h"
#include "gateway.h"
#include "kernel.h"
#include "kernel_proc.h"

/* An attached kernel (no process of ours to waitpid) is declared dead when
 * its heartbeat stays silent this much longer than HB_TOLERANCE_MS while it
 * is idle. Busy kernels other than ipykernel answer heartbeats from the
 * loop that runs the code, so their silence then means nothing. A gateway's
 * kernel whose WebSocket is down this long is looked up on the gateway. */
#define HB_DEAD_MS 10000

struct kernel {
    loop_t *loop;                 /* borrowed */
    kernel_events_t ev;
    void *ud;
    kernel_state_t state;
    kernel_proc_t *proc;          /* owned; NULL when attached */
    kernel_conn_t *conn;          /* owned */
    connfile_t ci;
    char *conn_path;              /* owned */
    bool owned_file;              /* we wrote conn_path and remove it */
    char *log_path;               /* owned */
    bool interrupt_message;
    bool ask_on_replace;          /* kernel_set_ask_on_replace */
    char info_id[WIRE_ID_LEN + 1];/* last kernel_info_request */
    bool got_reply, got_iopub, chans_up;
    int proof_ms;                 /* next wait for iopub proof (backs off) */
    json_object *info;            /* kernel_info_reply content, owned */
    uint64_t nudge_timer, boot_timer, event_timer, trim_timer;
    int64_t started_ms, ready_ms;
    int boot_timeout_ms;
    char *dead_why;               /* pending on_dead text, owned */
    char *runtime_dir;            /* owned */
    bool hb_ok;
    uint64_t hb_dead_timer;       /* attached: armed while the heartbeat is silent */
    bool busy;                    /* iopub's last execution_state (any client's request) */
    char *session;                /* owned: the kernel's session id, from its kernel_info_reply */
    char *stale_session;          /* owned: a restarted kernel's old session (ignored while starting) */
    /* For port-clash retries of owned kernels. */
    char **argv_template;         /* owned copy, {connection_file} unsubstituted */
    char **env_extra;             /* owned copy */
    char *cwd;                    /* owned copy */
    int retries;
    int redials;                  /* s_redial's, this launch */
    int64_t answered_ms;          /* the heartbeat first answered on this connection (0: not yet) */
    kernel_conn_factory_fn *connect; /* NULL: kernel_zmq_new */
    void *connect_ud;
    /* Lifetime (kernel.h): depth counts our frames that called a handler
     * and are still on the stack; a kernel destroyed while depth > 0 is
     * doomed (closed, silent) and freed by free_timer from the loop. */
    int depth;
    bool doomed;
    uint64_t free_timer;
    /* On a gateway (kernel.h): */
    gateway_t *gw;                /* borrowed; NULL for a local kernel */
    char *remote_id;              /* owned: the kernel's id there, once known */
    bool remote_owned;            /* we started it: delete it when done */
    gateway_req_t *gw_req;        /* the POST /api/kernels in flight */
    gateway_req_t *gw_check;      /* the GET /api/kernels/{id} in flight */
    uint64_t gw_poll_timer;
    gateway_req_t *gw_restart;    /* the POST /api/kernels/{id}/restart in flight */
    /* An interrupt that has not completed yet (kernel_interrupt_pending):
     * the gateway's POST in flight, or an interrupt_request on control whose
     * reply has not come; interrupt_timer bounds the wait for that reply. */
    gateway_req_t *gw_interrupt;
    char interrupt_id[WIRE_ID_LEN + 1];
    uint64_t interrupt_timer;
};

/* kernel.c, for kernel_gw.c. */
/* The kernel is dead (once): timers stop, on_dead goes out from a 0 ms timer. */
void kernel_die(kernel_t *self, char *why /* consumed */);
/* The connection is made: the readiness handshake starts (kernel_info_request,
 * nudges, heartbeat). */
void kernel_chans_connect(kernel_t *self);
/* The connection's callbacks (kernel_conn.h). */
void kernel_on_msg(void *ud, kchan_t ch, wire_msg_t *m);
void kernel_on_conn_event(void *ud, kconn_event_t ev);
/* The pending interrupt completed or its wait ended: tells the owner. */
void kernel_interrupt_done(kernel_t *self, const char *how);

/* kernel_gw.c, for kernel.c (self->gw is set). */
/* Starts a kernel on the gateway (POST /api/kernels) or attaches to
 * opts->gateway_kernel, and arms the periodic look that it still exists.
 * Returns 0, or -1 with err filled. */
int kernel_gw_start(kernel_t *self, const kernel_opts_t *opts, char *err, size_t errlen);
/* Asks the gateway whether the kernel still exists (one request at a time);
 * a 404 is its death. */
void kernel_gw_check(kernel_t *self);
/* POST /api/kernels/{id}/interrupt; pending until the gateway answers. */
int kernel_gw_interrupt(kernel_t *self);
/* POST /api/kernels/{id}/restart; a refusal is the kernel's death. */
int kernel_gw_restart(kernel_t *self);
/* Cancels every request in flight and deletes a kernel we started there
 * (blocking, bounded by grace_ms > 0 ? 5 s : 2 s). */
void kernel_gw_close(kernel_t *self, int grace_ms);

#endif
