/* The public C API's option checks (include/rat/rat.h): a library caller
 * gets exactly the validation the command line gets (config.c hands its
 * options to the same rat_options_check), and rat_server_new keeps its own
 * copy of every string, however many there are. Only the public header is
 * used here. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "rat/rat.h"

static char s_err[512];

/* Whether o is refused by both rat_options_check and rat_server_new, with
 * the same message containing `want`. */
static int s_refused(const rat_options_t *o, const char *want)
{
    char err2[512] = "";
    s_err[0] = '\0';
    int rc = rat_options_check(o, s_err, sizeof s_err);
    rat_server_t *srv = rat_server_new(o, err2, sizeof err2);
    int refused = rc < 0 && !srv && strcmp(s_err, err2) == 0 && strstr(s_err, want) != NULL;
    if (!refused)
        fprintf(stderr, "  check: %d, new: %s, err: \"%s\" / \"%s\", want \"%s\"\n", rc, srv ? "a server" : "NULL",
                s_err, err2, want);
    rat_server_destroy(&srv);
    return refused;
}

static int s_accepted(const rat_options_t *o)
{
    s_err[0] = '\0';
    int rc = rat_options_check(o, s_err, sizeof s_err);
    rat_server_t *srv = rat_server_new(o, s_err, sizeof s_err);
    int ok = rc == 0 && srv != NULL;
    if (!ok)
        fprintf(stderr, "  refused: %s\n", s_err);
    rat_server_destroy(&srv);
    return ok;
}

static void test_boot_timeout_range(void)
{
    rat_options_t o;
    rat_options_init(&o);
    CHECK(s_accepted(&o)); /* 0: the default */
    o.boot_timeout_s = 3600;
    CHECK(s_accepted(&o));
    /* 2147484 s * 1000 overflowed an int of milliseconds. */
    o.boot_timeout_s = 2147484;
    CHECK(s_refused(&o, "--boot-timeout (boot_timeout_s) must be 1-3600 seconds (or 0 for the default, 60), "
                        "not 2147484"));
    o.boot_timeout_s = 3601;
    CHECK(s_refused(&o, "boot_timeout_s"));
    o.boot_timeout_s = -1;
    CHECK(s_refused(&o, "boot_timeout_s"));
}

static void test_other_ranges(void)
{
    rat_options_t o;
    rat_options_init(&o);
    o.port = 65536;
    CHECK(s_refused(&o, "--port (port) must be 0-65535 (or -1 for the default, 8000), not 65536"));
    o.port = -2;
    CHECK(s_refused(&o, "not -2"));
    o.port = 0;
    CHECK(s_accepted(&o));
    rat_options_init(&o);
    o.assets_max_mb = RAT_MAX_ASSETS_MB + 1; /* << 20 would overflow past 2^43 */
    CHECK(s_refused(&o, "--assets-max-mb (assets_max_mb) must be 1-1048576 megabytes"));
    o.assets_max_mb = -1;
    CHECK(s_refused(&o, "assets_max_mb"));
    rat_options_init(&o);
    o.unsent_max_mb = RAT_MAX_UNSENT_MB + 1;
    CHECK(s_refused(&o, "--unsent-max-mb (unsent_max_mb) must be 1-65536 megabytes (or 0 for the default, 64), "
                        "not 65537"));
    o.unsent_max_mb = -1;
    CHECK(s_refused(&o, "unsent_max_mb"));
    o.unsent_max_mb = RAT_MAX_UNSENT_MB;
    CHECK(s_accepted(&o));
    rat_options_init(&o);
    o.shell_timeout_s = RAT_MAX_SHELL_TIMEOUT_S + 1;
    CHECK(s_refused(&o, "--shell-timeout (shell_timeout_s) must be 1-86400 seconds (or 0 for the default, 30), "
                        "not 86401"));
    o.shell_timeout_s = -1;
    CHECK(s_refused(&o, "shell_timeout_s"));
    o.shell_timeout_s = 1;
    CHECK(s_accepted(&o));
    rat_options_init(&o);
    o.log_level = "loud";
    CHECK(s_refused(&o, "--log-level (log_level) must be debug, info, warn, error or off, not 'loud'"));
    rat_options_init(&o);
    o.existing = "kernel-1.json";
    o.venv = "/tmp";
    CHECK(s_refused(&o, "it cannot be combined with --kernel, --python, --venv or --kernelspec-dir"));
    o.venv = NULL;
    o.kernelspec_dir = "/tmp";
    CHECK(s_refused(&o, "it cannot be combined with --kernel, --python, --venv or --kernelspec-dir"));
    rat_options_init(&o);
    o.python = "/usr/bin/python3";
    o.venv = "/tmp";
    CHECK(s_refused(&o, "give either --python or --venv (python, venv), not both"));
    rat_options_init(&o);
    o.kernel = "ir";
    o.kernelspec_dir = "/tmp";
    CHECK(s_refused(&o, "--kernel (kernel) names an installed kernelspec, --kernelspec-dir (kernelspec_dir) gives "
                        "rat-py's own; give one of them"));
    o.kernel = NULL;
    o.kernelspec_dir = "";
    CHECK(s_refused(&o, "--kernelspec-dir (kernelspec_dir) cannot be empty"));
    o.kernelspec_dir = "/tmp";
    o.venv = "/tmp";
    CHECK(s_accepted(&o));
}

