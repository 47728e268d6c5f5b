/* rat_api: the public C API (include/rat/rat.h) over the server. */
#include "rat/rat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "log.h"
#include "mem.h"
#include "server.h"

/* The server keeps its own copy of every option: opts' strings point into
 * the owned copies below, so nothing the caller passed is used after
 * rat_server_new returns. */
struct rat_server {
    rat_options_t opts;
    char *cwd, *kernel, *python, *venv, *kernelspec_dir, *existing, *assets_dir, *log_level, *host, *token; /* owned */
    char *gateway, *gateway_token, *gateway_ca, *tls_cert, *tls_key;                                      /* owned */
    char **origins;        /* owned (strv), NULL-terminated; NULL when none */
    /* rat_server_stop: a byte in this non-blocking pipe. The run watches the
     * read end; the pipe is drained only when a run returns, so a stop that
     * races a run's start is not lost. Writing is async-signal-safe. */
    int stop_r, stop_w;    /* owned */
    atomic_bool running;   /* a run is in progress: refuse a second one */
    char why[2560];        /* why the last run failed; "" otherwise */
};

const char *rat_version(void)
{
    return RAT_VERSION;
}

void rat_options_init(rat_options_t *o)
{
    memset(o, 0, sizeof *o);
    o->port = -1;
}

/* The one validation of server options: the command line (config.c) and
 * library callers both come through here. */
int rat_options_check(const rat_options_t *o, char *err, size_t errlen)
{
    if (o->log_level && log_level_parse(o->log_level) < 0) {
        snprintf(err, errlen, "--log-level (log_level) must be debug, info, warn, error or off, not '%s'",
                 o->log_level);
        return -1;
    }
    if (o->existing && (o->kernel || o->python || o->venv || o->kernelspec_dir)) {
        snprintf(err, errlen, "--existing (existing) attaches to a running kernel; it cannot be combined with "
                              "--kernel, --python, --venv or --kernelspec-dir");
        return -1;
    }
    if (o->gateway && (o->python || o->venv || o->kernelspec_dir || o->spare)) {
        snprintf(err, errlen, "--gateway (gateway) runs the kernel on a Jupyter Server; it cannot be combined with "
                              "--python, --venv, --kernelspec-dir or --spare");
        return -1;
    }
    if (o->kernel && o->kernelspec_dir) {
        snprintf(err, errlen, "--kernel (kernel) names an installed kernelspec, --kernelspec-dir (kernelspec_dir) "
                              "gives rat-py's own; give one of them");
        return -1;
    }
    if (o->kernelspec_dir && !o->kernelspec_dir[0]) {
        snprintf(err, errlen, "--kernelspec-dir (kernelspec_dir) cannot be empty");
        return -1;
    }
    if (!o->gateway && (o->gateway_token || o->gateway_ca || o->gateway_insecure)) {
        snprintf(err, errlen, "--gateway-token, --gateway-ca and --gateway-insecure (gateway_token, gateway_ca, "
                              "gateway_insecure) need --gateway");
        return -1;
    }
    if (o->gateway && strncmp(o->gateway, "http://", 7) != 0 && strncmp(o->gateway, "https://", 8) != 0) {
        snprintf(err, errlen, "--gateway (gateway) must be an http:// or https:// URL, not '%.200s'", o->gateway);
        return -1;
    }
    if (!o->tls_cert != !o->tls_key) {
        snprintf(err, errlen, "--tls-cert and --tls-key (tls_cert, tls_key) go together: give both, or neither");
        return -1;
    }
    if (o->python && o->venv) {
        snprintf(err, errlen, "give either --python or --venv (python, venv), not both");
        return -1;
    }
    if (o->port < -1 || o->port > 65535) {
        snprintf(err, errlen, "--port (port) must be 0-65535 (or -1 for the default, 8000), not %d", o->port);
        return -1;
    }
    if (o->boot_timeout_s < 0 || o->boot_timeout_s > RAT_MAX_BOOT_TIMEOUT_S) {
        snprintf(err, errlen, "--boot-timeout (boot_timeout_s) must be 1-%d seconds (or 0 for the default, 60), "
                              "not %d",
                 RAT_MAX_BOOT_TIMEOUT_S, o->boot_timeout_s);
        return -1;
    }
    if (o->assets_max_mb < 0 || o->assets_max_mb > RAT_MAX_ASSETS_MB) {
        snprintf(err, errlen, "--assets-max-mb (assets_max_mb) must be 1-%ld megabytes (or 0 for the default, "
                              "512), not %ld",
                 RAT_MAX_ASSETS_MB, o->assets_max_mb);
        return -1;
    }
    if (o->unsent_max_mb < 0 || o->unsent_max_mb > RAT_MAX_UNSENT_MB) {
        snprintf(err, errlen, "--unsent-max-mb (unsent_max_mb) must be 1-%ld megabytes (or 0 for the default, "
                              "64), not %ld",
                 RAT_MAX_UNSENT_MB, o->unsent_max_mb);
        return -1;
    }
    if (o->shell_timeout_s < 0 || o->shell_timeout_s > RAT_MAX_SHELL_TIMEOUT_S) {
        snprintf(err, errlen, "--shell-timeout (shell_timeout_s) must be 1-%d seconds (or 0 for the default, 30), "
                              "not %d",
                 RAT_MAX_SHELL_TIMEOUT_S, o->shell_timeout_s);
        return -1;
    }
    for (size_t i = 0; o->allow_origins && o->allow_origins[i]; i++) {
        if (i >= RAT_MAX_ALLOW_ORIGINS) {
            snprintf(err, errlen, "--allow-origin (allow_origins) may be given at most %d times",
                     RAT_MAX_ALLOW_ORIGINS);
            return -1;
        }
        if (!o->allow_origins[i][0]) {
            snprintf(err, errlen, "--allow-origin (allow_origins) cannot be empty");
            return -1;
        }
    }
    return 0;
}

