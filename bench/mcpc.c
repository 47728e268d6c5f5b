/* mcpc: a lean MCP client over pipes, for benchmarking rat-py without a
 * client's own costs (no JSON library on the hot path: requests are
 * preformatted, responses are found by their "id" prefix).
 *
 *   mcpc MODE [N] -- rat-py [ARGS...]
 * Modes (output: "key value" lines, or one number per line for rt):
 *   init        spawn -> initialize answered, ms
 *   first       spawn -> first run result, ms
 *   rt N        N run round trips of `x = 42` after 50 warm-ups, us each
 *   serve       blocks on demand, for the interleaved bench: each stdin
 *               line "N PREP" runs the Python line PREP (if not "-") and 2
 *               warm-ups, then "go", N timed round trips (us each), "end"
 *   ping N      N JSON-RPC pings (the pipes and rat-py's MCP path, no
 *               kernel), us each
 *   flood N     `for i in range(N): print(i)`: ms, notifications, rat-py RSS
 *               (peak, and idle 1 s after the run)
 *   floodw N    the same with N 25-byte lines written by sys.stdout.write
 *               (the kernel sends fewer, bigger messages)
 *   rss [N]     rat-py's RSS when idle after N runs (default 1)
 *   restart N   N x (ctl restart; run x = 42), ms each
 *   look        overview with 10 000 variables, drill into a 10^6-key dict,
 *               a completion: ms each
 * MCPC_ROOT=DIR: the client declares roots and answers roots/list with
 * file://DIR (DIR must need no percent-encoding); MCPC_CWD=DIR: rat-py is
 * started there. MCPC_TOOL=NAME and MCPC_WAIT=KEY: the tool that runs code
 * and its argument for a wait in seconds (default run and wait; another MCP
 * server's, such as jupyter-mcp-server's execute_code and timeout, for the
 * peer bench: first, rt, flood and rss then call it with {"code": ...});
 * MCPC_EXTRA='"k":v,...': more members in that tool's arguments. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t s_pid;
static int s_in = -1, s_out = -1;
static char s_buf[1 << 20];
static size_t s_len;
static long s_notifications;
static int s_skipping;

static double s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void s_spawn(char **argv)
{
    int in[2], out[2];
    if (pipe(in) < 0 || pipe(out) < 0)
        exit(1);
    s_pid = fork();
    if (s_pid == 0) {
        if (getenv("MCPC_CWD") && chdir(getenv("MCPC_CWD")) < 0)
            _exit(127);
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s_in = in[1];
    s_out = out[0];
}

static void s_write(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(s_in, s, n);
        if (w <= 0)
            exit(1);
        s += w;
        n -= (size_t)w;
    }
}

/* Reads lines until one starts like a response with this id; returns it
 * (valid until the next call). Counts notifications on the way. */
static const char *s_wait(long id)
{
    char want[64];
    int wn = snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%ld,", id);
    static char line[1 << 20];
    for (;;) {
        char *nl = memchr(s_buf, '\n', s_len);
        if (nl) {
            size_t n = (size_t)(nl - s_buf);
            size_t keep = n < sizeof line - 1 ? n : sizeof line - 1;
            memcpy(line, s_buf, keep);
            line[keep] = '\0';
            memmove(s_buf, nl + 1, s_len - n - 1);
            s_len -= n + 1;
            if (strncmp(line, want, (size_t)wn) == 0)
                return line;
            if (strstr(line, "\"method\":\"roots/list\"")) {
                const char *rid = strstr(line, "\"id\":");
                char reply[4096];
                snprintf(reply, sizeof reply, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"roots\":[{\"uri\":"
                         "\"file://%s\"}]}}\n", rid ? atol(rid + 5) : 0L, getenv("MCPC_ROOT") ? getenv("MCPC_ROOT") : "/");
                s_write(reply);
                continue;
            }
            if (strstr(line, "\"method\":\"notifications/"))
                s_notifications++;
            continue;
        }
        if (s_len == sizeof s_buf) {
            /* A line longer than the buffer: drop it, except that a
             * response of ours (another server's flood result may be
             * megabytes) is returned cut to its first megabyte once its
             * end has been read. */
            static int skip_hit;
            if (!s_skipping) {
                s_skipping = 1;
                skip_hit = strncmp(s_buf, want, (size_t)wn) == 0;
                if (skip_hit) {
                    memcpy(line, s_buf, sizeof line - 1);
                    line[sizeof line - 1] = '\0';
                }
            }
            s_len = 0;
            for (;;) {
                ssize_t r = read(s_out, s_buf, sizeof s_buf);
                if (r <= 0) {
                    fprintf(stderr, "mcpc: the server closed stdout\n");
                    exit(1);
                }
                char *e = memchr(s_buf, '\n', (size_t)r);
                if (e) {
                    s_len = (size_t)r - (size_t)(e + 1 - s_buf);
                    memmove(s_buf, e + 1, s_len);
                    s_skipping = 0;
                    break;
                }
            }
            if (skip_hit)
                return line;
            continue;
        }
        ssize_t r = read(s_out, s_buf + s_len, sizeof s_buf - s_len);
        if (r <= 0) {
            fprintf(stderr, "mcpc: rat-py closed stdout\n");
            exit(1);
        }
        s_len += (size_t)r;
    }
}

