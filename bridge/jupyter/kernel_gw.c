/* kernel_gw: a kernel on a Jupyter Server / Enterprise Gateway (kernel.h):
 * started with POST /api/kernels or attached by id, looked up while its
 * WebSocket is down and every GW_POLL_MS, interrupted and restarted through
 * the REST API, deleted when we started it. Its channels are kernel_ws;
 * readiness and death are kernel.c's, as for any kernel. */
#define LOG_MODULE "kernel"
#include "kernel_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <unistd.h>

#include "kernel_ws.h"
#include "log.h"
#include "mem.h"
#include "wire.h"

#define GW_POLL_MS 5000
/* The gateway's answer to an interrupt's POST is waited for this long, then
 * the interrupt is taken as done (kernel.c's INTERRUPT_REPLY_MS says why). */
#define GW_INTERRUPT_TIMEOUT_MS 10000

/* The WebSocket has been down for HB_DEAD_MS: ask the gateway whether the
 * kernel still exists. */
static void s_gw_checked(void *ud, long status, const char *body, size_t len, const char *err)
{
    kernel_t *self = ud;
    self->gw_check = NULL;
    if (self->state == KERNEL_DEAD)
        return;
    if (status == 404) {
        kernel_die(self, xasprintf("the kernel %s is gone from the gateway (deleted, culled by the gateway's idle "
                                   "culler, or the gateway restarted)",
                                   self->remote_id));
        return;
    }
    if (self->hb_ok)
        return; /* the periodic look: only a 404 matters */
    if (status == 200) {
        /* It is there; the connection keeps trying. Look again later. */
        log_info("the gateway still has kernel %s; reconnecting", self->remote_id);
        return;
    }
    if (err)
        kernel_die(self, xasprintf("the kernel's WebSocket has been down for %d s and %s", HB_DEAD_MS / 1000, err));
    else
        kernel_die(self, gateway_http_error(self->gw, "the kernel's WebSocket is down", status, body));
}

void kernel_gw_check(kernel_t *self)
{
    if (!self->gw_check && self->remote_id) {
        char *path = xasprintf("/api/kernels/%s", self->remote_id);
        self->gw_check = gateway_request(self->gw, "GET", path, NULL, HB_DEAD_MS / 2, s_gw_checked, self);
        free(path);
    }
}

/* A Jupyter Server keeps the WebSocket of a kernel deleted behind our back
 * open (and answers its pings), so nothing on the channels says it is gone:
 * ask the REST API every GW_POLL_MS. */
static void s_gw_poll(loop_t *loop, void *ud)
{
    kernel_t *self = ud;
    self->gw_poll_timer = loop_timer(loop, GW_POLL_MS, s_gw_poll, self);
    if (self->state == KERNEL_READY)
        kernel_gw_check(self);
}


/* The kernel's id is known: its WebSocket. */
static int s_gw_connect(kernel_t *self, char *err, size_t errlen)
{
    free(self->conn_path);
    self->conn_path = xasprintf("%s/api/kernels/%s", gateway_url(self->gw), self->remote_id);
    self->conn =
        kernel_ws_new(self->loop, self->gw, self->remote_id, kernel_on_msg, kernel_on_conn_event, self, err, errlen);
    if (!self->conn)
        return -1;
    kernel_chans_connect(self);
    return 0;
}

/* A kernel id as Jupyter Server and Enterprise Gateway make them (a UUID,
 * jupyter_client's new_kernel_id); anything else is not put into a URL.
 * ASCII letters, digits, '-' and '_', at most 64: '_' too because Jupyter
 * Server's own route takes it (\w+-\w+-\w+-\w+-\w+), and it is harmless in
 * a path (unreserved in RFC 3986, nothing to escape). The --existing error
 * text and doc/security.md say the same. */
static bool s_id_ok(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return false;
    }
    return true;
}

static void s_gw_started(void *ud, long status, const char *body, size_t len, const char *err)
{
    kernel_t *self = ud;
    self->gw_req = NULL;
    if (self->state != KERNEL_STARTING)
        return;
    if (err) {
        kernel_die(self, xasprintf("cannot start a kernel: %s", err));
        return;
    }
    if (status != 201 && status != 200) {
        kernel_die(self, gateway_http_error(self->gw, "cannot start a kernel", status, body));
        return;
    }
    json_object *j = json_tokener_parse(body);
    const char *id = wire_get_str(j, "id");
    if (!s_id_ok(id)) {
        json_object_put(j);
        kernel_die(self, xasprintf("cannot start a kernel: the gateway at %s answered without a usable kernel id",
                                   gateway_url(self->gw)));
        return;
    }
    self->remote_id = xstrdup(id);
    json_object_put(j);
    log_info("kernel %s started on the gateway %s", self->remote_id, gateway_url(self->gw));
    char e[512];
    if (s_gw_connect(self, e, sizeof e) < 0)
        kernel_die(self, xstrdup(e));
}

