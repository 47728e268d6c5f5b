/* floor: the cost of talking to a kernel with nothing in between.
 *
 * A raw ZMQ client in C: it launches the same kernelspec rat-py would (or an
 * explicit argv), connects shell and iopub, does the readiness handshake, and
 * then measures what the benchmark compares rat-py against:
 *   floor boot                spawn -> ready, and spawn -> first execute done
 *   floor rt N                N round trips of `x = 42` (execute_request ->
 *                             execute_reply + status idle), one per line in us
 *   floor flood N             `for i in range(N): print(i)` end to end, ms
 *   floor rt|flood N FILE     the same against a kernel someone else
 *                             started (its connection file): the benchmark
 *                             then runs every contender on the same kernel
 *   floor serve 0 FILE        blocks on demand, for the interleaved bench:
 *                             each stdin line "N PREP" runs the Python line
 *                             PREP (if not "-") and 2 warm-ups untimed, then
 *                             "go", N round trips (us each, one per
 *                             line), "end"; EOF ends it (see bench/bench.py)
 *   floor relay 0 FILE        serve, timed by a second process that asks for
 *                             each round trip over a pipe and waits for the
 *                             answer on another (first line: "pid N", that
 *                             process): any stdio bridge's hops, no work
 * It uses rat-py's own wire/connfile/kernel_proc code (the bytes on the wire
 * are the same as any client's), but none of rat-py's runtime: no helper, no
 * user_expressions, no output processing. Output: "key value" lines.
 *
 * It talks libzmq directly, where rat-py goes through czmq (kernel_zmq.c):
 * the floor is the least a client can do with ZeroMQ, the stick rat-py is
 * measured against, so what czmq costs rat-py (a zmsg_t of zframe_t per
 * request sent, doc/performance.md) must show in the ratio, not be added
 * to the floor too. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sodium.h>
#include <zmq.h>

#include "buf.h"
#include "connfile.h"
#include "jmsg.h"
#include "jpaths.h"
#include "kernel_proc.h"
#include "kernelspec.h"
#include "loop.h"
#include "mem.h"
#include "wire.h"

typedef struct {
    void *shell, *iopub;
    wire_auth_t auth;
    char session[WIRE_ID_LEN + 1];
    wire_out_t out;
} s_conn_t;

static int s_send(s_conn_t *c, const char *type, const char *content, char id[WIRE_ID_LEN + 1])
{
    wire_encode(&c->out, &c->auth, c->session, type, NULL, content);
    memcpy(id, c->out.msg_id, WIRE_ID_LEN + 1);
    zmq_send(c->shell, WIRE_DELIM, 9, ZMQ_SNDMORE);
    zmq_send(c->shell, c->out.sig, strlen(c->out.sig), ZMQ_SNDMORE);
    for (int i = 0; i < 4; i++)
        zmq_send(c->shell, wire_out_part(&c->out, i), c->out.len[i], i < 3 ? ZMQ_SNDMORE : 0);
    return 0;
}

/* Receives one message from sock within timeout_ms. Returns 0 and fills m. */
static int s_recv(s_conn_t *c, void *sock, int timeout_ms, wire_msg_t *m)
{
    zmq_pollitem_t it = {.socket = sock, .events = ZMQ_POLLIN};
    if (zmq_poll(&it, 1, timeout_ms) <= 0)
        return -1;
    zmq_msg_t f[16];
    const void *p[16];
    size_t l[16];
    size_t n = 0;
    for (;;) {
        zmq_msg_init(&f[n]);
        zmq_msg_recv(&f[n], sock, 0);
        int more = zmq_msg_more(&f[n]);
        p[n] = zmq_msg_data(&f[n]);
        l[n] = zmq_msg_size(&f[n]);
        if (n < 15)
            n++;
        if (!more)
            break;
    }
    wire_err_t e = wire_decode(&c->auth, NULL, p, l, n, m);
    for (size_t i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
    return e == WIRE_OK ? 0 : -1;
}

/* Sends an execute_request and waits for its reply and idle. Counts stream
 * bytes into *stream_bytes when not NULL. */
static int s_execute(s_conn_t *c, const char *code, size_t *stream_bytes)
{
    buf_t b;
    buf_init(&b, 0);
    jmsg_execute_request(&b, &(jmsg_execute_t){.code = code, .store_history = true});
    char id[WIRE_ID_LEN + 1];
    s_send(c, "execute_request", b.data, id);
    buf_free(&b);
    bool reply = false, idle = false;
    while (!reply || !idle) {
        zmq_pollitem_t its[2] = {{.socket = c->shell, .events = ZMQ_POLLIN}, {.socket = c->iopub, .events = ZMQ_POLLIN}};
        if (zmq_poll(its, 2, 60000) <= 0)
            return -1;
        for (int k = 0; k < 2; k++) {
            if (!(its[k].revents & ZMQ_POLLIN))
                continue;
            wire_msg_t m;
            if (s_recv(c, its[k].socket, 0, &m) < 0)
                continue;
            if (m.parent_id && strcmp(m.parent_id, id) == 0) {
                if (k == 0 && strcmp(m.msg_type, "execute_reply") == 0)
                    reply = true;
                if (k == 1 && strcmp(m.msg_type, "status") == 0) {
                    const char *st = wire_get_str(m.content, "execution_state");
                    if (st && strcmp(st, "idle") == 0)
                        idle = true;
                }
                if (k == 1 && stream_bytes && strcmp(m.msg_type, "stream") == 0) {
                    const char *t = wire_get_str(m.content, "text");
                    if (t)
                        *stream_bytes += strlen(t);
                }
            }
            wire_msg_free(&m);
        }
    }
    return 0;
}

/* The start of a block of the interleaved bench (serve, relay): the line
 * "N PREP" runs PREP (unless "-") and two warm-ups, untimed, then prints
 * "go" (the bench samples CPU times there and at "end"). The warm-ups also
 * drain what other clients' runs left on iopub since the last block
 * (s_execute skips foreign parents). Returns N. */
static long s_block_start(s_conn_t *c, char *line)
{
    char *prep = NULL;
    long blk = strtol(line, &prep, 10);
    prep += strspn(prep, " ");
    prep[strcspn(prep, "\n")] = '\0';
    if (*prep && strcmp(prep, "-") != 0)
        s_execute(c, prep, NULL);
    for (int i = 0; i < 2; i++)
        s_execute(c, "x = 42", NULL);
    printf("go\n");
    fflush(stdout);
    return blk;
}

static void *s_socket(void *ctx, int type, const connfile_t *ci, int which, const char *id)
{
    void *s = zmq_socket(ctx, type);
    int zero = 0, ivl = 10;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    if (id)
        zmq_setsockopt(s, ZMQ_ROUTING_ID, id, strlen(id));
    if (type == ZMQ_SUB)
        zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
    char ep[300];
    connfile_endpoint(ci, which, ep, sizeof ep);
    zmq_connect(s, ep);
    return s;
}

/* This process's VmRSS in kB: what a minimal libzmq client holds. */
static long s_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: floor boot | rt N [CONNECTION_FILE] | flood N [CONNECTION_FILE] | serve|relay 0 CONNECTION_FILE   (kernelspec: $FLOOR_KERNEL or python3)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (sodium_init() < 0)
        return 1;
    const char *mode = argv[1];
    long n = argc > 2 ? atol(argv[2]) : 300;
    char err[1024];
    kernelspec_t *ks = kernelspec_find(getenv("FLOOR_KERNEL") ? getenv("FLOOR_KERNEL") : "python3", err, sizeof err);
    if (!ks) {
        fprintf(stderr, "floor: %s\n", err);
        return 1;
    }
    const char *existing = argc > 3 ? argv[3] : NULL;
    char *rt = jpaths_runtime_dir();
    jpaths_ensure_dir(rt);
    connfile_t ci;
    char *path = NULL, *log = NULL, *parent = NULL;
    char **kargv = NULL;
    kernel_proc_t *proc = NULL;
    int64_t t0 = loop_now_us();
    if (existing) {
        if (connfile_read(existing, &ci, err, sizeof err) < 0) {
            fprintf(stderr, "floor: %s\n", err);
            return 1;
        }
    } else {
        if (connfile_init_local(&ci, "python3", err, sizeof err) < 0) {
            fprintf(stderr, "floor: %s\n", err);
            return 1;
        }
        path = xasprintf("%s/kernel-floor-%ld.json", rt, (long)getpid());
        log = xasprintf("%s/kernel-floor-%ld.log", rt, (long)getpid());
        connfile_write(path, &ci, err, sizeof err);
        kargv = kernelspec_argv(ks, path, NULL);
        parent = xasprintf("JPY_PARENT_PID=%ld", (long)getpid());
        char *env[] = {"PYDEVD_DISABLE_FILE_VALIDATION=1", parent, NULL};
        kernel_proc_opts_t po = {.argv = kargv, .env_extra = env, .log_path = log};
        t0 = loop_now_us();
        proc = kernel_proc_spawn(&po, err, sizeof err);
        if (!proc) {
            fprintf(stderr, "floor: %s\n", err);
            return 1;
        }
    }
    void *ctx = zmq_ctx_new();
    s_conn_t c;
    memset(&c, 0, sizeof c);
    wire_new_id(c.session);
    wire_auth_init(&c.auth, ci.key, strlen(ci.key));
    wire_out_init(&c.out);
    c.iopub = s_socket(ctx, ZMQ_SUB, &ci, CONN_IOPUB, NULL);
    c.shell = s_socket(ctx, ZMQ_DEALER, &ci, CONN_SHELL, c.session);
    /* Readiness: kernel_info until iopub has shown traffic. */
    bool ready = false, iopub = false;
    while (!ready) {
        char id[WIRE_ID_LEN + 1];
        s_send(&c, "kernel_info_request", NULL, id);
        int64_t until = loop_now_us() + 1000000;
        bool reply = false;
        while (loop_now_us() < until && !(reply && iopub)) {
            zmq_pollitem_t its[2] = {{.socket = c.shell, .events = ZMQ_POLLIN}, {.socket = c.iopub, .events = ZMQ_POLLIN}};
            /* A reply without iopub: the subscription was late; ask again soon. */
            if (zmq_poll(its, 2, reply ? 10 : 1000) <= 0) {
                if (reply)
                    break;
                continue;
            }
            for (int k = 0; k < 2; k++) {
                wire_msg_t m;
                if ((its[k].revents & ZMQ_POLLIN) && s_recv(&c, its[k].socket, 0, &m) == 0) {
                    if (k == 1)
                        iopub = true;
                    if (k == 0 && m.parent_id && strcmp(m.parent_id, id) == 0)
                        reply = true;
                    wire_msg_free(&m);
                }
            }
        }
        ready = reply && iopub;
    }
    int64_t t_ready = loop_now_us();
    /* Drain what the handshake left on iopub (s_execute matches parents,
     * so boot, which is timed, need not wait for it). */
    if (strcmp(mode, "boot") != 0)
        for (wire_msg_t m; s_recv(&c, c.iopub, 50, &m) == 0;)
            wire_msg_free(&m);
    int rc = 0;
    if (strcmp(mode, "boot") == 0) {
        s_execute(&c, "x = 42", NULL);
        int64_t t_first = loop_now_us();
        printf("ready_ms %.1f\n", (double)(t_ready - t0) / 1000.0);
        printf("first_result_ms %.1f\n", (double)(t_first - t0) / 1000.0);
        printf("rss_kb %ld\n", s_rss_kb());
    } else if (strcmp(mode, "rt") == 0) {
        for (int i = 0; i < 50; i++)
            s_execute(&c, "x = 42", NULL);
        for (long i = 0; i < n; i++) {
            int64_t a = loop_now_us();
            if (s_execute(&c, "x = 42", NULL) < 0) {
                rc = 1;
                break;
            }
            printf("%lld\n", (long long)(loop_now_us() - a));
        }
    } else if (strcmp(mode, "serve") == 0) {
        char line[4096];
        while (rc == 0 && fgets(line, sizeof line, stdin)) {
            long blk = s_block_start(&c, line);
            for (long i = 0; i < blk; i++) {
                int64_t a = loop_now_us();
                if (s_execute(&c, "x = 42", NULL) < 0) {
                    rc = 1;
                    break;
                }
                printf("%lld\n", (long long)(loop_now_us() - a));
            }
            printf("end\n");
            fflush(stdout);
        }
    } else if (strcmp(mode, "relay") == 0) {
        /* serve, with the timing done by a second process that asks for
         * each round trip over a pipe and waits for the answer on another:
         * the process and wake-up structure of any stdio bridge (client ->
         * bridge -> kernel -> bridge -> client) with none of its work. */
        int p2c[2], c2p[2];
        if (pipe(p2c) < 0 || pipe(c2p) < 0)
            return 1;
        fflush(stdout);
        pid_t timer = fork();
        if (timer == 0) {
            close(p2c[1]);
            close(c2p[0]);
            long blk;
            char x = 'x';
            while (read(p2c[0], &blk, sizeof blk) == (ssize_t)sizeof blk) {
                for (long i = 0; i < blk; i++) {
                    int64_t a = loop_now_us();
                    if (write(c2p[1], &x, 1) != 1 || read(p2c[0], &x, 1) != 1)
                        _exit(1);
                    printf("%lld\n", (long long)(loop_now_us() - a));
                }
                fflush(stdout);
                if (write(c2p[1], &x, 1) != 1)
                    _exit(1);
            }
            _exit(0);
        }
        close(p2c[0]);
        close(c2p[1]);
        printf("pid %ld\n", (long)timer); /* the bench stops and continues it with this process */
        fflush(stdout);
        char line[4096];
        while (rc == 0 && fgets(line, sizeof line, stdin)) {
            long blk = s_block_start(&c, line);
            char x;
            if (write(p2c[1], &blk, sizeof blk) != (ssize_t)sizeof blk)
                rc = 1;
            for (long i = 0; rc == 0 && i < blk; i++) {
                if (read(c2p[0], &x, 1) != 1 || s_execute(&c, "x = 42", NULL) < 0 || write(p2c[1], &x, 1) != 1)
                    rc = 1;
            }
            if (rc == 0 && read(c2p[0], &x, 1) != 1) /* the timer printed its times */
                rc = 1;
            printf("end\n");
            fflush(stdout);
        }
        close(p2c[1]);
        close(c2p[0]);
        waitpid(timer, NULL, 0);
    } else if (strcmp(mode, "flood") == 0) {
        s_execute(&c, "x = 42", NULL);
        char code[128];
        snprintf(code, sizeof code, "for i in range(%ld): print(i)", n);
        size_t bytes = 0;
        int64_t a = loop_now_us();
        s_execute(&c, code, &bytes);
        printf("flood_ms %.1f\n", (double)(loop_now_us() - a) / 1000.0);
        printf("stream_bytes %zu\n", bytes);
    } else {
        fprintf(stderr, "floor: unknown mode %s\n", mode);
        rc = 2;
    }
    zmq_close(c.shell);
    zmq_close(c.iopub);
    zmq_ctx_term(ctx);
    if (proc) {
        kernel_proc_stop(proc, 200);
        kernel_proc_destroy(&proc);
        unlink(path);
        unlink(log);
    }
    wire_out_free(&c.out);
    wire_auth_free(&c.auth);
    connfile_free(&ci);
    if (kargv)
        kernelspec_free_argv(kargv);
    kernelspec_destroy(&ks);
    free(path);
    free(log);
    free(parent);
    free(rt);
    return rc;
}
