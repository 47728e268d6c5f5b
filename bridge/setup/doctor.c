/* doctor: checks rat-py end to end by being its first client.
 *
 * Rather than re-deriving which kernel the server would pick, doctor starts
 * the real server (this same program, with the options it was given) and
 * talks MCP to it over pipes: what it reports is what a client would get.
 * Checks, in order: the kernel choice (kernelspec or interpreter), the
 * interpreter and kernel package versions, the kernel's boot time, a run's
 * round trip, the assets dir, and the terminal clients (doctor_clients.h).
 * One way, no circle: doctor calls doctor_clients; both print through
 * doctor_report. */
#include "doctor.h"
#include "doctor_clients.h"
#include "doctor_report.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#include "buf.h"
#include "config.h"
#include "fileio.h"
#include "gateway.h"
#include "gw_dl.h"
#include "install.h"
#include "kernelspec.h"
#include "lang.h"
#include "mem.h"
#include "mhd_dl.h"
#include "yaml_block.h"

#define REPLY_MAX (16u << 20)     /* bytes of one server line */
#define STDERR_KEEP 8192          /* bytes of the server's stderr kept for messages */
#define INIT_TIMEOUT_MS 10000
#define EXIT_WAIT_MS 3000

typedef struct {
    pid_t pid;
    int in, out, err;             /* our ends: server stdin, stdout, stderr */
    buf_t line;                   /* partial stdout line */
    buf_t stderr_text;
    int next_id;
} s_server_t;

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ the server */

/* The server doctor starts gets doctor's own arguments, but never a secret
 * in its argv: config_parse overwrote --token and --gateway-token there
 * (their values go through the environment instead, which other users
 * cannot read). */
static bool s_secret_arg(const char *a, bool *takes_next)
{
    static const char *const names[] = {"--token", "--gateway-token"};
    for (size_t k = 0; k < 2; k++) {
        size_t n = strlen(names[k]);
        if (strncmp(a, names[k], n) == 0 && (a[n] == '\0' || a[n] == '=')) {
            *takes_next = a[n] == '\0';
            return true;
        }
    }
    return false;
}

static int s_spawn(s_server_t *s, const char *self, int argc, char **argv, const rat_options_t *o)
{
    int pin[2], pout[2], perr[2];
    if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        dup2(perr[1], 2);
        char **av = xcalloc((size_t)argc + 1, sizeof *av);
        int n = 0;
        av[n++] = (char *)self;
        for (int i = 1; i < argc; i++) {
            bool next = false;
            if (s_secret_arg(argv[i], &next)) {
                i += next;
                continue;
            }
            av[n++] = argv[i];
        }
        if (o->token)
            setenv("RAT_PY_TOKEN", o->token, 1);
        if (o->gateway_token)
            setenv("JUPYTER_GATEWAY_AUTH_TOKEN", o->gateway_token, 1);
        execv("/proc/self/exe", av);
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    s->pid = pid;
    s->in = pin[1];
    s->out = pout[0];
    s->err = perr[0];
    fcntl(s->err, F_SETFL, fcntl(s->err, F_GETFL) | O_NONBLOCK);
    buf_init(&s->line, REPLY_MAX);
    buf_init(&s->stderr_text, 0);
    s->next_id = 1;
    return 0;
}

static void s_drain_stderr(s_server_t *s)
{
    char chunk[4096];
    ssize_t n;
    /* Keeps the last STDERR_KEEP bytes (the fd is non-blocking). */
    while ((n = read(s->err, chunk, sizeof chunk)) > 0) {
        buf_append(&s->stderr_text, chunk, (size_t)n);
        if (s->stderr_text.len > STDERR_KEEP)
            buf_consume(&s->stderr_text, s->stderr_text.len - STDERR_KEEP);
    }
}

/* The server's last stderr line (what it said when it gave up). */
static const char *s_last_words(s_server_t *s)
{
    s_drain_stderr(s);
    char *t = s->stderr_text.data;
    if (!t)
        return "(nothing on stderr)";
    while (s->stderr_text.len && (t[s->stderr_text.len - 1] == '\n'))
        t[--s->stderr_text.len] = '\0';
    char *nl = strrchr(t, '\n');
    return nl ? nl + 1 : t;
}

/* Sends a request and waits for its response (notifications skipped).
 * Returns the parsed response (caller owns it), or NULL on timeout/EOF. */