static const char *s_keep(char **slot, const char *v)
{
    *slot = xstrdup(v); /* NULL stays NULL */
    return *slot;
}

rat_server_t *rat_server_new(const rat_options_t *o, char *err, size_t errlen)
{
    if (rat_options_check(o, err, errlen) < 0)
        return NULL;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        snprintf(err, errlen, "cannot make the stop pipe: %s", strerror(errno));
        return NULL;
    }
    rat_server_t *s = xcalloc(1, sizeof *s);
    s->stop_r = p[0];
    s->stop_w = p[1];
    atomic_init(&s->running, false);
    rat_options_t *c = &s->opts;
    *c = *o;
    c->cwd = s_keep(&s->cwd, o->cwd);
    c->kernel = s_keep(&s->kernel, o->kernel);
    c->python = s_keep(&s->python, o->python);
    c->venv = s_keep(&s->venv, o->venv);
    c->kernelspec_dir = s_keep(&s->kernelspec_dir, o->kernelspec_dir);
    c->existing = s_keep(&s->existing, o->existing);
    c->assets_dir = s_keep(&s->assets_dir, o->assets_dir);
    c->log_level = s_keep(&s->log_level, o->log_level);
    c->host = s_keep(&s->host, o->host);
    c->token = s_keep(&s->token, o->token);
    c->gateway = s_keep(&s->gateway, o->gateway);
    c->gateway_token = s_keep(&s->gateway_token, o->gateway_token);
    c->gateway_ca = s_keep(&s->gateway_ca, o->gateway_ca);
    c->tls_cert = s_keep(&s->tls_cert, o->tls_cert);
    c->tls_key = s_keep(&s->tls_key, o->tls_key);
    s->origins = o->allow_origins && o->allow_origins[0] ? strv_dup((char *const *)o->allow_origins) : NULL;
    c->allow_origins = (const char *const *)s->origins;
    if (c->boot_timeout_s == 0)
        c->boot_timeout_s = 60;
    if (c->log_level)
        log_set_level((log_level_t)log_level_parse(c->log_level));
    return s;
}

static int s_run(rat_server_t *s, bool http)
{
    if (atomic_exchange(&s->running, true)) {
        /* s->why belongs to the run in progress: say it on stderr only. */
        fprintf(stderr, "rat-py: this server is already running (one run at a time)\n");
        return 1;
    }
    s->why[0] = '\0';
    server_ctl_t ctl = {.stop_fd = s->stop_r, .why = s->why, .whylen = sizeof s->why};
    int status = server_run(&s->opts, http, &ctl);
    if (status != 0 && !s->why[0])
        snprintf(s->why, sizeof s->why, "the server ended with exit status %d (see the log above)", status);
    /* The stops meant for this run are spent; one that comes from now on is
     * for the next run. */
    char drain[64];
    while (read(s->stop_r, drain, sizeof drain) > 0)
        ;
    atomic_store(&s->running, false);
    return status;
}

int rat_server_run_stdio(rat_server_t *s)
{
    return s_run(s, false);
}

int rat_server_run_http(rat_server_t *s)
{
    return s_run(s, true);
}

int rat_server_stop(rat_server_t *s)
{
    if (!s)
        return -1;
    /* Only write(2): async-signal-safe and thread-safe. It cannot fail but
     * with EAGAIN, when the pipe is full of stops already: nothing is lost. */
    int saved = errno;
    ssize_t n = write(s->stop_w, "s", 1);
    (void)n;
    errno = saved;
    return 0;
}

int rat_server_stop_fd(const rat_server_t *s)
{
    return s ? s->stop_w : -1;
}

const char *rat_server_error(const rat_server_t *s)
{
    return s ? s->why : "";
}

void rat_server_destroy(rat_server_t **s_p)
{
    if (!s_p || !*s_p)
        return;
    rat_server_t *s = *s_p;
    char *owned[] = {s->cwd,        s->kernel,    s->python, s->venv, s->existing,
                     s->assets_dir, s->log_level, s->host,   s->token, s->gateway,
                     s->gateway_token, s->gateway_ca, s->tls_cert, s->tls_key, s->kernelspec_dir};
    char *secrets[] = {s->token, s->gateway_token}; /* wiped: doc/security.md, Secrets */
    for (size_t i = 0; i < 2; i++)
        if (secrets[i])
            sodium_memzero(secrets[i], strlen(secrets[i]));
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        free(owned[i]);
    strv_free(s->origins);
    close(s->stop_r);
    close(s->stop_w);
    free(s);
    *s_p = NULL;
}
