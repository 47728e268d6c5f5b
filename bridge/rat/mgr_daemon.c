/* mgr_daemon: start and stop runtime servers (see mgr_daemon.h). */
#include "mgr_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "buf.h"
#include "fileio.h"
#include "mem.h"
#include "mgr_client.h"
#include "procsig.h"

#define LOG_ROTATE (1u << 20)

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void s_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

char *mgr_daemon_log_path(const char *name)
{
    char *dir = mgr_state_dir();
    char *p = xasprintf("%s/logs/%s.log", dir ? dir : ".", name);
    free(dir);
    return p;
}

static bool s_port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

/* The range ports are picked from: RAT_PORTS=FIRST-LAST when set (tests
 * give each run its own), else the Go CLI's. */
static void s_port_range(int *first, int *last)
{
    *first = MGR_PORT_FIRST;
    *last = MGR_PORT_FIRST + MGR_PORT_COUNT - 1;
    const char *e = getenv("RAT_PORTS");
    int a = 0, b = 0;
    if (e && sscanf(e, "%d-%d", &a, &b) == 2 && a >= 1024 && b >= a && b <= 65535) {
        *first = a;
        *last = b;
    }
}

static int s_pick_port(mgr_state_t *st)
{
    int first, last;
    s_port_range(&first, &last);
    for (int p = first; p <= last; p++) {
        bool used = false;
        for (size_t i = 0; i < st->nkernels && !used; i++)
            used = st->kernels[i].port == p;
        if (!used && s_port_free(p))
            return p;
    }
    return -1;
}

/* The last n bytes of the log, trimmed. Caller owns it (NULL if none). */
static char *s_log_tail(const char *path, size_t n)
{
    size_t len = 0;
    char *t = fileio_read(path, 64u << 20, &len);
    if (!t)
        return NULL;
    size_t from = len > n ? len - n : 0;
    while (from < len && (t[from] & 0xC0) == 0x80)
        from++;
    char *out = xstrdup(t + from);
    free(t);
    size_t l = strlen(out);
    while (l && (out[l - 1] == '\n' || out[l - 1] == ' '))
        out[--l] = '\0';
    return l ? out : (free(out), NULL);
}

static int s_open_log(const char *name, char **path_out, char *err, size_t errlen)
{
    char *path = mgr_daemon_log_path(name);
    char *dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        free(dir);
        free(path);
        return -1;
    }
    free(dir);
    struct stat sb;
    if (stat(path, &sb) == 0 && sb.st_size > LOG_ROTATE) {
        char *old = xasprintf("%s.1", path);
        rename(path, old);
        free(old);
    }
    int fd = fileio_open_regular(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, 0600, NULL);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, fileio_strerror(errno));
        free(path);
        return -1;
    }
    *path_out = path;
    return fd;
}

