/* kernel_proc: spawning, signalling and reaping one kernel process. */
#define LOG_MODULE "proc"
#include "kernel_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "loop.h"
#include "mem.h"

extern char **environ;

struct kernel_proc {
    pid_t pid;
    bool exited;
    bool killed;      /* kernel_proc_stop sent SIGKILL */
    int status;
    char *log_path;   /* owned */
};

/* rat-py's secrets that may be in its environment: read once by rat-py
 * (config.c, the C API), never passed on to a kernel or anything else it
 * starts (they would show in /proc/PID/environ of every process the kernel
 * spawns, and a `rat-py --http` started from the kernel would demand it). */
static const char *const s_secrets[] = {"RAT_PY_TOKEN", NULL};

static bool s_named(const char *entry, size_t nl, const char *const *names)
{
    for (size_t j = 0; names && names[j]; j++)
        if (strlen(names[j]) == nl && strncmp(entry, names[j], nl) == 0)
            return true;
    return false;
}

static char **s_build_env(const kernel_proc_opts_t *o)
{
    size_t n = 0, extra = 0;
    while (environ[n])
        n++;
    while (o->env_extra && o->env_extra[extra])
        extra++;
    char **env = xcalloc(n + extra + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        bool skip = s_named(environ[i], nl, s_secrets) || s_named(environ[i], nl, (const char *const *)o->env_drop);
        for (size_t j = 0; j < extra && !skip; j++) {
            const char *e2 = strchr(o->env_extra[j], '=');
            size_t nl2 = e2 ? (size_t)(e2 - o->env_extra[j]) : strlen(o->env_extra[j]);
            skip = nl2 == nl && strncmp(environ[i], o->env_extra[j], nl) == 0;
        }
        if (!skip)
            env[k++] = xstrdup(environ[i]);
    }
    for (size_t j = 0; j < extra; j++)
        env[k++] = xstrdup(o->env_extra[j]);
    env[k] = NULL;
    return env;
}

char **kernel_proc_environ(void)
{
    kernel_proc_opts_t none = {0};
    return s_build_env(&none);
}

/* Everything after fork() in the child must be async-signal-safe: libzmq's
 * I/O threads exist in the parent, so the child may only make system calls
 * before execve. All strings were prepared before the fork. */
static void s_child(int errpipe, int logfd, const char *path, char *const argv[], char *const envp[],
                    const char *cwd, pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* rat-py died before the death signal was armed */
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, 0);
        if (devnull > 0)
            close(devnull);
    }
    if (logfd >= 0) {
        dup2(logfd, 1);
        dup2(logfd, 2);
        if (logfd > 2)
            close(logfd);
    } else {
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, 1);
        dup2(dn, 2);
    }
    if (cwd && chdir(cwd) < 0) {
        int e = errno;
        ssize_t w = write(errpipe, &e, sizeof e);
        (void)w;
        _exit(127);
    }
    /* Close every inherited descriptor except the error pipe (close-on-exec),
     * which may be above 1024 (HTTP mode raises RLIMIT_NOFILE): closing it
     * would make an exec failure read as success. close_range (Linux 5.9)
     * around it; a descriptor-by-descriptor loop where that is missing. */
    long r = errpipe > 3 ? syscall(SYS_close_range, 3u, (unsigned)errpipe - 1u, 0) : 0;
    if (r == 0)
        r = syscall(SYS_close_range, (unsigned)errpipe + 1u, ~0u, 0);
    if (r < 0) {
        struct rlimit rl;
        long top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 65536;
        for (long fd = 3; fd < top; fd++)
            if (fd != errpipe)
                close((int)fd);
    }
    execve(path, argv, envp);
    int e = errno;
    ssize_t w = write(errpipe, &e, sizeof e);
    (void)w;
    _exit(127);
}

