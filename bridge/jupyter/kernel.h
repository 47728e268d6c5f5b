/* kernel: one running kernel: its process (when rat-py owns it), its
 * connection file and its channels, and the readiness handshake.
 *
 * A kernel is READY once a kernel_info_reply has arrived *and* iopub has
 * delivered something, which proves the SUB subscription reached the kernel
 * (ipykernel < 7.2 sends no iopub_welcome, so kernel_info_request is re-sent
 * until iopub traffic shows up; jupyter_client does the same). Death is seen
 * from waitpid (owned) or the heartbeat (attached), never guessed from a busy
 * kernel's silence.
 *
 * Events and lifetime (the rule every layer follows: nothing is freed under
 * a caller that may still use it). Events are never delivered from inside a
 * kernel_* call: on_dead comes from a 0 ms timer, on_ready, on_msg and
 * on_heartbeat from the connection's callbacks. Any handler may call
 * kernel_destroy, on this kernel too: it is closed at once (no further
 * events, its process killed, its files removed) and its memory and
 * connection are freed from the loop, after every frame that uses them has
 * returned. Handlers may also destroy or start other kernels. */
#ifndef RAT_KERNEL_H
#define RAT_KERNEL_H

#include <stdbool.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "kernel_conn.h"
#include "kernelspec.h"
#include "loop.h"

typedef struct kernel kernel_t;

typedef enum { KERNEL_STARTING, KERNEL_READY, KERNEL_DEAD } kernel_state_t;

typedef struct {
    /* The handshake finished; info is the kernel_info_reply content (borrowed). */
    void (*on_ready)(void *ud, kernel_t *k, json_object *info);
    /* Any message from the kernel, before or after ready (borrowed). */
    void (*on_msg)(void *ud, kernel_t *k, kchan_t ch, wire_msg_t *msg);
    /* The kernel is gone or will never be ready; why is a full sentence. */
    void (*on_dead)(void *ud, kernel_t *k, const char *why);
    /* Heartbeat state changed (informational for owned kernels). */
    void (*on_heartbeat)(void *ud, kernel_t *k, bool ok);
    /* The interrupt kernel_interrupt left pending (kernel_interrupt_pending)
     * completed: the kernel answered interrupt_request, or the gateway its
     * POST, or the bounded wait for them ended. May be NULL. */
    void (*on_interrupted)(void *ud, kernel_t *k);
} kernel_events_t;

typedef struct {
    const kernelspec_t *spec;  /* launch from this spec ... */
    const char *python;        /* (its {python}, or NULL: kernelspec_argv) */
    const char *existing;      /* ... or attach to this connection file */
    const char *cwd;           /* kernel working directory (owned kernels) */
    char *const *env_extra;    /* extra "KEY=VALUE" for the kernel */
    const char *runtime_dir;   /* where connection and log files go */
    int boot_timeout_ms;       /* give up on readiness after this long */
    kernel_conn_factory_fn *connect; /* makes the connection; NULL: ZeroMQ */
    void *connect_ud;          /* the factory's own argument */
    /* A kernel on a Jupyter Server / Enterprise Gateway (borrowed; it must
     * outlive the kernel): started there with POST /api/kernels (spec's
     * name, or "python3"), or attached to gateway_kernel (its id) and left
     * running. Its channels are a WebSocket (kernel_ws), interrupt and
     * restart go through the REST API, and destroying an owned one deletes
     * it there (DELETE, bounded). */
    struct gateway *gateway;
    const char *gateway_kernel;
    const char *gateway_kernel_name;
} kernel_opts_t;

/* Starts (or attaches to) a kernel. Returns NULL with err filled when nothing
 * could be started; later failures arrive as on_dead. */
kernel_t *kernel_start(loop_t *loop, const kernel_opts_t *opts, const kernel_events_t *ev, void *ud,
                       char *err, size_t errlen);
/* Stops an owned kernel (shutdown_request, then SIGTERM/SIGKILL of its
 * group within grace_ms), removes its files, and frees. An attached kernel is
 * only disconnected. Allowed inside this kernel's own handlers (the memory
 * is then freed from the loop); *self_p is NULL on return either way. */
void kernel_destroy(kernel_t **self_p, int grace_ms);

/* Hands the kernel's events to another owner (a warm spare becoming the
 * session's kernel). */
void kernel_set_events(kernel_t *self, const kernel_events_t *ev, void *ud);
kernel_state_t kernel_state(const kernel_t *self);
int kernel_send(kernel_t *self, kchan_t ch, const char *msg_type, const char *content, json_object *parent,
                char id_out[WIRE_ID_LEN + 1]);
/* Interrupts the running code: SIGINT to the process group, or
 * interrupt_request on control when the spec says interrupt_mode=message or
 * the kernel is attached, or POST /api/kernels/{id}/interrupt on a gateway.
 * An owned kernel that is stopped (SIGSTOP) is then continued, so it takes
 * the interrupt instead of holding it pending. A signal is sent when this
 * returns; the other two complete later: kernel_interrupt_pending says so
 * until on_interrupted (at most 5 s for the kernel's interrupt_reply, 10 s
 * for the gateway's answer). Returns 0, or -1 when it cannot be
 * interrupted. */
int kernel_interrupt(kernel_t *self);
/* An interrupt was asked for and has not completed yet (see above): what
 * must come after it (the runtime's barrier) waits for on_interrupted. */
bool kernel_interrupt_pending(const kernel_t *self);
/* A gateway kernel is restarted through the REST API (POST
 * /api/kernels/{id}/restart), then handled as below (a new session).
 * Restarts an attached kernel the only way a non-owner can: asks it to shut
 * down for a restart (shutdown_request, restart=true), which its owner
 * (Jupyter server, jupyter console, ...) answers by starting it again on the
 * same connection file. The kernel is STARTING again and on_ready follows
 * when the new one (a new session) answers; if nobody restarts it, on_dead
 * follows. Returns -1 when not attached or not reachable. */
int kernel_restart_attached(kernel_t *self);
/* Called when SIGCHLD arrived: checks whether this kernel's process exited. */
void kernel_check_exit(kernel_t *self);
/* For a kernel rat-py started here: when destroyed without grace (a restart
 * or spare swap replaces it), ask it to shut down and leave it KERNEL_QUIT_MS
 * to go by itself before its group is SIGKILLed, instead of SIGKILLing it at
 * once (the default). Never waits either way. For kernels that clean up only
 * when they quit (R's session directory). */
void kernel_set_ask_on_replace(kernel_t *self, bool ask);
#define KERNEL_QUIT_MS 1000
/* Called when SIGCHLD arrived: reaps the processes of destroyed kernels
 * (kernel_destroy kills them and does not wait). */
void kernel_reap_destroyed(void);
/* At exit: makes sure those are gone, waiting at most max_ms. */
void kernel_reap_all(int max_ms);
/* rat-py started it (locally, or on a gateway): its death restarts it. */
bool kernel_owned(const kernel_t *self);
/* On a gateway (kernel_opts_t.gateway). */
bool kernel_remote(const kernel_t *self);
pid_t kernel_pid(const kernel_t *self);
int64_t kernel_started_ms(const kernel_t *self);
const char *kernel_connection_file(const kernel_t *self);
const char *kernel_log_path(const kernel_t *self);
void kernel_stats(const kernel_t *self, kconn_stats_t *out);
bool kernel_heartbeat_ok(const kernel_t *self);
/* Milliseconds the handshake took (0 until ready). */
int64_t kernel_boot_ms(const kernel_t *self);

#endif