/* fork + setsid + exec of this program as prog. Returns the pid or -1. */
static pid_t s_spawn(const mgr_resolved_t *r, const char *prog, int port, int logfd, char *err, size_t errlen)
{
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%d", port);
    const char *argv[16];
    int n = 0;
    argv[n++] = prog;
    argv[n++] = "--http";
    argv[n++] = "--port";
    argv[n++] = portbuf;
    argv[n++] = "--cwd";
    argv[n++] = r->cwd;
    bool py = !strcmp(r->lang, "py");
    if (py && r->runtime_path) {
        argv[n++] = "--python";
        argv[n++] = r->runtime_path;
    } else if (py && r->venv) {
        argv[n++] = "--venv";
        argv[n++] = r->venv;
    }
    argv[n] = NULL;
    buf_t line;
    buf_init(&line, 0);
    char *now = mgr_state_now();
    buf_printf(&line, "--- %s rat start %s:", now, r->name);
    for (int i = 0; i < n; i++)
        buf_printf(&line, " %s", argv[i]);
    buf_putc(&line, '\n');
    free(now);
    if (write(logfd, line.data, line.len) < 0) {
        /* the log is best effort */
    }
    buf_free(&line);
    /* The parent returns once the child has exec'd (the pipe, close-on-exec,
     * reads EOF) or failed to (it reads errno): until then /proc/PID says
     * `rat start`, and a concurrent start must not take that for a pid
     * reused by another program (mgr_state_alive). */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "cannot start a process: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot start a process: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid > 0) {
        close(pfd[1]);
        int child_errno = 0;
        ssize_t got;
        while ((got = read(pfd[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR)
            ;
        close(pfd[0]);
        if (got == (ssize_t)sizeof child_errno) {
            snprintf(err, errlen, "cannot run %s: %s", prog, strerror(child_errno));
            waitpid(pid, NULL, 0);
            return -1;
        }
        return pid;
    }
    /* The child: a session of its own, no terminal, no inherited pipes. */
    setsid();
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0 || dup2(pfd[1], 3) < 0 ||
        fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
        _exit(127);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4U, ~0U, 0) < 0)
#endif
        for (int fd = 4; fd < 65536; fd++)
            close(fd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    static const int sigs[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
    for (size_t i = 0; i < r->nenv; i++)
        setenv(r->env[i].key, r->env[i].value, 1);
    /* rat's own client speaks plain HTTP without a token to its runtimes on
     * loopback (doc/rat.md): a RAT_PY_TOKEN or RAT_PY_TLS_* in rat's
     * environment (or the runtime's) would make the runtime demand what
     * that client never sends, and a token passed on is a secret handed to
     * every kernel. */
    unsetenv("RAT_PY_TOKEN");
    unsetenv("RAT_PY_TLS_CERT");
    unsetenv("RAT_PY_TLS_KEY");
    if (chdir(r->cwd) < 0) {
        int e = errno;
        fprintf(stderr, "rat: cannot enter %s: %s\n", r->cwd, strerror(e));
        if (write(3, &e, sizeof e) < 0) {
            /* as below */
        }
        _exit(127);
    }
    execv("/proc/self/exe", (char *const *)argv);
    int e = errno;
    fprintf(stderr, "rat: cannot run %s: %s\n", prog, strerror(e));
    if (write(3, &e, sizeof e) < 0) {
        /* the parent sees EOF and then the exit */
    }
    _exit(127);
}

static bool s_dead(pid_t pid)
{
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid)
        return true; /* our own child, reaped */
    return kill(pid, 0) < 0 && errno == ESRCH;
}

typedef enum { S_READY, S_STARTING, S_FAILED } s_ready_t;

/* Waits until the server on port answers and its kernel is up. */
static s_ready_t s_wait_ready(long port, pid_t pid, int64_t until, const char *logpath, char *err, size_t errlen)
{
    mgr_client_t *c = NULL;
    char cerr[512] = "";
    while (s_now_ms() < until) {
        if (s_dead(pid)) {
            char *tail = logpath ? s_log_tail(logpath, 600) : NULL;
            snprintf(err, errlen, "its server exited%s%s", tail ? ":\n" : " (no log)", tail ? tail : "");
            free(tail);
            mgr_client_destroy(&c);
            return S_FAILED;
        }
        if (!c)
            c = mgr_client_new(port, "rat", 2000, cerr, sizeof cerr);
        if (c) {
            json_object *args = json_object_new_object();
            json_object_object_add(args, "op", json_object_new_string("status"));
            json_object *r = mgr_client_call(c, "ctl", args, 3000, NULL, NULL, NULL, cerr, sizeof cerr);
            json_object_put(args);
            json_object *sc = NULL, *state = NULL, *lf = NULL;
            const char *st = r && json_object_object_get_ex(r, "structuredContent", &sc) &&
                                     json_object_object_get_ex(sc, "state", &state)
                                 ? json_object_get_string(state)
                                 : NULL;
            /* Up: any state but these (idle, busy, or waiting for input). */
            if (st && strcmp(st, "starting") && strcmp(st, "restarting") && strcmp(st, "dead")) {
                json_object_put(r);
                mgr_client_destroy(&c);
                return S_READY;
            }
            if (st && !strcmp(st, "dead")) {
                snprintf(err, errlen, "its kernel cannot start: %s",
                         json_object_object_get_ex(sc, "last_failure", &lf) ? json_object_get_string(lf)
                                                                            : "it died");
                json_object_put(r);
                mgr_client_destroy(&c);
                return S_FAILED;
            }
            json_object_put(r);
            if (!st)
                mgr_client_destroy(&c); /* a server that lost the session: open another */
        }
        s_sleep_ms(150);
    }
    mgr_client_destroy(&c);
    if (!cerr[0] || strstr(cerr, "connect") || strstr(cerr, "Couldn't")) {
        snprintf(err, errlen, "its server does not answer on port %ld%s%s", port, cerr[0] ? ": " : "", cerr);
        return S_FAILED;
    }
    return S_STARTING;
}

/* Whether the process has exited, waiting up to ms (a pidfd reads as
 * readable once it has; by pid: kill(pid, 0) after it was reaped). Our own
 * child is reaped. */
static bool s_gone(int pidfd, pid_t pid, int ms)
{
    int64_t until = s_now_ms() + ms;
    for (;;) {
        if (pidfd >= 0) {
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            int64_t left = until - s_now_ms();
            int n = poll(&p, 1, left > 50 ? 50 : left > 0 ? (int)left : 0);
            if (n > 0) {
                waitpid(pid, NULL, WNOHANG);
                return true;
            }
        }
        if (s_dead(pid))
            return true;
        if (s_now_ms() >= until)
            return false;
        if (pidfd < 0)
            s_sleep_ms(50);
    }
}

int mgr_daemon_stop(mgr_kernel_t *k, char *why, size_t whylen)
{
    pid_t pid = (pid_t)k->pid;
    if (whylen)
        why[0] = '\0';
    if (pid <= 0 || !k->status || strcmp(k->status, "running") != 0) {
        mgr_state_mark_stopped(k);
        return 0;
    }
    /* The pidfd first, the proof second: a pidfd names one process, so
     * once the process behind the pid is proven to be the one rat started
     * (a pid reused in between has another start time), every signal sent
     * through the pidfd reaches that process and no other. */
    int pidfd = procsig_open(pid);
    if (pidfd < 0 && errno == ESRCH) {
        mgr_state_mark_stopped(k);
        return 0;
    }
    mgr_proc_t proc = mgr_state_proc(k, why, whylen);
    if (proc == MGR_PROC_UNPROVEN) {
        if (pidfd >= 0)
            close(pidfd);
        return -1;
    }
    if (proc == MGR_PROC_PROVEN) {
        (void)procsig_send(pidfd, pid, SIGTERM);
        if (!s_gone(pidfd, pid, MGR_STOP_MS)) {
            /* Its process group is the one rat created (the server was
             * started with setsid, so it leads its group): killed only
             * while its proven leader is alive and still leads it, which
             * also keeps the group's number from being reused meanwhile. */
            if (getpgid(pid) == pid && !s_gone(pidfd, pid, 0))
                kill(-pid, SIGKILL);
            (void)procsig_send(pidfd, pid, SIGKILL);
            s_gone(pidfd, pid, 1000);
        }
    }
    if (pidfd >= 0)
        close(pidfd);
    mgr_state_mark_stopped(k);
    return 0;
}

/* Under the lock: stops and forgets name's unresponsive server. */
static void s_replace(const char *name, char *err, size_t errlen)
{
    mgr_state_t *st = mgr_state_open(err, errlen);
    if (!st)
        return;
    mgr_kernel_t *k = mgr_state_kernel(st, name);
    if (k) {
        char why[512];
        if (mgr_daemon_stop(k, why, sizeof why) < 0)
            fprintf(stderr, "rat: %s: its old server is not stopped: %s; if it is rat's, stop it with `kill %ld`\n",
                    name, why, k->pid);
        mgr_state_remove_kernel(st, name);
        mgr_state_save(st, err, errlen);
    }
    mgr_state_close(&st);
}

int mgr_daemon_start(mgr_state_t **st_p, const mgr_resolved_t *r, long *port_out, long *pid_out, mgr_start_t *how,
                     bool *still_starting, char *err, size_t errlen)
{
    mgr_state_t *st = *st_p;
    *still_starting = false;
    *how = MGR_STARTED;
    const char *prog = mgr_names_prog(r->lang, err, errlen);
    if (!prog) {
        mgr_state_close(st_p);
        return -1;
    }
    if (!mgr_names_valid(r->name)) {
        snprintf(err, errlen, "invalid runtime name \"%s\": use letters, digits, '.', '_', '-' and '@' (starting "
                              "with a letter or digit)", r->name);
        mgr_state_close(st_p);
        return -1;
    }
    char *logpath = mgr_daemon_log_path(r->name);
    mgr_kernel_t *k = mgr_state_kernel(st, r->name);
    if (k && mgr_state_alive(k)) {
        /* Running (perhaps still booting, started by a `rat start` a moment
         * ago): wait for it rather than make a second one. */
        long port = k->port, pid = k->pid;
        mgr_state_close(st_p);
        char werr[1024];
        s_ready_t ready = s_wait_ready(port, (pid_t)pid, s_now_ms() + MGR_READY_MS, logpath, werr, sizeof werr);
        if (ready != S_FAILED) {
            *port_out = port;
            *pid_out = pid;
            *how = MGR_ALREADY;
            *still_starting = ready == S_STARTING;
            free(logpath);
            return 0;
        }
        /* Alive but not answering: replace it (the Go CLI does the same). */
        fprintf(stderr, "rat: %s's server (PID %ld) %s; replacing it\n", r->name, pid, werr);
        s_replace(r->name, err, errlen);
        *how = MGR_REPLACED;
        st = *st_p = mgr_state_open(err, errlen);
        if (!st) {
            free(logpath);
            return -1;
        }
    }
    int port = s_pick_port(st);
    if (port < 0) {
        int first, last;
        s_port_range(&first, &last);
        snprintf(err, errlen, "no free port in %d-%d (every one is in use or held by a runtime; `rat status` "
                              "lists them)", first, last);
        mgr_state_close(st_p);
        free(logpath);
        return -1;
    }
    char *lp = NULL;
    int logfd = s_open_log(r->name, &lp, err, errlen);
    free(lp);
    if (logfd < 0) {
        mgr_state_close(st_p);
        free(logpath);
        return -1;
    }
    pid_t pid = s_spawn(r, prog, port, logfd, err, errlen);
    close(logfd);
    if (pid < 0) {
        mgr_state_close(st_p);
        free(logpath);
        return -1;
    }
    k = mgr_state_put_kernel(st, r->name);
    k->lang = xstrdup(r->lang);
    k->port = port;
    k->pid = pid;
    k->cwd = xstrdup(r->cwd);
    k->venv = r->venv && !strcmp(r->lang, "py") ? xstrdup(r->venv) : NULL;
    k->status = xstrdup("running");
    k->started = mgr_state_now();
    /* Its identity, for every later signal (mgr_daemon_stop): read now,
     * while it is our unreaped child and has exec'd. */
    if (mgr_proc_id(pid, &k->proc) < 0) {
        snprintf(err, errlen, "cannot read /proc/%ld of the server just started: %s", (long)pid, strerror(errno));
        kill(pid, SIGKILL); /* our own child, not reaped: its pid is its own */
        waitpid(pid, NULL, 0);
        mgr_state_remove_kernel(st, r->name);
        mgr_state_close(st_p);
        free(logpath);
        return -1;
    }
    if (mgr_state_save(st, err, errlen) < 0) {
        kill(pid, SIGTERM);
        mgr_state_close(st_p);
        free(logpath);
        return -1;
    }
    mgr_state_close(st_p);
    char werr[1024];
    s_ready_t ready = s_wait_ready(port, pid, s_now_ms() + MGR_READY_MS, logpath, werr, sizeof werr);
    if (ready == S_FAILED) {
        snprintf(err, errlen, "%s did not start: %s\n(log: %s)", r->name, werr, logpath);
        char serr[256];
        mgr_state_t *s2 = mgr_state_open(serr, sizeof serr);
        mgr_kernel_t *k2 = s2 ? mgr_state_kernel(s2, r->name) : NULL;
        if (k2 && k2->pid == pid && mgr_daemon_stop(k2, serr, sizeof serr) == 0) {
            mgr_state_save(s2, serr, sizeof serr);
        } else if (!s_dead(pid)) {
            /* Our own child, not reaped: its pid is still its own. */
            kill(pid, SIGTERM);
        }
        mgr_state_close(&s2);
        free(logpath);
        return -1;
    }
    *port_out = port;
    *pid_out = pid;
    *still_starting = ready == S_STARTING;
    free(logpath);
    return 0;
}
