/* server: process wiring and shutdown. */
#define LOG_MODULE "server"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include <zmq.h>

#include "connfile.h"
#include "fileio.h"
#include "interp.h"
#include "jpaths.h"
#include "kernelspec.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "runtime.h"
#include "sigs.h"
#include "assets.h"
#include "tools.h"
#include "transport_http.h"
#include "mcp_app.h"
#include "page.h"
#include "contents.h"
#include "transport_stdio.h"
#include "workdir.h"

#define EXIT_GRACE_MS 100   /* kernel SIGTERM grace at exit; the whole exit stays < 300 ms */
#define FLUSH_MS 50         /* last output to the client at exit */
#define DETACH_MS 150       /* an attached kernel's helper undoes its changes (a few ms when idle) */
#define TLS_FILE_MAX ((size_t)1 << 20) /* a PEM certificate chain or key */
#define HTTP_MAX_CONNECTIONS 2048
#define HTTP_FD_SPARE 256   /* descriptors the HTTP clients leave to the rest */

typedef struct {
    loop_t *loop;
    runtime_t *rt;
    transport_http_t *http;
    contents_t *contents;         /* the file API (/api/contents) over --cwd, or NULL */
    int64_t started_ms;
} s_app_t;

static void s_on_signal(void *ud, int signo)
{
    s_app_t *app = ud;
    if (signo == SIGCHLD) {
        if (app->rt)
            runtime_on_sigchld(app->rt);
        return;
    }
    log_info("signal %d: shutting down", signo);
    loop_stop(app->loop);
}

/* A library caller's rat_server_stop. The descriptor is not read here (rat_api.c
 * drains it after the run, so no stop is lost): unwatch it, or it would keep
 * the loop spinning through the shutdown. ud: the watch id, zeroed. */
static void s_on_stop(loop_t *loop, void *ud, int revents)
{
    int *watch = ud;
    log_info("stop requested: shutting down");
    loop_unwatch(loop, *watch);
    *watch = 0;
    loop_stop(loop);
}

/* A run that cannot go on says why on stderr, as the command line always
 * did, and in ctl->why for library callers. */
