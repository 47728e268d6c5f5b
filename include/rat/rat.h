/* rat.h: embed rat-py — a live Jupyter kernel behind the Model Context
 * Protocol — in your own program.
 *
 *   rat_options_t o;
 *   rat_options_init(&o);
 *   o.cwd = "/path/to/project";
 *   char err[512];
 *   rat_server_t *srv = rat_server_new(&o, err, sizeof err);
 *   if (!srv) { fprintf(stderr, "%s\n", err); return 1; }
 *   int status = rat_server_run_stdio(srv);     // or rat_server_run_http(srv)
 *   rat_server_destroy(&srv);
 *
 * A run blocks until its transport ends (stdin EOF for stdio), until
 * SIGTERM, SIGINT or SIGHUP, or until rat_server_stop; the kernel it started
 * is gone when it returns. While it runs, rat-py blocks SIGCHLD, SIGTERM,
 * SIGINT and SIGHUP in the calling thread and reads them itself (the mask is
 * restored afterwards): call it from the main thread, before starting other
 * threads, or a signal may go to a thread that does not block it. A host
 * that already has threads stops the run with rat_server_stop instead (from
 * any thread or signal handler; see rat_server_stop_fd for hosts whose
 * signal handling writes to a descriptor, such as Python's). In stdio mode
 * standard output carries MCP messages and nothing else may write to it.
 * Link with `pkg-config --libs rat`. */
#ifndef RAT_RAT_H
#define RAT_RAT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RAT_API __attribute__((visibility("default")))
#else
#define RAT_API
#endif

typedef struct rat_server rat_server_t;

#define RAT_MAX_ALLOW_ORIGINS 16   /* entries of rat_options_t.allow_origins */
#define RAT_MAX_BOOT_TIMEOUT_S 3600
#define RAT_MAX_ASSETS_MB (1L << 20)
#define RAT_MAX_UNSENT_MB (1L << 16)
#define RAT_MAX_SHELL_TIMEOUT_S 86400

/* Everything is optional; rat_options_init sets the defaults. Strings are
 * borrowed until rat_server_new returns (it copies them all). The ranges
 * are checked by rat_options_check (the command line goes through the same
 * check: rat-py builds this struct from its options). */
typedef struct {
    const char *cwd;               /* kernel working directory (default: the MCP client's first root, else the
                                    * current one) */
    const char *kernel;            /* kernelspec name (default: python3) */
    const char *python;            /* interpreter for the Python kernel */
    const char *venv;              /* virtual environment for the Python kernel */
    const char *kernelspec_dir;    /* a changed copy of rat-py's kernelspec (its kernel.json,
                                    * argv with {python}) to launch the Python kernel with,
                                    * instead of the built-in one (doc/kernels.md) */
    const char *existing;          /* attach to this connection file / name instead */
    bool allow_restart;            /* let ctl restart act on an existing kernel */
    bool spare;                    /* keep a warm spare kernel for restart / reset all */
    const char *assets_dir;        /* default: <cwd>/.rat-assets */
    long assets_max_mb;            /* 0: the default (512); else 1 - RAT_MAX_ASSETS_MB */
    int boot_timeout_s;            /* 0: the default (60); else 1 - RAT_MAX_BOOT_TIMEOUT_S */
    const char *log_level;         /* "debug", "info", "warn", "error", "off"; NULL: warn */
    /* Streamable HTTP (rat_server_run_http) */
    const char *host;              /* default 127.0.0.1 */
    int port;                      /* -1: 8000; 0: any free port; else 1 - 65535 */
    const char *token;             /* bearer token, or NULL */
    const char *const *allow_origins; /* extra allowed Origins, NULL-terminated, or NULL;
                                       * at most RAT_MAX_ALLOW_ORIGINS, none empty */
    bool insecure_no_token;        /* allow a non-loopback host without a token */
    /* Kernels on a Jupyter Server / Enterprise Gateway instead of this
     * machine (doc/gateway.md): kernel names its kernelspec there, existing
     * a kernel id there. Excludes python, venv, kernelspec_dir and spare. */
    const char *gateway;           /* http(s)://host:port[/base] */
    const char *gateway_token;     /* sent as "Authorization: token T" */
    const char *gateway_ca;        /* PEM CA bundle for an https gateway */
    bool gateway_insecure;         /* no TLS verification (testing only) */
    /* HTTPS for rat_server_run_http (doc/http.md#tls): PEM files of the
     * server's certificate (its chain after it) and of its unencrypted
     * private key; both or neither. Read when the run starts. */
    const char *tls_cert;
    const char *tls_key;
    /* MB that all HTTP event streams may hold unsent together (past it the
     * stream with the most unsent loses its oldest notifications first);
     * 0: the default (64); else 1 - RAT_MAX_UNSENT_MB. */
    long unsent_max_mb;
    /* Seconds a run may wait for the kernel to acknowledge it (a busy
     * status) while the kernel is not busy with anything else, before
     * rat-py says the kernel is not answering (doc/tools.md#a-kernel-that-
     * stops-answering); 0: the default (30); else 1 - RAT_MAX_SHELL_TIMEOUT_S. */
    int shell_timeout_s;
} rat_options_t;