static json_object *s_request(s_server_t *s, const char *method, const char *params, int timeout_ms)
{
    int id = s->next_id++;
    char *msg = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}\n", id, method,
                          params ? params : "{}");
    size_t len = strlen(msg), off = 0;
    while (off < len) {
        ssize_t w = write(s->in, msg + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            free(msg);
            return NULL;
        }
        off += (size_t)w;
    }
    free(msg);
    int64_t deadline = s_now_ms() + timeout_ms;
    for (;;) {
        char *nl = s->line.data ? memchr(s->line.data, '\n', s->line.len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - s->line.data);
            char *text = xstrndup(s->line.data, n);
            json_object *m = json_tokener_parse(text);
            free(text);
            buf_consume(&s->line, n + 1);
            json_object *vid = NULL;
            if (m && json_object_object_get_ex(m, "id", &vid) && json_object_get_int(vid) == id &&
                !json_object_object_get_ex(m, "method", NULL))
                return m;
            json_object_put(m);
            continue;
        }
        int left = (int)(deadline - s_now_ms());
        if (left <= 0)
            return NULL;
        struct pollfd pf[2] = {{.fd = s->out, .events = POLLIN}, {.fd = s->err, .events = POLLIN}};
        if (poll(pf, 2, left) < 0 && errno != EINTR)
            return NULL;
        if (pf[1].revents & (POLLIN | POLLHUP))
            s_drain_stderr(s);
        if (pf[0].revents & (POLLIN | POLLHUP)) {
            char chunk[65536];
            ssize_t r = read(s->out, chunk, sizeof chunk);
            if (r <= 0)
                return NULL;
            if (buf_append(&s->line, chunk, (size_t)r) < 0)
                return NULL;
        }
    }
}

/* A tool call's text (caller owns it) and isError; NULL when no answer. */
static char *s_tool(s_server_t *s, const char *name, const char *args_json, bool *is_error, int timeout_ms)
{
    char *params = xasprintf("{\"name\":\"%s\",\"arguments\":%s}", name, args_json);
    json_object *m = s_request(s, "tools/call", params, timeout_ms);
    free(params);
    json_object *res = NULL, *content = NULL, *err = NULL;
    char *text = NULL;
    *is_error = true;
    if (m && json_object_object_get_ex(m, "result", &res) && json_object_object_get_ex(res, "content", &content) &&
        json_object_array_length(content) > 0) {
        json_object *t = NULL, *ie = NULL;
        if (json_object_object_get_ex(json_object_array_get_idx(content, 0), "text", &t))
            text = xstrdup(json_object_get_string(t));
        *is_error = json_object_object_get_ex(res, "isError", &ie) && json_object_get_boolean(ie);
    } else if (m && json_object_object_get_ex(m, "error", &err)) {
        json_object *em = NULL;
        text = xstrdup(json_object_object_get_ex(err, "message", &em) ? json_object_get_string(em) : "error");
    }
    json_object_put(m);
    return text;
}

static void s_stop(s_server_t *s)
{
    if (s->in >= 0)
        close(s->in);
    s->in = -1;
    int status;
    int64_t deadline = s_now_ms() + EXIT_WAIT_MS;
    while (waitpid(s->pid, &status, WNOHANG) == 0) {
        if (s_now_ms() > deadline) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
            break;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    close(s->out);
    close(s->err);
    buf_free(&s->line);
    buf_free(&s->stderr_text);
}

/* The value after "label: " on a line of ctl status text (caller owns). */
static char *s_status_field(const char *status, const char *label)
{
    char *key = xasprintf("\n%s: ", label);
    const char *p = strstr(status, key);
    char *out = NULL;
    if (p) {
        p += strlen(key);
        const char *e = strchr(p, '\n');
        out = xstrndup(p, e ? (size_t)(e - p) : strlen(p));
    }
    free(key);
    return out;
}

/* ------------------------------------------------------------ checks */

/* Whether dir is writable, or could be created (its nearest existing
 * ancestor is writable). Nothing is created. */
static bool s_dir_writable(const char *dir, char **why)
{
    char *p = xstrdup(dir);
    for (;;) {
        if (fileio_is_dir(p)) {
            bool ok = access(p, W_OK | X_OK) == 0;
            if (!ok)
                *why = xasprintf("%s is not writable (%s)", p, strerror(errno));
            free(p);
            return ok;
        }
        if (access(p, F_OK) == 0) {
            *why = xasprintf("%s exists and is not a directory", p);
            free(p);
            return false;
        }
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) {
            free(p);
            return true;
        }
        *slash = '\0';
    }
}

/* Reports the kernel the server picked (from its idle status line, which
 * it frees) and how long it took to boot; returns its language adapter. */