static void s_fail(const server_ctl_t *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void s_fail(const server_ctl_t *ctl, const char *fmt, ...)
{
    char msg[2560];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rat-py: %s\n", msg);
    if (ctl->why && ctl->whylen)
        snprintf(ctl->why, ctl->whylen, "%s", msg);
}

static void s_on_eof(void *ud)
{
    s_app_t *app = ud;
    log_info("stdin closed: shutting down");
    loop_stop(app->loop);
}

/* The runtime dir, or a private temporary one (mkdtemp: 0700, a fresh
 * name) when it is not writable; then *is_temp is set and the caller
 * removes it at exit. NULL when neither can be had: a shared directory such
 * as /tmp itself is never used for the connection and log files. */
static char *s_runtime_dir(bool *is_temp, const server_ctl_t *ctl)
{
    *is_temp = false;
    char *rt = jpaths_runtime_dir();
    if (jpaths_ensure_dir(rt) == 0 && access(rt, W_OK | X_OK) == 0)
        return rt;
    int e = errno;
    const char *tmpdir = getenv("TMPDIR");
    char *tmpl = xasprintf("%s/rat-py-runtime-XXXXXX", tmpdir && tmpdir[0] == '/' ? tmpdir : "/tmp");
    char *d = mkdtemp(tmpl);
    if (d)
        log_warn("the Jupyter runtime dir %s is not writable (%s); using %s instead", rt, strerror(e), d);
    else
        s_fail(ctl, "the Jupyter runtime dir %s is not writable (%s), and no private directory could be made in "
                    "its place (%s); set JUPYTER_RUNTIME_DIR to a writable directory",
               rt, strerror(e), strerror(errno));
    free(rt);
    *is_temp = d != NULL;
    if (!d)
        free(tmpl);
    return d;
}

/* How the default (Python) kernel starts when it works in dir: the
 * interpreter of --python, --venv, $VIRTUAL_ENV or a venv found there
 * (interp.h), else the python3 kernelspec (*python_out NULL), else any
 * Python with ipykernel. *warn_out: a venv found there and not trusted
 * (interp_t.refused), for the next result, or NULL. An interpreter runs a stock ipykernel through
 * rat-py's kernelspec (kernelspec/kernel.json, or the copy in
 * --kernelspec-dir, which always wants one) as its {python}. Fills the
 * owned out parameters. Returns 0, or an exit status with err filled. */
static int s_python_kernel(const rat_options_t *cfg, const char *dir, char **python_out, char **interp_out,
                           char **note_out, char **warn_out, char *err, size_t errlen)
{
    interp_t it = {0};
    *python_out = NULL;
    *interp_out = *note_out = *warn_out = NULL;
    if (interp_resolve(dir, cfg->python, cfg->venv, &it, err, errlen) < 0)
        return 2;
    *note_out = it.note;
    it.note = NULL;
    *warn_out = it.refused;
    it.refused = NULL;
    char *python = it.python;
    it.python = NULL;
    interp_free(&it);
    if (!python && !cfg->kernelspec_dir) {
        kernelspec_t *ks = kernelspec_find("python3", err, errlen);
        if (ks) {
            kernelspec_destroy(&ks);
            return 0;
        }
    }
    if (!python)
        python = interp_find_python_with_ipykernel();
    if (!python) {
        snprintf(err, errlen, "there is no %sPython with ipykernel on this machine; install one (Debian: apt install "
                              "python3-ipykernel; pip: pip install ipykernel)",
                 cfg->kernelspec_dir ? "" : "python3 kernelspec and no ");
        FREE_AND_NULL(*note_out);
        FREE_AND_NULL(*warn_out);
        return 1;
    }
    *python_out = python;
    *interp_out = xstrdup(python);
    return 0;
}

/* workdir_kernel_fn: how the kernel starts in dir (a client's root). */
static int s_kernel_in(void *ud, const char *dir, char **python, char **interp, char **note, char **warning,
                       char *err, size_t errlen)
{
    const rat_options_t *cfg = ud;
    if (cfg->kernel) { /* a kernelspec: the same in every directory */
        *python = *interp = *note = *warning = NULL;
        return 0;
    }
    return s_python_kernel(cfg, dir, python, interp, note, warning, err, errlen) ? -1 : 0;
}

/* Works out how to start the kernel. Fills ro (pointing into the owned
 * strings returned through the out parameters). Returns 0, or an exit status. */
static int s_choose_kernel(const rat_options_t *cfg, const char *cwd, runtime_opts_t *ro, char **interp, char **note,
                           char **warning,
                           char **python_out, char **existing_out, const server_ctl_t *ctl)
{
    char err[2048];
    if (cfg->gateway) {
        /* The kernel is the gateway's: a kernelspec name and a kernel id there. */
        ro->gateway_url = cfg->gateway;
        ro->gateway_token = cfg->gateway_token;
        ro->gateway_ca = cfg->gateway_ca;
        ro->gateway_insecure = cfg->gateway_insecure;
        ro->kernel_name = cfg->kernel;
        ro->existing = cfg->existing;
        return 0;
    }
    if (cfg->existing) {
        *existing_out = connfile_find(cfg->existing, err, sizeof err);
        if (!*existing_out) {
            s_fail(ctl, "--existing: %s", err);
            return 2;
        }
        ro->existing = *existing_out;
        return 0;
    }
    if (cfg->kernel) {
        ro->kernel_name = cfg->kernel;
        return 0;
    }
    int status = s_python_kernel(cfg, cwd, python_out, interp, note, warning, err, sizeof err);
    if (status) {
        s_fail(ctl, "%s", err);
        return status;
    }
    ro->env_note = *note;
    ro->python = *python_out;
    ro->kernelspec_dir = cfg->kernelspec_dir;
    ro->interpreter = *interp;
    if (!*python_out)
        ro->kernel_name = "python3";
    return 0;
}

/* GET /health: {status, kernel, exec_count, uptime_s, sessions}. */
static void s_route_health(void *ud, const char *path, http_reply_t *out)
{
    s_app_t *app = ud;
    if (strcmp(path, "/health") != 0)
        return;
    runtime_status_t st;
    runtime_status(app->rt, &st);
    out->status = 200;
    out->content_type = "application/json";
    out->body = xasprintf("{\"status\":\"%s\",\"kernel\":\"%s\",\"exec_count\":%ld,\"uptime_s\":%lld,"
                          "\"sessions\":%zu}",
                          strcmp(st.state, "dead") == 0 ? "degraded" : "ok", st.state, st.exec_count,
                          (long long)((loop_now_ms() - app->started_ms) / 1000),
                          app->http ? transport_http_sessions(app->http) : (size_t)0);
    out->len = strlen(out->body);
}

/* GET /assets/<id>: the file with its type; HTML and SVG in a CSP sandbox
 * (a unique origin), so a page made by user code cannot call /mcp. */
static void s_route_assets(void *ud, const char *path, http_reply_t *out)
{
    assets_t *store = ud;
    const char *mime = NULL;
    const char *id = path + strlen("/assets/");
    char *file = assets_path(store, id, &mime);
    if (!file && (file = assets_output_path(store, id)) != NULL) /* a run's full output (truncated.full_output_url) */
        mime = "text/plain; charset=utf-8";
    struct stat st;
    int fd = file ? fileio_open_regular(file, O_RDONLY, 0, &st) : -1; /* a FIFO there must not block the loop */
    free(file);
    if (fd < 0) {
        out->status = 404;
        out->content_type = "application/json";
        out->body = xstrdup("{\"error\":\"asset_not_found\"}");
        out->len = strlen(out->body);
        return;
    }
    out->status = 200;
    out->content_type = mime;
    out->fd = fd;
    out->fd_size = (size_t)st.st_size;
    out->sandbox = strcmp(mime, "text/html") == 0 || strcmp(mime, "image/svg+xml") == 0;
}

/* --http: raises the descriptor limit, starts the daemon with its extra
 * routes and says where it listens. Returns 0, or the exit status. */
static int s_start_http(s_app_t *app, const rat_options_t *cfg, mcp_server_t *mcp, assets_t *store,
                        const char *cwd, const server_ctl_t *ctl)
{
    /* Many clients means many descriptors: use the hard limit, not the
     * (often 1024) soft one, so the connection limit is what bounds us.
     * That limit leaves HTTP_FD_SPARE descriptors to the rest of the
     * process: a kernel's sockets and files, its restart's, the spare's.
     * czmq aborts when it cannot make a socket (kernel_zmq.c). */
    struct rlimit rl;
    unsigned max_conn = HTTP_MAX_CONNECTIONS;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
            getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)max_conn + HTTP_FD_SPARE)
            max_conn = rl.rlim_cur > 2 * HTTP_FD_SPARE ? (unsigned)(rl.rlim_cur - HTTP_FD_SPARE) : (unsigned)(rl.rlim_cur / 2);
    }
    /* HTTPS: the PEM files, read once (the transport keeps copies). */
    char *cert = NULL, *key = NULL;
    bool https = cfg->tls_cert && cfg->tls_key;
    if (https) {
        size_t len = 0;
        cert = fileio_read(cfg->tls_cert, TLS_FILE_MAX, &len);
        if (!cert) {
            s_fail(ctl, "--tls-cert %s: %s", cfg->tls_cert,
                   errno == EFBIG ? "larger than 1 MiB" : fileio_strerror(errno));
            return 2;
        }
        key = fileio_read(cfg->tls_key, TLS_FILE_MAX, &len);
        if (!key) {
            s_fail(ctl, "--tls-key %s: %s", cfg->tls_key,
                   errno == EFBIG ? "larger than 1 MiB" : fileio_strerror(errno));
            free(cert);
            return 2;
        }
        /* As for a token file: a private key others can read is no longer
         * private (anyone who has it can pose as this server). */
        struct stat kst;
        if (stat(cfg->tls_key, &kst) == 0 && (kst.st_mode & 077))
            fprintf(stderr, "rat-py: warning: --tls-key %s can be read by other users (mode %03o); chmod 600 it\n",
                    cfg->tls_key, (unsigned)(kst.st_mode & 0777));
        /* What GnuTLS would refuse with one word for both, said per file. */
        const char *opt = NULL, *path = NULL, *why = NULL;
        if (!strstr(cert, "-----BEGIN CERTIFICATE-----"))
            opt = "--tls-cert", path = cfg->tls_cert, why = "no PEM certificate in it (-----BEGIN CERTIFICATE-----)";
        else if (strstr(key, "ENCRYPTED"))
            opt = "--tls-key", path = cfg->tls_key,
            why = "the key is encrypted; rat-py needs it unencrypted (openssl pkey -in KEY -out PLAIN), in a file only "
                  "you can read";
        else if (!strstr(key, "PRIVATE KEY-----"))
            opt = "--tls-key", path = cfg->tls_key, why = "no PEM private key in it (-----BEGIN PRIVATE KEY-----)";
        if (why) {
            s_fail(ctl, "%s %s: %s", opt, path, why);
            free(cert);
            sodium_memzero(key, strlen(key));
            free(key);
            return 2;
        }
    }
    transport_http_opts_t ho = {
        .max_connections = max_conn,
        .host = cfg->host,
        .port = cfg->port >= 0 ? cfg->port : 8000,
        .token = cfg->token,
        .allow_origins = (char *const *)cfg->allow_origins,
        .allow_insecure_remote = cfg->insecure_no_token,
        .tls_cert_pem = cert,
        .tls_key_pem = key,
        .max_unsent = cfg->unsent_max_mb > 0 ? (size_t)cfg->unsent_max_mb << 20 : 0,
    };
    char err[2048];
    app->http = transport_http_new(app->loop, mcp, &ho, err, sizeof err);
    free(cert);
    if (key) {
        sodium_memzero(key, strlen(key));
        free(key);
    }
    if (!app->http) {
        s_fail(ctl, "%s", err);
        return 2;
    }
    transport_http_route(app->http, "/health", s_route_health, app);
    transport_http_route(app->http, "/assets/", s_route_assets, store);
    app->contents = contents_new(app->http, cwd);
    page_register(app->http);
    const char *h = cfg->host ? cfg->host : "127.0.0.1";
    bool v6 = strchr(h, ':') != NULL;
    fprintf(stderr, "rat-py: serving MCP at %s://%s%s%s:%d/mcp%s\n", https ? "https" : "http", v6 ? "[" : "", h,
            v6 ? "]" : "", transport_http_port(app->http), cfg->token ? " (bearer token required)" : "");
    if (!https && !transport_http_loopback(app->http))
        fprintf(stderr, "rat-py: warning: plain HTTP on %s: %s crosses the network in clear, for anyone on the way "
                        "to read (and then to run code as you); give --tls-cert and --tls-key, or put a TLS proxy "
                        "in front\n",
                h, cfg->token ? "the token" : "everything, code and output,");
    /* The page's URL carries the token only to a terminal: stderr may be a
     * log file that outlives it (a service's journal, a CI log). */
    bool tty = isatty(STDERR_FILENO);
    char *page = page_url(cfg->host, transport_http_port(app->http), https, tty ? cfg->token : NULL);
    fprintf(stderr, "rat-py: notebook at %s%s\n", page,
            cfg->token && !tty ? " (add ?token= and the token: it is printed only to a terminal, never to a log)"
                               : "");
    free(page);
    return 0;
}