static void test_gateway_options(void)
{
    rat_options_t o;
    rat_options_init(&o);
    o.gateway = "http://127.0.0.1:8888";
    o.gateway_token = "t";
    o.kernel = "ir"; /* a kernelspec there */
    CHECK(s_accepted(&o));
    o.kernel = NULL;
    o.existing = "6c0d2f3e-aaaa-bbbb-cccc-000000000000"; /* a kernel id there */
    CHECK(s_accepted(&o));
    o.existing = NULL;
    o.spare = true;
    CHECK(s_refused(&o, "--gateway (gateway) runs the kernel on a Jupyter Server; it cannot be combined with "
                        "--python, --venv, --kernelspec-dir or --spare"));
    o.spare = false;
    o.venv = "/tmp";
    CHECK(s_refused(&o, "--python, --venv, --kernelspec-dir or --spare"));
    o.venv = NULL;
    o.kernelspec_dir = "/tmp";
    CHECK(s_refused(&o, "--python, --venv, --kernelspec-dir or --spare"));
    rat_options_init(&o);
    o.gateway = "ws://127.0.0.1:8888";
    CHECK(s_refused(&o, "--gateway (gateway) must be an http:// or https:// URL, not 'ws://127.0.0.1:8888'"));
    rat_options_init(&o);
    o.gateway_insecure = true;
    CHECK(s_refused(&o, "--gateway-token, --gateway-ca and --gateway-insecure (gateway_token, gateway_ca, "
                        "gateway_insecure) need --gateway"));
    rat_options_init(&o);
    o.gateway_ca = "/etc/ssl/certs/ca-certificates.crt";
    CHECK(s_refused(&o, "need --gateway"));
}

/* TLS: the certificate and its key go together (both copied by
 * rat_server_new; the files are read when a run starts). */
static void test_tls_options(void)
{
    rat_options_t o;
    rat_options_init(&o);
    o.tls_cert = "/etc/rat/cert.pem";
    CHECK(s_refused(&o, "--tls-cert and --tls-key (tls_cert, tls_key) go together: give both, or neither"));
    o.tls_cert = NULL;
    o.tls_key = "/etc/rat/key.pem";
    CHECK(s_refused(&o, "go together"));
    o.tls_cert = "/etc/rat/cert.pem";
    CHECK(s_accepted(&o));
}

static void test_origins(void)
{
    const char *origins[RAT_MAX_ALLOW_ORIGINS + 2];
    char names[RAT_MAX_ALLOW_ORIGINS + 1][32];
    for (int i = 0; i <= RAT_MAX_ALLOW_ORIGINS; i++) {
        snprintf(names[i], sizeof names[i], "http://o%d.example", i);
        origins[i] = names[i];
    }
    rat_options_t o;
    rat_options_init(&o);
    origins[RAT_MAX_ALLOW_ORIGINS] = NULL;
    o.allow_origins = origins;
    CHECK(s_accepted(&o));
    /* One more was silently dropped before; now it is an error. */
    origins[RAT_MAX_ALLOW_ORIGINS] = names[RAT_MAX_ALLOW_ORIGINS];
    origins[RAT_MAX_ALLOW_ORIGINS + 1] = NULL;
    CHECK(s_refused(&o, "--allow-origin (allow_origins) may be given at most 16 times"));
    origins[0] = "";
    origins[1] = NULL;
    CHECK(s_refused(&o, "cannot be empty"));
}

/* Every string is copied and freed by the server (a leak checker running
 * this test sees none), and nothing the caller passed is used afterwards. */