static const lang_t *s_report_kernel(char *status, const char *kname, int64_t boot_wall)
{
    char kerr[1024];
    char lang_name[64] = "";
    sscanf(status, "%63s", lang_name);
    const lang_t *lang = lang_find(lang_name);
    char *kernel = s_status_field(status, "kernel");
    char *interp = s_status_field(status, "interpreter");
    char *env = s_status_field(status, "environment");
    /* "python3 (Python 3 (ipykernel)), pid 123, ready in 671ms" */
    char *cut = kernel ? strstr(kernel, ", pid ") : NULL;
    if (cut)
        *cut = '\0';
    if (!kname) {
        char spec_name[128] = "";
        kernelspec_t *ks = kernel && sscanf(kernel, "%127s", spec_name) == 1
                               ? kernelspec_find(spec_name, kerr, sizeof kerr) : NULL;
        if (ks)
            doctor_ok("kernelspec: %s in %s", kernel, ks->dir);
        else
            doctor_ok("kernel: %s", kernel ? kernel : "?");
        kernelspec_destroy(&ks);
    }
    if (interp)
        doctor_ok("interpreter: %s%s%s%s", interp, env ? " (" : "", env ? env : "", env ? ")" : "");
    else if (env)
        doctor_info("environment: %s", env);
    const char *ready = cut ? strstr(cut + 1, "ready in ") : NULL;
    doctor_ok("kernel boots: %s (%lld ms from start to idle, MCP handshake included)", ready ? ready : "ready",
         (long long)boot_wall);
    free(kernel);
    free(interp);
    free(env);
    free(status);
    return lang;
}

/* A run's answer (the interpreter and the kernel package, from the
 * language's probe code) and the warm round trip of a run that does
 * nothing; without a run probe for the language, a completion round trip. */
static void s_check_runs(s_server_t *srv, const lang_t *lang, const family_t *fam, int boot_wait_ms)
{
    bool is_err = false;
    if (lang && lang->probe_code) {
        buf_t args;
        buf_init(&args, 0);
        buf_puts(&args, "{\"code\":");
        buf_put_json_str(&args, lang->probe_code, strlen(lang->probe_code));
        buf_puts(&args, "}");
        char *out = s_tool(srv, "run", args.data, &is_err, boot_wait_ms);
        buf_free(&args);
        if (!out || is_err) {
            doctor_bad(fam->install_hint, "kernel package: %s", out ? out : "no answer");
        } else {
            char *nl = strchr(out, '\n');
            char *second = nl ? nl + 1 : NULL;
            if (nl)
                *nl = '\0';
            char *nl2 = second ? strchr(second, '\n') : NULL;
            if (nl2)
                *nl2 = '\0';
            doctor_ok("runs: %s, %s", out, second && *second ? second : "?");
        }
        free(out);
        /* The round trip of a run that does nothing, warm. */
        buf_init(&args, 0);
        buf_puts(&args, "{\"code\":");
        buf_put_json_str(&args, lang->noop_code, strlen(lang->noop_code));
        buf_puts(&args, "}");
        int64_t best = -1;
        for (int i = 0; i < 3; i++) {
            int64_t t = s_now_ms();
            out = s_tool(srv, "run", args.data, &is_err, 30000);
            int64_t dt = s_now_ms() - t;
            if (out && !is_err && (best < 0 || dt < best))
                best = dt;
            free(out);
        }
        buf_free(&args);
        if (best >= 0)
            doctor_ok("run round trip: %lld ms (best of 3, through MCP)", (long long)best);
        else
            doctor_bad(NULL, "run round trip: the run failed");
    } else {
        /* No helper for this language: time a completion round trip. */
        int64_t t = s_now_ms();
        char *out = s_tool(srv, "look", "{\"code\":\"a\",\"cursor\":1}", &is_err, 30000);
        if (out && !is_err)
            doctor_ok("completion round trip: %lld ms (no run probe for this language)", (long long)(s_now_ms() - t));
        else
            doctor_bad(NULL, "completion round trip: %s", out ? out : "no answer");
        free(out);
    }
}

/* The assets directory the server would use is writable. */
static void s_check_assets(const rat_options_t *opts)
{
    char *cwd = fileio_realpath(opts->cwd ? opts->cwd : ".");
    char *assets = opts->assets_dir ? (opts->assets_dir[0] == '/' ? xstrdup(opts->assets_dir)
                                                               : xasprintf("%s/%s", cwd ? cwd : ".",
                                                                           opts->assets_dir))
                                  : xasprintf("%s/.rat-assets", cwd ? cwd : ".");
    char *why = NULL;
    if (s_dir_writable(assets, &why))
        doctor_ok("assets dir: %s is writable", assets);
    else
        doctor_bad("give a writable directory with --assets-dir DIR", "assets dir: %s", why);
    free(why);
    free(assets);
    free(cwd);
}