/* The library's version, e.g. "0.1.0". */
RAT_API const char *rat_version(void);
RAT_API void rat_options_init(rat_options_t *opts);
/* Checks the options: ranges, a known log level, combinations (existing
 * excludes kernel, python, venv and kernelspec_dir; kernel excludes
 * kernelspec_dir; python excludes venv). Returns 0, or -1
 * with a one-line reason in err (naming the command-line option and the
 * field). opts is only read. */
RAT_API int rat_options_check(const rat_options_t *opts, char *err, size_t errlen);
/* Checks (rat_options_check) and copies the options. Nothing starts yet.
 * Returns NULL with a one-line reason in err when the options cannot work. */
RAT_API rat_server_t *rat_server_new(const rat_options_t *opts, char *err, size_t errlen);
/* Starts the kernel and serves MCP on stdin/stdout until EOF, a
 * termination signal or rat_server_stop. Returns an exit status (0 on a
 * clean end, signals and stops included; otherwise rat_server_error says
 * why). One run at a time per server: a second concurrent call returns 1. */
RAT_API int rat_server_run_stdio(rat_server_t *srv);
/* The same over Streamable HTTP at http://HOST:PORT/mcp (https:// with
 * tls_cert and tls_key; the URL is printed on stderr), until a termination
 * signal or rat_server_stop. */
RAT_API int rat_server_run_http(rat_server_t *srv);
/* Asks the run of srv to end as SIGTERM would: the kernel is stopped and
 * the run returns 0. Safe from any thread and from a signal handler (it
 * only write(2)s one byte to a pipe; errno is preserved). A stop that comes
 * while no run is in progress makes the next run end as soon as it has
 * started, so a stop that races a run's start is never lost; a run spends
 * every stop that came before it returns. srv must stay alive (do not race
 * rat_server_destroy). Returns 0, or -1 when srv is NULL. */
RAT_API int rat_server_stop(rat_server_t *srv);
/* The descriptor rat_server_stop writes to (non-blocking, close-on-exec,
 * owned by srv: do not close it): writing any byte to it is a stop. For a
 * host whose signal handling writes to a descriptor, e.g. Python's
 * signal.set_wakeup_fd, so a signal caught by another thread still stops
 * the run. -1 when srv is NULL. */
RAT_API int rat_server_stop_fd(const rat_server_t *srv);
/* Why the last run of srv failed (a non-zero status): one line, what rat-py
 * also prints on stderr after "rat-py: "; "" when it did not fail (or
 * before any run). Valid until the next run or rat_server_destroy. */
RAT_API const char *rat_server_error(const rat_server_t *srv);
/* Frees the server; *srv_p becomes NULL. NULL-safe. */
RAT_API void rat_server_destroy(rat_server_t **srv_p);

#ifdef __cplusplus
}
#endif

#endif