static void test_strings_copied(void)
{
    char *strs[9];
    for (int i = 0; i < 9; i++)
        strs[i] = strdup("/tmp");
    char *origin = strdup("http://a.example");
    const char *origins[] = {origin, NULL};
    rat_options_t o;
    rat_options_init(&o);
    o.cwd = strs[0];
    o.kernel = strs[1];
    o.assets_dir = strs[2];
    o.log_level = strcpy(strs[3], "off");
    o.host = strs[4];
    o.token = strs[5];
    o.allow_origins = origins;
    rat_server_t *srv = rat_server_new(&o, s_err, sizeof s_err);
    CHECK(srv != NULL);
    for (int i = 0; i < 9; i++) {
        memset(strs[i], 'x', strlen(strs[i]));
        free(strs[i]);
    }
    free(origin);
    rat_server_destroy(&srv);
    CHECK(srv == NULL);
}

/* A run that cannot start reports why through rat_server_error (what the
 * command line prints after "rat-py: "). */
static void test_run_error(void)
{
    rat_options_t o;
    rat_options_init(&o);
    o.cwd = "/nonexistent/rat-py-test";
    rat_server_t *srv = rat_server_new(&o, s_err, sizeof s_err);
    CHECK(srv != NULL);
    CHECK_EQ_STR(rat_server_error(srv), "");
    CHECK_EQ_INT(rat_server_run_stdio(srv), 2);
    CHECK_EQ_STR(rat_server_error(srv), "--cwd /nonexistent/rat-py-test: not a directory");
    rat_server_destroy(&srv);
    CHECK(rat_server_stop(NULL) == -1 && rat_server_stop_fd(NULL) == -1);
    CHECK_EQ_STR(rat_server_error(NULL), "");
}

/* An HTTP run (it never ends by itself) on any free port, in a scratch
 * directory, with the real python3 kernel. */
static rat_server_t *s_http_server(char *dir)
{
    rat_options_t o;
    rat_options_init(&o);
    o.cwd = dir;
    o.port = 0;
    o.log_level = "off";
    return rat_server_new(&o, s_err, sizeof s_err);
}

static void *s_stopper(void *arg)
{
    usleep(300 * 1000); /* let the run get going; nothing depends on it */
    rat_server_stop(arg);
    return NULL;
}

static rat_server_t *s_signalled;
static void s_on_usr1(int signo)
{
    rat_server_stop(s_signalled); /* async-signal-safe */
}

static void *s_raiser(void *arg)
{
    usleep(300 * 1000);
    pthread_kill(*(pthread_t *)arg, SIGUSR1);
    return NULL;
}

static void *s_byte_writer(void *arg)
{
    usleep(300 * 1000);
    ssize_t n = write(rat_server_stop_fd(arg), "\x0f", 1); /* as Python's wakeup fd does */
    (void)n;
    return NULL;
}

/* rat_server_stop ends an HTTP run (which nothing else would end) cleanly:
 * from another thread, before the run starts, from a signal handler, and
 * as a byte written to rat_server_stop_fd. */
static void test_stop(void)
{
    char dir[] = "/tmp/rat-api-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    rat_server_t *srv = s_http_server(dir);
    CHECK(srv != NULL);

    pthread_t t;
    CHECK(pthread_create(&t, NULL, s_stopper, srv) == 0);
    CHECK_EQ_INT(rat_server_run_http(srv), 0);
    pthread_join(t, NULL);
    CHECK_EQ_STR(rat_server_error(srv), "");

    /* Before the run: kept, and the run ends as soon as it starts. */
    rat_server_stop(srv);
    rat_server_stop(srv);
    CHECK_EQ_INT(rat_server_run_http(srv), 0);

    /* From a signal handler in the running thread. */
    s_signalled = srv;
    struct sigaction sa = {.sa_handler = s_on_usr1}, old;
    sigaction(SIGUSR1, &sa, &old);
    pthread_t self = pthread_self();
    CHECK(pthread_create(&t, NULL, s_raiser, &self) == 0);
    CHECK_EQ_INT(rat_server_run_http(srv), 0);
    pthread_join(t, NULL);
    sigaction(SIGUSR1, &old, NULL);

    /* A byte in the descriptor. */
    CHECK(rat_server_stop_fd(srv) >= 0);
    CHECK(pthread_create(&t, NULL, s_byte_writer, srv) == 0);
    CHECK_EQ_INT(rat_server_run_http(srv), 0);
    pthread_join(t, NULL);

    rat_server_destroy(&srv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    RUN_CASE(test_boot_timeout_range);
    RUN_CASE(test_other_ranges);
    RUN_CASE(test_gateway_options);
    RUN_CASE(test_tls_options);
    RUN_CASE(test_origins);
    RUN_CASE(test_strings_copied);
    RUN_CASE(test_run_error);
    RUN_CASE(test_stop);
    return check_report("api");
}