static void s_check_http(void)
{
    /* Optional: only --http needs it, so a missing one is information. */
    char what[600];
    if (mhd_dl_available(what, sizeof what))
        doctor_ok("HTTP transport (--http): %s", what);
    else
        doctor_info("HTTP transport (--http): unavailable: %s", what);
}

/* Optional as well: libcurl and libwslay, loaded for gateway kernels and by
 * `rat`'s client of its runtimes. The wheel carries libwslay but not
 * libcurl's chain (tens of MB), so there libcurl is the system's, and this
 * line says when it is missing (doc/packaging.md). */
static void s_check_gateway_libs(void)
{
    char err[600];
    if (gw_dl_load(err, sizeof err) == 0)
        doctor_ok("gateway kernels (--gateway), `rat` runtimes: libcurl and libwslay load");
    else
        doctor_info("gateway kernels (--gateway), `rat` runtimes: unavailable: %s", err);
}

/* --gateway: the server answers, accepts the token, and has the kernelspec
 * asked for. Returns false when the kernel cannot start there. */
static bool s_check_gateway(const rat_options_t *o, const char *kname)
{
    gateway_opts_t go = {.url = o->gateway, .token = o->gateway_token, .ca_file = o->gateway_ca,
                         .insecure = o->gateway_insecure};
    char err[1024];
    gateway_t *gw = gateway_new(NULL, &go, err, sizeof err);
    if (!gw) {
        doctor_bad(NULL, "gateway: %s", err);
        return false;
    }
    long status = 0;
    char *body = NULL;
    bool ok = false;
    json_object *j = NULL, *specs = NULL, *v = NULL;
    int64_t t0 = s_now_ms();
    if (gateway_request_sync(gw, "GET", "/api/kernelspecs", NULL, GATEWAY_REQUEST_TIMEOUT_MS, &status, &body, err,
                             sizeof err) < 0) {
        doctor_bad("start it, or give its URL with --gateway", "gateway: %s", err);
    } else if (status != 200) {
        char *e = gateway_http_error(gw, "GET /api/kernelspecs", status, body);
        doctor_bad(NULL, "gateway: %s", e);
        free(e);
    } else if (!(j = json_tokener_parse(body)) || !json_object_object_get_ex(j, "kernelspecs", &specs) ||
               !json_object_is_type(specs, json_type_object)) {
        doctor_bad(NULL, "gateway: %s answered GET /api/kernelspecs without a kernelspecs object", gateway_url(gw));
    } else if (!json_object_object_get_ex(specs, kname, &v)) {
        doctor_bad("`rat-py kernels --gateway URL` lists them", "gateway: %s has no kernelspec %s", gateway_url(gw),
              kname);
    } else {
        doctor_ok("gateway: %s answers with the token, kernelspec %s there (%d kernelspecs, %lld ms)", gateway_url(gw),
             kname, json_object_object_length(specs), (long long)(s_now_ms() - t0));
        ok = true;
    }
    json_object_put(j);
    free(body);
    gateway_destroy(&gw);
    return ok;
}