kernel_proc_t *kernel_proc_spawn(const kernel_proc_opts_t *o, char *err, size_t errlen)
{
    char *path = fileio_which(o->argv[0]);
    if (!path) {
        snprintf(err, errlen, "kernel program '%s' was not found%s", o->argv[0],
                 strchr(o->argv[0], '/') ? "" : " on PATH");
        return NULL;
    }
    if (o->cwd && !fileio_is_dir(o->cwd)) {
        snprintf(err, errlen, "working directory %s does not exist", o->cwd);
        free(path);
        return NULL;
    }
    int logfd = -1;
    if (o->log_path) {
        /* O_NOFOLLOW: a symlink planted at the log's name (the runtime dir may
         * be shared, e.g. Jupyter's) must not make us append to its target. */
        logfd = fileio_open_regular(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600, NULL);
        if (logfd < 0)
            log_warn("cannot open kernel log %s: %s; kernel output is discarded", o->log_path,
                     fileio_strerror(errno));
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        free(path);
        if (logfd >= 0)
            close(logfd);
        return NULL;
    }
    char **envp = s_build_env(o);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        s_child(pipefd[1], logfd, path, o->argv, envp, o->cwd, parent);
    int fork_errno = errno;
    close(pipefd[1]);
    if (logfd >= 0)
        close(logfd);
    strv_free(envp);
    kernel_proc_t *self = NULL;
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(fork_errno));
    } else {
        /* Blocks only until the child has exec'd (or failed to). */
        int child_errno = 0;
        ssize_t n;
        do {
            n = read(pipefd[0], &child_errno, sizeof child_errno);
        } while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof child_errno) {
            snprintf(err, errlen, "cannot start %s: %s", path, strerror(child_errno));
            waitpid(pid, NULL, 0);
        } else {
            self = xcalloc(1, sizeof *self);
            self->pid = pid;
            self->log_path = xstrdup(o->log_path);
        }
    }
    close(pipefd[0]);
    free(path);
    return self;
}

pid_t kernel_proc_pid(const kernel_proc_t *self)
{
    return self->pid;
}

int kernel_proc_signal(kernel_proc_t *self, int sig)
{
    if (self->exited)
        return -1;
    /* The kernel leads its own group; signal the group so its children
     * (e.g. subprocesses started by user code) get it too. */
    if (kill(-self->pid, sig) < 0)
        return kill(self->pid, sig);
    return 0;
}

int kernel_proc_signal_main(kernel_proc_t *self, int sig)
{
    if (self->exited)
        return -1;
    return tgkill(self->pid, self->pid, sig);
}

bool kernel_proc_is_stopped(const kernel_proc_t *self)
{
    if (self->exited)
        return false;
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)self->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0)
        return false;
    stat[n] = '\0';
    /* "pid (comm) S ...": comm may hold spaces and parentheses, the state
     * follows the last ')'. */
    const char *p = strrchr(stat, ')');
    return p && p[1] == ' ' && p[2] == 'T';
}

bool kernel_proc_reap(kernel_proc_t *self, int *status)
{
    if (!self->exited) {
        int st = 0;
        pid_t r = waitpid(self->pid, &st, WNOHANG);
        if (r == self->pid || (r < 0 && errno == ECHILD)) {
            self->exited = true;
            self->status = r == self->pid ? st : 0;
        }
    }
    if (self->exited && status)
        *status = self->status;
    return self->exited;
}

bool kernel_proc_exited(const kernel_proc_t *self)
{
    return self->exited;
}

static void s_sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int kernel_proc_wait(kernel_proc_t *self, int max_ms)
{
    int waited = 0;
    while (waited < max_ms && !kernel_proc_reap(self, NULL)) {
        s_sleep_ms(2);
        waited += 2;
    }
    return waited;
}

void kernel_proc_stop(kernel_proc_t *self, int grace_ms)
{
    if (kernel_proc_reap(self, NULL)) {
        kill(-self->pid, SIGKILL); /* leftover children of the group */
        return;
    }
    if (grace_ms > 0) {
        kernel_proc_signal(self, SIGTERM);
        kernel_proc_wait(self, grace_ms);
    }
    kill(-self->pid, SIGKILL);
    kill(self->pid, SIGKILL);
    self->killed = true;
    /* No waiting here: a process may take a while to go (a kernel that
     * holds gigabytes unmaps them first), and this runs on the loop that
     * serves every session. kernel_proc_destroy leaves it to
     * kernel_proc_reap_orphans, which SIGCHLD drives. */
}

/* Processes of destroyed kernel_procs not reaped yet: killed (their SIGCHLD
 * is still to come), or left to quit by themselves and SIGKILLed at kill_at
 * if they have not gone by then. */
typedef struct {
    pid_t pid;
    int64_t kill_at; /* loop_now_ms() time; 0: SIGKILL already sent */
} s_orphan_t;
static s_orphan_t *s_orphans;
static size_t s_norphans, s_orphans_cap;