int server_run(const rat_options_t *cfg, bool http, const server_ctl_t *ctl)
{
    /* Signals first: every thread created later (libzmq's, czmq's actors)
     * inherits the mask. */
    sigs_t *sigs = sigs_new();
    if (!sigs) {
        s_fail(ctl, "cannot set up signal handling: %s", strerror(errno));
        return 1;
    }
    if (sodium_init() < 0) {
        s_fail(ctl, "libsodium failed to initialize");
        sigs_destroy(&sigs);
        return 1;
    }
    int status = 0;
    char *cwd = fileio_realpath(cfg->cwd ? cfg->cwd : ".");
    char *assets = NULL, *rtdir = NULL, *existing = NULL;
    bool rtdir_temp = false;
    char *python = NULL, *interp = NULL, *env_note = NULL, *env_warning = NULL;
    workdir_t *workdir = NULL;
    loop_t *loop = NULL;
    mcp_server_t *mcp = NULL;
    transport_stdio_t *tr = NULL;
    assets_t *store = NULL;
    s_app_t app = {0};
    tools_ctx_t ctx = {0};
    int stop_watch = 0;
    if (!cwd || !fileio_is_dir(cwd)) {
        s_fail(ctl, "--cwd %s: not a directory", cfg->cwd ? cfg->cwd : ".");
        status = 2;
        goto out;
    }
    assets = cfg->assets_dir ? (cfg->assets_dir[0] == '/' ? xstrdup(cfg->assets_dir)
                                                           : xasprintf("%s/%s", cwd, cfg->assets_dir))
                             : xasprintf("%s/.rat-assets", cwd);
    rtdir = s_runtime_dir(&rtdir_temp, ctl);
    if (!rtdir) {
        status = 1;
        goto out;
    }
    store = assets_new(assets, 0, cfg->assets_max_mb ? (unsigned long long)cfg->assets_max_mb << 20 : 0);
    assets_serve_http(store, http);
    runtime_opts_t ro = {
        .assets = store,
        .cwd = cwd,
        .runtime_dir = rtdir,
        .assets_dir = assets,
        .boot_timeout_ms = cfg->boot_timeout_s * 1000,
        .shell_timeout_ms = cfg->shell_timeout_s * 1000, /* 0: the runtime's default */
        .allow_restart = cfg->allow_restart,
        .spare = cfg->spare,
    };
    status = s_choose_kernel(cfg, cwd, &ro, &interp, &env_note, &env_warning, &python, &existing, ctl);
    if (status)
        goto out;

    loop = loop_new();
    app.loop = loop;
    sigs_attach(sigs, loop, s_on_signal, &app);
    if (ctl->stop_fd >= 0)
        stop_watch = loop_watch_fd(loop, ctl->stop_fd, ZMQ_POLLIN, s_on_stop, &stop_watch);

    /* The kernel boots while the client handshakes: runtime_new has it
     * launched from the loop's first pass, right after that pass has
     * answered what is already on stdin (`initialize`). What choosing the
     * kernel allocated and freed goes back to the system first, so the
     * sockets' long-lived buffers do not keep it resident. */
    malloc_trim(0);
    char err[2048];
    app.rt = runtime_new(loop, &ro, err, sizeof err);
    if (!app.rt) {
        s_fail(ctl, "%s", err);
        status = 1;
        goto out;
    }
    app.started_ms = loop_now_ms();
    mcp = mcp_server_new("rat-py", RAT_VERSION, tools_instructions());
    workdir_opts_t wo = {
        .dir = cwd,
        .from_option = cfg->cwd != NULL,
        .movable = !cfg->gateway && !cfg->existing,
        .assets_option = cfg->assets_dir,
        .kernel = s_kernel_in,
        .kernel_ud = (void *)cfg,
        .env_warning = env_warning,
    };
    workdir = workdir_new(loop, mcp, app.rt, store, &wo);
    ctx = (tools_ctx_t){.loop = loop, .rt = app.rt, .assets = store, .started_ms = app.started_ms, .workdir = workdir};
    tool_run_register(mcp, &ctx);
    tool_look_register(mcp, &ctx);
    tool_ctl_register(mcp, &ctx);
    tool_assets_register(mcp, &ctx);
    tool_watch_register(mcp, &ctx);
    mcp_app_register(mcp);
    if (http) {
        status = s_start_http(&app, cfg, mcp, store, cwd, ctl);
        if (status)
            goto out;
    } else {
        tr = transport_stdio_new(loop, mcp, STDIN_FILENO, STDOUT_FILENO, s_on_eof, &app);
    }
    if (loop_run(loop) < 0)
        status = 1;

    /* Shutdown, bounded: last words to the client, then the kernel. */
    if (tr)
        transport_stdio_flush(tr, FLUSH_MS);
    transport_stdio_destroy(&tr); /* cancels calls in flight (they release their runs) */
    transport_http_destroy(&app.http);
    contents_destroy(&app.contents);
    tool_watch_destroy(&ctx); /* it watches the runtime: before it goes */
    runtime_detach(app.rt, DETACH_MS); /* an attached kernel is left as it was found */
    runtime_destroy(&app.rt, EXIT_GRACE_MS);
out:
    transport_stdio_destroy(&tr);
    transport_http_destroy(&app.http);
    contents_destroy(&app.contents);
    tool_watch_destroy(&ctx);
    runtime_destroy(&app.rt, EXIT_GRACE_MS);
    workdir_destroy(&workdir); /* after the sessions and the runtime, which call back into it */
    mcp_server_destroy(&mcp);
    sigs_destroy(&sigs); /* unwatches: before the loop goes */
    if (loop)
        loop_unwatch(loop, stop_watch);
    loop_destroy(&loop);
    free(python);
    free(interp);
    free(env_note);
    free(env_warning);
    free(existing);
    assets_destroy(&store);
    if (rtdir_temp && rmdir(rtdir) < 0) /* empty by now: the kernel's files are gone */
        log_warn("cannot remove %s: %s", rtdir, strerror(errno));
    free(rtdir);
    free(assets);
    free(cwd);
    return status;
}