static long s_id;

/* The tool that runs code (MCPC_TOOL), for the modes that only run code. */
static const char *s_run_tool(void)
{
    const char *t = getenv("MCPC_TOOL");
    return t && *t ? t : "run";
}

static const char *s_call(const char *tool, const char *args_json)
{
    char with[2048];
    const char *extra = getenv("MCPC_EXTRA");
    if (strcmp(tool, "run") == 0) {
        tool = s_run_tool();
        /* MCPC_EXTRA: more members for the run tool's arguments. */
        size_t n = strlen(args_json);
        if (extra && *extra && n > 2 && n < 1024 && strlen(extra) < 1000) {
            snprintf(with, sizeof with, "%.*s,%s}", (int)(n - 1), args_json, extra);
            args_json = with;
        }
    }
    char req[4096];
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":%s}}\n",
             ++s_id, tool, args_json);
    s_write(req);
    return s_wait(s_id);
}

static void s_initialize(void)
{
    char req[256];
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
             "\"capabilities\":{%s},\"clientInfo\":{\"name\":\"mcpc\",\"version\":\"1\"}}}\n",
             ++s_id, getenv("MCPC_ROOT") ? "\"roots\":{\"listChanged\":true}" : "");
    s_write(req);
    s_wait(s_id);
    s_write("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
}

static long s_rss_kb(const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)s_pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, strlen(field)) == 0)
            kb = atol(line + strlen(field) + 1);
    if (f)
        fclose(f);
    return kb;
}