static int s_start(kernel_t *self, const kernel_opts_t *o, char *err, size_t errlen)
{
    if (o->gateway_kernel) {
        if (!s_id_ok(o->gateway_kernel)) {
            snprintf(err, errlen, "--existing with --gateway takes a kernel id (at most 64 letters, digits, '-' or '_'), not '%.100s'",
                     o->gateway_kernel);
            return -1;
        }
        self->remote_id = xstrdup(o->gateway_kernel);
        return s_gw_connect(self, err, errlen);
    }
    self->remote_owned = true;
    const char *name = o->gateway_kernel_name ? o->gateway_kernel_name : "python3";
    char *body = gateway_kernel_start_body(name, environ);
    /* Bounded a little inside the boot timeout, so a gateway that accepts
     * and never answers is named as such, not as a kernel that never became
     * ready. */
    self->gw_req = gateway_request(self->gw, "POST", "/api/kernels", body,
                                   self->boot_timeout_ms - self->boot_timeout_ms / 10, s_gw_started, self);
    free(body);
    if (!self->gw_req) {
        snprintf(err, errlen, "cannot make a request to the gateway");
        return -1;
    }
    self->conn_path = xasprintf("%s/api/kernels", gateway_url(self->gw));
    return 0;
}

/* The gateway answered the interrupt's POST (or it failed): the interrupt
 * went as far as it will. Failures are logged; their effect, or its
 * absence, is seen on the channels (cancel has its own bounds). */
static void s_gw_interrupted(void *ud, long status, const char *body, size_t len, const char *err)
{
    kernel_t *self = ud;
    self->gw_interrupt = NULL;
    if (err)
        log_warn("the gateway's interrupt of kernel %s: %s", self->remote_id, err);
    else if (status < 200 || status > 299) {
        char *e = gateway_http_error(NULL, "the gateway's interrupt of the kernel", status, body);
        log_warn("%s", e);
        free(e);
    }
    kernel_interrupt_done(self, "done by the gateway");
}

/* A restart the gateway refused or could not do ends the wait for the new
 * kernel at once, with the gateway's reason (not at --boot-timeout). */
static void s_gw_restarted(void *ud, long status, const char *body, size_t len, const char *err)
{
    kernel_t *self = ud;
    self->gw_restart = NULL;
    if (self->state == KERNEL_DEAD || (!err && status >= 200 && status <= 299))
        return;
    char *what = xasprintf("POST /api/kernels/%s/restart", self->remote_id);
    kernel_die(self, err ? xasprintf("%s: %s", what, err) : gateway_http_error(self->gw, what, status, body));
    free(what);
}

/* POST /api/kernels/{id}/interrupt, tracked: the interrupt is pending
 * until the gateway answers. One at a time: while one is in flight, asking
 * again adds nothing (it has not landed yet either). */
int kernel_gw_interrupt(kernel_t *self)
{
    if (!self->remote_id)
        return -1;
    if (self->gw_interrupt)
        return 0;
    char *path = xasprintf("/api/kernels/%s/interrupt", self->remote_id);
    self->gw_interrupt = gateway_request(self->gw, "POST", path, "{}", GW_INTERRUPT_TIMEOUT_MS, s_gw_interrupted, self);
    free(path);
    return self->gw_interrupt ? 0 : -1;
}

int kernel_gw_start(kernel_t *self, const kernel_opts_t *o, char *err, size_t errlen)
{
    if (s_start(self, o, err, errlen) < 0)
        return -1;
    self->gw_poll_timer = loop_timer(self->loop, GW_POLL_MS, s_gw_poll, self);
    return 0;
}

int kernel_gw_restart(kernel_t *self)
{
    if (!self->remote_id || self->gw_restart)
        return -1;
    char *path = xasprintf("/api/kernels/%s/restart", self->remote_id);
    self->gw_restart = gateway_request(self->gw, "POST", path, "{}", self->boot_timeout_ms, s_gw_restarted, self);
    free(path);
    return self->gw_restart ? 0 : -1;
}

void kernel_gw_close(kernel_t *self, int grace_ms)
{
    gateway_cancel(self->gw, &self->gw_req);
    gateway_cancel(self->gw, &self->gw_check);
    gateway_cancel(self->gw, &self->gw_restart);
    gateway_cancel(self->gw, &self->gw_interrupt);
    if (self->remote_owned && self->remote_id) {
        /* Blocking but bounded: a kernel left on the gateway costs its
         * owner a pod until the culler finds it. 404: already gone. */
        char *path = xasprintf("/api/kernels/%s", self->remote_id);
        long status = 0;
        char *body = NULL, err[512];
        if (gateway_request_sync(self->gw, "DELETE", path, NULL, grace_ms > 0 ? 5000 : 2000, &status, &body, err,
                                 sizeof err) < 0)
            log_warn("cannot delete kernel %s on the gateway: %s", self->remote_id, err);
        else if (status != 204 && status != 404)
            log_warn("deleting kernel %s on the gateway: HTTP %ld", self->remote_id, status);
        else
            log_info("kernel %s deleted on the gateway", self->remote_id);
        free(body);
        free(path);
    }
}