static void s_kill_group(pid_t pid)
{
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

void kernel_proc_reap_orphans(void)
{
    size_t k = 0;
    int64_t now = -1;
    for (size_t i = 0; i < s_norphans; i++) {
        s_orphan_t *o = &s_orphans[i];
        pid_t r = waitpid(o->pid, NULL, WNOHANG);
        if (r == 0 || (r < 0 && errno == EINTR)) {
            if (o->kill_at) {
                if (now < 0)
                    now = loop_now_ms();
                if (now >= o->kill_at) {
                    s_kill_group(o->pid); /* did not quit in time */
                    o->kill_at = 0;
                }
            }
            s_orphans[k++] = *o; /* still going */
        } else if (o->kill_at) {
            kill(-o->pid, SIGKILL); /* it quit: what it started goes with it */
        }
    }
    s_norphans = k;
    if (!s_norphans) {
        free(s_orphans);
        s_orphans = NULL;
        s_orphans_cap = 0;
    }
}

size_t kernel_proc_orphans(void)
{
    return s_norphans;
}

int kernel_proc_orphans_due_ms(void)
{
    int64_t first = 0;
    for (size_t i = 0; i < s_norphans; i++)
        if (s_orphans[i].kill_at && (!first || s_orphans[i].kill_at < first))
            first = s_orphans[i].kill_at;
    if (!first)
        return -1;
    int64_t left = first - loop_now_ms();
    return left > 0 ? (int)left : 0;
}

void kernel_proc_reap_all(int max_ms)
{
    for (size_t i = 0; i < s_norphans; i++) {
        s_kill_group(s_orphans[i].pid);
        s_orphans[i].kill_at = 0;
    }
    for (int waited = 0;; waited += 2) {
        kernel_proc_reap_orphans();
        if (!s_norphans || waited >= max_ms)
            break;
        s_sleep_ms(2);
    }
    if (s_norphans)
        log_warn("%zu killed kernel process(es) still not reaped after %d ms", s_norphans, max_ms);
}

/* Frees *self_p, leaving a process that has not exited to the reaper (to be
 * SIGKILLed at kill_at, unless 0). */
static void s_free(kernel_proc_t **self_p, int64_t kill_at)
{
    kernel_proc_t *self = *self_p;
    if (!self->exited) {
        if (s_norphans == s_orphans_cap) {
            s_orphans_cap = s_orphans_cap ? s_orphans_cap * 2 : 4;
            s_orphans = xrealloc(s_orphans, s_orphans_cap * sizeof *s_orphans);
        }
        s_orphans[s_norphans++] = (s_orphan_t){.pid = self->pid, .kill_at = kill_at};
    }
    free(self->log_path);
    free(self);
    *self_p = NULL;
}

void kernel_proc_destroy(kernel_proc_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    kernel_proc_t *self = *self_p;
    /* Once killed, it is left to the reaper at once: a second stop would
     * reap it here only when it happened to die in between, so whether a
     * restart reaped the old kernel would depend on the machine's load
     * (unit.runtime's restart test saw that under valgrind). */
    if (!self->killed)
        kernel_proc_stop(self, 0);
    s_free(self_p, 0);
}

void kernel_proc_destroy_deferred(kernel_proc_t **self_p, int grace_ms)
{
    if (!self_p || !*self_p)
        return;
    kernel_proc_t *self = *self_p;
    if (self->killed || kernel_proc_reap(self, NULL) || grace_ms <= 0) {
        kernel_proc_destroy(self_p);
        return;
    }
    s_free(self_p, loop_now_ms() + grace_ms);
}

void kernel_proc_describe(int status, char *out, size_t outlen)
{
    if (WIFSIGNALED(status))
        snprintf(out, outlen, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(out, outlen, "exit code %d", WEXITSTATUS(status));
    else
        snprintf(out, outlen, "status %d", status);
}

char *kernel_proc_log_tail(const kernel_proc_t *self, size_t max)
{
    if (!self->log_path)
        return NULL;
    int fd = fileio_open_regular(self->log_path, O_RDONLY, 0, NULL);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *out = NULL;
    if (fstat(fd, &st) == 0) {
        off_t start = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
        size_t want = (size_t)(st.st_size - start);
        out = xmalloc(want + 1);
        ssize_t n = pread(fd, out, want, start);
        out[n > 0 ? n : 0] = '\0';
    }
    close(fd);
    return out;
}

void kernel_proc_trim_log(kernel_proc_t *self, long max)
{
    struct stat st;
    if (self->log_path && stat(self->log_path, &st) == 0 && st.st_size > max)
        if (truncate(self->log_path, 0) < 0)
            log_debug("truncate %s: %s", self->log_path, strerror(errno));
}