static void s_check(const char *resp, const char *what)
{
    if (strstr(resp, "\"isError\":true") || strstr(resp, "\"error\":")) {
        fprintf(stderr, "mcpc: %s failed: %.300s\n", what, resp);
        exit(1);
    }
}

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int dash = 1;
    while (dash < argc && strcmp(argv[dash], "--") != 0)
        dash++;
    if (dash >= argc - 1 || dash < 2) {
        fprintf(stderr, "usage: mcpc MODE [N] -- rat-py [ARGS...]\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = dash > 2 ? atol(argv[2]) : 300;
    signal(SIGPIPE, SIG_IGN);
    double t0 = s_now_ms();
    s_spawn(argv + dash + 1);
    s_initialize();
    double t_init = s_now_ms();
    if (strcmp(mode, "init") == 0) {
        printf("init_ms %.2f\n", t_init - t0);
    } else if (strcmp(mode, "first") == 0) {
        s_check(s_call("run", "{\"code\":\"x = 42\"}"), "run");
        printf("init_ms %.2f\nfirst_result_ms %.1f\n", t_init - t0, s_now_ms() - t0);
    } else if (strcmp(mode, "rt") == 0) {
        for (int i = 0; i < 50; i++)
            s_check(s_call("run", "{\"code\":\"x = 42\"}"), "run");
        long rss0 = s_rss_kb("VmRSS:");
        for (long i = 0; i < n; i++) {
            double a = s_now_ms();
            s_call("run", "{\"code\":\"x = 42\"}");
            printf("%.0f\n", (s_now_ms() - a) * 1000.0);
        }
        if (getenv("MCPC_RSS")) /* the server's RSS after the warm-ups and after the N runs */
            printf("rss_kb %ld %ld\n", rss0, s_rss_kb("VmRSS:"));
    } else if (strcmp(mode, "serve") == 0) {
        char line[4096];
        while (fgets(line, sizeof line, stdin)) {
            char *prep = NULL;
            long blk = strtol(line, &prep, 10);
            prep += strspn(prep, " ");
            prep[strcspn(prep, "\n")] = '\0';
            if (*prep && strcmp(prep, "-") != 0) {
                /* {"code":PREP} with PREP JSON-escaped (quotes, backslashes). */
                char args[9000], *o = args + sprintf(args, "{\"code\":\"");
                for (const char *p = prep; *p; p++) {
                    if (*p == '"' || *p == '\\')
                        *o++ = '\\';
                    *o++ = *p;
                }
                strcpy(o, "\"}");
                s_check(s_call("run", args), "prep");
            }
            for (int i = 0; i < 2; i++)
                s_check(s_call("run", "{\"code\":\"x = 42\"}"), "run");
            printf("go\n"); /* the bench samples CPU times here and at "end" */
            fflush(stdout);
            for (long i = 0; i < blk; i++) {
                double a = s_now_ms();
                s_call("run", "{\"code\":\"x = 42\"}");
                printf("%.0f\n", (s_now_ms() - a) * 1000.0);
            }
            printf("end\n");
            fflush(stdout);
        }
    } else if (strcmp(mode, "ping") == 0) {
        for (long i = -50; i < n; i++) {
            char req[128];
            snprintf(req, sizeof req, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"ping\"}\n", ++s_id);
            double a = s_now_ms();
            s_write(req);
            s_wait(s_id);
            if (i >= 0)
                printf("%.0f\n", (s_now_ms() - a) * 1000.0);
        }
    } else if (strcmp(mode, "flood") == 0 || strcmp(mode, "floodw") == 0) {
        s_check(s_call("run", "{\"code\":\"x = 42\"}"), "run");
        char args[256];
        const char *wait = getenv("MCPC_WAIT") && *getenv("MCPC_WAIT") ? getenv("MCPC_WAIT") : "wait";
        if (strcmp(mode, "flood") == 0)
            snprintf(args, sizeof args, "{\"code\":\"for i in range(%ld): print(i)\",\"%s\":3600}", n, wait);
        else
            snprintf(args, sizeof args,
                     "{\"code\":\"import sys\\nw = sys.stdout.write\\nfor i in range(%ld): w('%%024d\\\\n' %% i)\","
                     "\"%s\":3600}",
                     n, wait);
        s_notifications = 0;
        double a = s_now_ms();
        s_check(s_call("run", args), "flood");
        double ms = s_now_ms() - a;
        long after = s_rss_kb("VmRSS:");
        struct timespec ts = {1, 500 * 1000000L};
        nanosleep(&ts, NULL);
        printf("flood_ms %.1f\nnotifications %ld\nrss_after_kb %ld\nhwm_kb %ld\nrss_idle_kb %ld\n", ms, s_notifications,
               after, s_rss_kb("VmHWM:"), s_rss_kb("VmRSS:"));
    } else if (strcmp(mode, "rss") == 0) {
        long runs = dash > 2 ? n : 1;
        for (long i = 0; i < runs; i++)
            s_check(s_call("run", "{\"code\":\"x = 42\"}"), "run");
        struct timespec ts = {1, 500 * 1000000L}; /* past the runtime's idle trim (1 s) */
        nanosleep(&ts, NULL);
        printf("rss_idle_kb %ld\nhwm_kb %ld\npid %ld\n", s_rss_kb("VmRSS:"), s_rss_kb("VmHWM:"), (long)s_pid);
        if (getenv("MCPC_HOLD")) {
            /* The caller measures the server's whole process tree now (it
             * is idle); a line on stdin lets it go. */
            fflush(stdout);
            char line[64];
            if (!fgets(line, sizeof line, stdin))
                line[0] = '\0';
        }
    } else if (strcmp(mode, "restart") == 0) {
        s_check(s_call("run", "{\"code\":\"x = 42\"}"), "run");
        for (long i = 0; i < n; i++) {
            /* Give a spare kernel (if any) time to boot again between restarts. */
            const char *gap = getenv("MCPC_RESTART_GAP_MS");
            long ms = gap ? atol(gap) : 3000;
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
            double a = s_now_ms();
            s_check(s_call("ctl", "{\"op\":\"restart\"}"), "restart");
            s_check(s_call("run", "{\"code\":\"x = 42\"}"), "run after restart");
            printf("%.1f\n", s_now_ms() - a);
        }
    } else if (strcmp(mode, "look") == 0) {
        s_check(s_call("run", "{\"code\":\"for _i in range(10000): globals()[f'v{_i:05d}'] = _i\\n"
                              "big = {i: i for i in range(10**6)}\\nimport math\"}"),
                "setup");
        double a = s_now_ms();
        s_check(s_call("look", "{}"), "overview");
        double b = s_now_ms();
        s_check(s_call("look", "{\"at\":\"big\"}"), "drill");
        double c = s_now_ms();
        s_check(s_call("look", "{\"code\":\"math.sq\",\"cursor\":7}"), "complete");
        double d = s_now_ms();
        s_check(s_call("look", "{\"code\":\"math.sq\",\"cursor\":7}"), "complete");
        double e = s_now_ms();
        /* The median of 15: one run can meet a full garbage collection of
         * the million-item dict. */
        double runs[15];
        for (int i = 0; i < 15; i++) {
            double f0 = s_now_ms();
            s_check(s_call("run", "{\"code\":\"x = 42\"}"), "run");
            runs[i] = s_now_ms() - f0;
        }
        qsort(runs, 15, sizeof runs[0], s_cmp_double);
        printf("overview_ms %.1f\ndrill_ms %.1f\ncomplete_first_ms %.1f\ncomplete_ms %.1f\nrun_10k_vars_ms %.1f\n",
               b - a, c - b, d - c, e - d, runs[7]);
    } else {
        fprintf(stderr, "mcpc: unknown mode %s\n", mode);
        return 2;
    }
    /* EOF on stdin ends rat-py at once; a server that does not go by
     * itself (jupyter-mcp-server keeps running) is asked to after 3 s, and
     * killed 2 s later. */
    fflush(stdout);
    close(s_in);
    int status;
    for (int i = 0; i < 500; i++) {
        if (waitpid(s_pid, &status, WNOHANG) == s_pid)
            return 0;
        if (i == 300)
            kill(s_pid, SIGTERM);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(s_pid, SIGKILL);
    waitpid(s_pid, &status, 0);
    return 0;
}