int doctor_main(int argc, char **argv, const char *self_argv0, const family_t *fam)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("Usage: %s doctor [SERVER OPTIONS]\n"
                   "Starts %s with the given options (--cwd, --kernel, --python, --venv, ...) and checks\n"
                   "that it works: the kernel it picks, versions, boot time, a run's round trip, the assets\n"
                   "dir, and the terminal clients (mcptocli, mcp2cli): versions, the registration, `py` on\n"
                   "PATH, stale cached tool schemas. Exit status 1 if any check fails.\n",
                   fam->prog, fam->prog);
            return 0;
        }
    }
    /* The options must be valid server options. */
    config_t cfg;
    if (config_parse(&cfg, argc, argv) < 0) {
        config_free(&cfg);
        return 2;
    }
    if (cfg.sub_at || cfg.cmd == CONFIG_CMD_KERNELS) {
        fprintf(stderr, "%s doctor: unexpected '%s': doctor takes server options only (see %s doctor --help)\n",
                fam->prog, argv[cfg.sub_at ? cfg.sub_at : 1], fam->prog);
        config_free(&cfg);
        return 2;
    }
    rat_options_t opts = cfg.opts; /* strings borrowed from argv, secrets from cfg (freed at the end) */
    opts.allow_origins = NULL;     /* doctor passes argv on to the server it starts */
    char *self = install_self_path(self_argv0);
    if (!self)
        self = xstrdup(fam->prog);
    doctor_report_reset();
    /* A server that dies must not take doctor with it (a write to its
     * closed stdin would raise SIGPIPE). */
    signal(SIGPIPE, SIG_IGN);

    /* The kernelspec, when one is named (the default choice is reported
     * from the server's status below). */
    const char *kname = opts.kernel;
    char kerr[1024];
    if (opts.gateway) {
        /* The kernelspec is the gateway's. */
        kname = kname ? kname : "python3";
        if (!s_check_gateway(&opts, kname)) {
            doctor_check_clients(fam, self, NULL);
            free(self);
            config_free(&cfg);
            return 1;
        }
    } else if (kname) {
        kernelspec_t *ks = kernelspec_find(kname, kerr, sizeof kerr);
        if (ks)
            doctor_ok("kernelspec: %s (%s, language %s) in %s", ks->name, ks->display_name, ks->language, ks->dir);
        else
            doctor_bad("`rat-py kernels` lists the installed kernelspecs", "kernelspec: %s", kerr);
        bool found = ks != NULL;
        kernelspec_destroy(&ks);
        if (!found) {
            doctor_check_clients(fam, self, NULL);
            free(self);
            config_free(&cfg);
            return 1;
        }
    }

    s_server_t srv = {.in = -1};
    json_object *tools = NULL; /* the server's tools/list result */
    int64_t t0 = s_now_ms();
    if (s_spawn(&srv, self, argc, argv, &opts) < 0) {
        doctor_bad(NULL, "cannot start %s: %s", self, strerror(errno));
        free(self);
        config_free(&cfg);
        return 1;
    }
    json_object *init = s_request(&srv, "initialize",
                                  "{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},"
                                  "\"clientInfo\":{\"name\":\"rat-py doctor\",\"version\":\"1\"}}",
                                  INIT_TIMEOUT_MS);
    if (!init) {
        doctor_bad(NULL, "server: %s did not start: %s", fam->prog, s_last_words(&srv));
        goto done;
    }
    json_object_put(init);
    static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    if (write(srv.in, initialized, sizeof initialized - 1) < 0) {
        doctor_bad(NULL, "server: %s closed its input: %s", fam->prog, s_last_words(&srv));
        goto done;
    }
    json_object_put(s_request(&srv, "ping", NULL, INIT_TIMEOUT_MS));
    /* The tool schemas, for the terminal clients' caches (doctor_clients.h). */
    json_object *listed = s_request(&srv, "tools/list", NULL, INIT_TIMEOUT_MS), *res = NULL;
    if (listed && json_object_object_get_ex(listed, "result", &res))
        tools = json_object_get(res);
    json_object_put(listed);

    /* The kernel boots: the first run waits for it. What code to run depends
     * on the language, which the status says once the kernel is known. */
    int boot_wait_ms = (opts.boot_timeout_s > 0 ? opts.boot_timeout_s : 60) * 1000 + 5000;
    bool is_err = false;
    char *status = NULL;
    const lang_t *lang = NULL;
    for (int64_t until = s_now_ms() + boot_wait_ms; s_now_ms() < until;) {
        free(status);
        status = s_tool(&srv, "ctl", "{\"op\":\"status\"}", &is_err, INIT_TIMEOUT_MS);
        if (!status || strstr(status, " idle |") || strstr(status, " dead |"))
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (!status) {
        doctor_bad(NULL, "server: %s stopped answering: %s", fam->prog, s_last_words(&srv));
        goto done;
    }
    if (!strstr(status, " idle |")) {
        char *fail = s_status_field(status, "last failure");
        doctor_bad(fail && strstr(fail, "ipykernel") ? NULL : fam->install_hint, "kernel boots: %s",
              fail ? fail : "not ready in time");
        free(fail);
        free(status);
        goto done;
    }
    int64_t boot_wall = s_now_ms() - t0;
    lang = s_report_kernel(status, kname, boot_wall);
    s_check_runs(&srv, lang, fam, boot_wait_ms);

done:
    s_stop(&srv);
    s_check_assets(&opts);
    s_check_http();
    s_check_gateway_libs();
    doctor_check_clients(fam, self, tools);
    json_object_put(tools);
    free(self);
    config_free(&cfg);
    return doctor_report_failures() ? 1 : 0;
}
