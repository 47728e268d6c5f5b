/* gateway: a client of a Jupyter Server's (or Enterprise Gateway's) REST
 * kernel API: /api/kernelspecs, /api/kernels[/ID[/interrupt|/restart]].
 *
 * Requests go through libcurl (loaded at run time, gw_dl.h). Asynchronous
 * ones run on the loop through curl's multi interface (its sockets are loop
 * watches, its timer a loop timer), so nothing blocks the reactor; the
 * synchronous form is for the command line (kernels, doctor) and for the
 * DELETE at exit. Every request has a connect timeout and a total timeout.
 * Authentication is Jupyter's own gateway client's: `Authorization: token T`.
 *
 * Lifetime: a request's done callback is called once, from the loop (never
 * from inside gateway_request), unless the request was cancelled first. done
 * may start or cancel other requests; it must not destroy the gateway.
 *
 * Ownership of ud: the caller's, lent to the request. Most callers keep ud
 * alive themselves and cancel their requests before freeing it. A request
 * nobody tracks (fire and forget) with a heap ud gives it to the request
 * with gateway_request_free_ud: then done frees ud if done is called, and
 * the request frees it with free_ud if done never is (gateway_cancel, or
 * gateway_destroy with the request still in flight). Either way, once. */
#ifndef RAT_GATEWAY_H
#define RAT_GATEWAY_H

#include <stdbool.h>
#include <stddef.h>

#include "loop.h"

#define GATEWAY_CONNECT_TIMEOUT_MS 10000
#define GATEWAY_REQUEST_TIMEOUT_MS 30000   /* POST /api/kernels waits for the kernel to start */
#define GATEWAY_MAX_BODY (8u << 20)        /* larger responses are refused */

typedef struct {
    const char *url;        /* http(s)://host[:port][/base] */
    const char *token;      /* or NULL */
    const char *ca_file;    /* PEM bundle to verify the server with, or NULL (the system's) */
    bool insecure;          /* no certificate verification (testing only) */
} gateway_opts_t;

typedef struct gateway gateway_t;
typedef struct gateway_req gateway_req_t;

/* status: the HTTP status (0 when err is set); body: the response (NUL
 * terminated, borrowed for the call); err: a sentence when the request
 * failed before a response (refused, timed out, TLS), else NULL. */
typedef void (gateway_done_fn)(void *ud, long status, const char *body, size_t len, const char *err);

/* Checks the URL and loads libcurl. loop may be NULL for synchronous use
 * only. Returns NULL with a sentence in err. */
gateway_t *gateway_new(loop_t *loop, const gateway_opts_t *o, char *err, size_t errlen);
/* Cancels the requests in flight (their done is not called; their free_ud
 * is). */
void gateway_destroy(gateway_t **self_p);

gateway_req_t *gateway_request(gateway_t *self, const char *method, const char *path, const char *body,
                               int timeout_ms, gateway_done_fn *done, void *ud);
/* ud is the request's from now: free_ud(ud) runs if the request ends
 * without calling done (cancelled, or the gateway destroyed); when done is
 * called, done frees ud instead. Right after gateway_request, before the
 * loop runs. */
void gateway_request_free_ud(gateway_req_t *req, void (*free_ud)(void *ud));
/* Cancels a request: done will not be called (free_ud is, if set). *req_p is
 * NULL on return. */
void gateway_cancel(gateway_t *self, gateway_req_t **req_p);

/* Blocks for at most timeout_ms. Returns 0 with the status and the body
 * (caller frees), or -1 with a sentence in err. */
int gateway_request_sync(gateway_t *self, const char *method, const char *path, const char *body, int timeout_ms,
                         long *status, char **body_out, char *err, size_t errlen);

/* A sentence for a response that is not 2xx: names 401/403 as the token
 * being refused, unless a 403 gives its own reason (Enterprise Gateway's
 * refusal of a user: said as it is); 404 as what is missing; adds the
 * server's "message". */
char *gateway_http_error(const gateway_t *self, const char *what, long status, const char *body);

#define GATEWAY_ENV_MAX 256              /* variables a start request carries, at most */
#define GATEWAY_ENV_MAX_BYTES (64 << 10) /* and their NAME=value bytes */

/* The body of POST /api/kernels for kernelspec name, as Jupyter Server's
 * own gateway client makes it: {"name": name, "env": {...}}, env holding
 * the variables of envp (NAME=value, NULL-terminated; rat-py passes
 * environ) whose names start with KERNEL_ or are listed in
 * JUPYTER_GATEWAY_ALLOWED_ENVS (comma separated). Enterprise Gateway starts
 * the kernel for KERNEL_USERNAME (refusing root, whom it takes when none
 * is named) and gives the kernel the KERNEL_* variables; Jupyter Server
 * ignores env. Values that are not UTF-8, and those past GATEWAY_ENV_MAX
 * or GATEWAY_ENV_MAX_BYTES, are left out with a warning. Caller frees. */
char *gateway_kernel_start_body(const char *name, char *const *envp);

const char *gateway_url(const gateway_t *self);
const char *gateway_token(const gateway_t *self);
/* The parts of the URL, for the WebSocket connection. */
bool gateway_tls(const gateway_t *self);
const char *gateway_host(const gateway_t *self);   /* without brackets */
int gateway_port(const gateway_t *self);
const char *gateway_base(const gateway_t *self);   /* "" or "/prefix" (no trailing slash) */
const char *gateway_ca_file(const gateway_t *self);
bool gateway_insecure(const gateway_t *self);

#endif
