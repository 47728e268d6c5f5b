/* fuzz_http: raw HTTP request streams through the real transport_http and
 * MCP layer.
 *
 * Made once per configuration and kept across inputs, as a long-running
 * `rat-py --http` keeps them: the loop, an MCP server with rat-py's real tool
 * schemas in front of harmless handlers (as in fuzz_mcp), and transport_http
 * on 127.0.0.1, port 0. Handlers: run's code "keep..." keeps the call open
 * (a log line and progress go out on its SSE stream first), "later..."
 * finishes it from a timer, "ask..." sends run's elicitation/create and reads
 * the reply with run's tool_elicit_reply (the server's request ids count
 * from 1 in each session), "notify..." logs to the
 * session's GET stream, "big..." logs 20 KiB before answering; anything else
 * is cleaned by the output module and echoed. look parses `at` with
 * lookpath, ctl echoes its op ("wait" finishes later). Routes /health and
 * /assets/ behave like rat-py's (bridge/app/server.c).
 *
 * The input: byte 0 picks the configuration (bits 0-1, see s_configs), how
 * the input ends (bit 2 set: transport_http_destroy with whatever is open,
 * rebuilt for the next input; clear: every session is ended with DELETE over
 * HTTP) and the connections (bit 3 set: loopback TCP through the listening
 * socket; clear: socketpairs the transport adopts, the same to the server
 * and three times cheaper). So "0".."7" start an input over socketpairs, "8"
 * and "9" one over TCP. The rest is split at "@@NEXT@@" into request streams;
 * each is written on a new connection, and the loop runs until it is idle
 * (nothing ready, no timer due) while the client reads. Connections stay
 * open until the end of the input (the server may close them first), so a
 * later stream can cancel, answer or delete what a held stream waits for. In
 * a stream, "@SID@" becomes the latest Mcp-Session-Id the server sent and
 * "@SID0@".."@SID9@" the Nth one of this input (32 zeros when there is none).
 * Then half of the calls still kept are answered, every client socket is
 * closed (TCP ones with a reset), and the sessions end as byte 0 says. The
 * client never sends the first FIN: that would leave a TIME_WAIT socket per
 * TCP connection, tens of thousands a minute, until connect() ran out of
 * ports.
 *
 * Checked: the loop goes idle (no busy loop); after the input no session, no
 * kept call and no connection is left (nothing accumulates across inputs;
 * the one exception, a libmicrohttpd delay, is explained where it is
 * allowed);
 * everything the server wrote on a connection is a sequence of HTTP/1.x
 * responses with a status from the documented set (s_status_ok), headers
 * without control characters, a body framed by Content-Length or chunked
 * encoding (or the close, for HTTP/1.0 streams) and complete unless it is an
 * event stream still open or the server reset the connection;
 * application/json bodies are strict UTF-8 JSON, JSON-RPC responses on /mcp
 * (202 bodies are empty); event streams are "event:", "id:", "data:" and
 * ": keepalive" lines whose data is one JSON-RPC message, with at most one
 * response and nothing after it; a 401 carries WWW-Authenticate: Bearer; a
 * session id is 32 lowercase hex digits. The DELETEs that end the input get
 * 200, or 404 for a session already gone.
 *
 * FUZZ_HTTP_TRACE=1 in the environment prints what each connection received,
 * and the transport's debug log, e.g. for replay_http on one input. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sodium.h>

#include "buf.h"
#include "fuzz_check.h"
#include "fuzz_tools.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "tool_elicit.h"
#include "transport_http.h"

#define KEEP_MAX 8             /* calls held open at once (a ninth is answered at once) */
#define CONN_MAX 16            /* streams per input, later ones are skipped: each costs a */
                               /* connection, and 64 halved the rate for little coverage */
#define SID_MAX 512            /* session ids remembered per input (more than any table holds) */
#define SETTLE_MAX 20000       /* loop passes before "never idle" is a failure */
#define BIG_LOG (20 * 1024)    /* bytes of the log line "big..." sends */
#define LINGER_S 5             /* connection timeout: bounds what MHD leaves behind */
#define TOKEN "fuzz-token"
#define SEP "@@NEXT@@"
#define SID_LEN 32

/* ------------------------------------------------------------ configurations */

typedef struct {
    const char *token;
    size_t max_body;
    unsigned max_sessions;
} s_config_t;

static char *const s_origins[] = {"https://app.example", NULL};

/* 0: the default loopback setup (Host and Origin checked); 1: a token (401,
 * no Host check); 2 and 3: small limits (413 on small bodies, eviction and
 * 503 with two sessions), an allowed extra origin, 3 with the token. */
static const s_config_t s_configs[4] = {
    {NULL, 0, 0},
    {TOKEN, 0, 0},
    {NULL, 1024, 2},
    {TOKEN, 1024, 2},
};

static loop_t *s_loop;
static mcp_server_t *s_srv;
static bool s_trace; /* FUZZ_HTTP_TRACE set: print what each connection got */
static transport_http_t *s_http[4];
static size_t s_lingering[4]; /* connections MHD had yet to clean up after the last input */

/* ------------------------------------------------------------ tool handlers */

typedef struct {
    mcp_call_t *call;
    uint64_t timer; /* "later": the timer that finishes it */
} s_kept_t;

static s_kept_t s_kept[KEEP_MAX];

static void s_forget(mcp_call_t *call)
{
    for (int i = 0; i < KEEP_MAX; i++) {
        if (s_kept[i].call == call) {
            loop_timer_cancel(s_loop, s_kept[i].timer);
            s_kept[i].call = NULL;
            s_kept[i].timer = 0;
        }
    }
}

static void s_on_cancel(mcp_call_t *call, mcp_cancel_reason_t reason, void *ud)
{
    s_forget(call);
}

static s_kept_t *s_keep(mcp_call_t *call)
{
    for (int i = 0; i < KEEP_MAX; i++) {
        if (!s_kept[i].call) {
            s_kept[i].call = call;
            s_kept[i].timer = 0;
            mcp_call_on_cancel(call, s_on_cancel, NULL);
            return &s_kept[i];
        }
    }
    return NULL;
}

/* Finishes a kept call with a result. */
static void s_finish(mcp_call_t *call, const char *text)
{
    s_forget(call);
    mcp_call_on_cancel(call, NULL, NULL);
    mcp_call_text(call, text, false);
}

static void s_on_later(loop_t *loop, void *ud)
{
    s_kept_t *k = ud;
    k->timer = 0;
    mcp_call_t *call = k->call;
    mcp_call_log(call, MCP_LOG_INFO, "stdout", "later", 5);
    s_finish(call, "done later");
}

/* The elicitation reply goes through what run uses: mcp's response
 * dispatch, then tool_elicit_reply, the only code that reads it, and
 * tool_elicit_note, which quotes what the client said back in the result. */
static void s_on_answer(void *ud, json_object *result, json_object *error)
{
    mcp_call_t *call = ud;
    if (!result && !error)
        return; /* abandoned: the call is being freed */
    /* mcp_response_fn's contract, which run's handler relies on. */
    FUZZ_ASSERT(result ? !error && json_object_is_type(result, json_type_object)
                       : json_object_is_type(error, json_type_object));
    const char *value = NULL, *why = NULL;
    tool_elicit_kind_t kind = tool_elicit_reply(result, error, &value, &why);
    FUZZ_ASSERT(kind == TOOL_ELICIT_ACCEPT ? value && !why : !value);
    FUZZ_ASSERT(kind == TOOL_ELICIT_DECLINE ? !why : kind == TOOL_ELICIT_ACCEPT || why);
    s_forget(call);
    mcp_call_on_cancel(call, NULL, NULL);
    char *note = tool_elicit_note(kind, why);
    FUZZ_ASSERT((note != NULL) == (kind == TOOL_ELICIT_FAILED || kind == TOOL_ELICIT_INVALID));
    mcp_call_text(call, value ? value : note ? note : "declined", kind != TOOL_ELICIT_ACCEPT);
    free(note);
}

static bool s_later(mcp_call_t *call)
{
    s_kept_t *k = s_keep(call);
    if (k)
        k->timer = loop_timer(s_loop, 0, s_on_later, k);
    return k != NULL;
}

static void s_run(mcp_call_t *call, json_object *args, void *ud)
{
    const char *code = fuzz_arg(args, "code");
    if (!code)
        code = fuzz_arg(args, "input");
    if (!code) {
        mcp_call_text(call, "run: nothing to do", true);
        return;
    }
    if (strncmp(code, "keep", 4) == 0 && s_keep(call)) {
        mcp_call_log(call, MCP_LOG_INFO, "stdout", code, strlen(code));
        mcp_call_progress(call, 1, -1, code);
        return;
    }
    if (strncmp(code, "later", 5) == 0 && s_later(call))
        return;
    if (strncmp(code, "ask", 3) == 0 && s_keep(call)) {
        tool_elicit_request(call, code, s_on_answer, call);
        return;
    }
    if (strncmp(code, "notify", 6) == 0)
        mcp_session_log(mcp_call_session(call), MCP_LOG_WARNING, "rat", code);
    if (strncmp(code, "big", 3) == 0) {
        /* More than MHD's 16 KiB read block: the stream goes out in parts. */
        size_t n = strlen(code), len = BIG_LOG;
        char *big = xmalloc(len + 1);
        for (size_t i = 0; i < len; i += n)
            memcpy(big + i, code, len - i < n ? len - i : n);
        big[len] = '\0';
        mcp_call_log(call, MCP_LOG_INFO, "stdout", big, len);
        free(big);
    }
    fuzz_answer_output(call, code);
}

static void s_ctl(mcp_call_t *call, json_object *args, void *ud)
{
    const char *op = fuzz_arg(args, "op");
    if (op && strcmp(op, "wait") == 0 && s_later(call))
        return;
    mcp_call_text(call, op ? op : "?", false);
}

/* ------------------------------------------------------------ routes (as bridge/app/server.c's) */

static void s_route_health(void *ud, const char *path, http_reply_t *out)
{
    if (strcmp(path, "/health") != 0)
        return;
    out->status = 200;
    out->content_type = "application/json";
    out->body = xasprintf("{\"status\":\"ok\",\"kernel\":\"idle\",\"exec_count\":0,\"uptime_s\":0,\"sessions\":%zu}",
                          transport_http_sessions(ud));
    out->len = strlen(out->body);
}

/* The page's routes (as bridge/app/page.c's): "/" needs the token (header or
 * ?token=), "/static/" is open; both answer with a CSP. */
static void s_route_page(void *ud, const char *path, http_reply_t *out)
{
    if (strcmp(path, "/") != 0 && strcmp(path, "/static/app.js") != 0)
        return;
    out->status = 200;
    out->content_type = path[1] ? "text/javascript" : "text/html";
    out->body = xstrdup(path[1] ? "void 0;\n" : "<!doctype html><p>page</p>\n");
    out->len = strlen(out->body);
    out->csp = "default-src 'none'";
}

/* Whether a descriptor of this process is the memfd named name. */
static bool s_memfd_open(const char *name)
{
    char want[64];
    snprintf(want, sizeof want, "/memfd:%s", name);
    DIR *d = opendir("/proc/self/fd");
    FUZZ_ASSERT(d);
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        char link[300], target[256];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            found = strncmp(target, want, strlen(want)) == 0;
        }
    }
    closedir(d);
    return found;
}

static bool s_huge_served; /* /assets/huge.txt was asked for in this input */

/* /assets/a.txt and /assets/p.html exist (served from a file, as assets
 * are); /assets/huge.txt comes as a file MHD refuses (a size past
 * INT64_MAX), which the transport must still close; anything else is
 * rat-py's asset 404. */
static void s_route_assets(void *ud, const char *path, http_reply_t *out)
{
    const char *name = path + strlen("/assets/");
    if (strcmp(name, "huge.txt") == 0) {
        int fd = memfd_create("rat-fuzz-huge", MFD_CLOEXEC);
        FUZZ_ASSERT(fd >= 0);
        s_huge_served = true;
        out->status = 200;
        out->content_type = "text/plain";
        out->fd = fd;
        out->fd_size = (size_t)INT64_MAX + 1;
        return;
    }
    bool html = strcmp(name, "p.html") == 0;
    if (!html && strcmp(name, "a.txt") != 0) {
        out->status = 404;
        out->content_type = "application/json";
        out->body = xstrdup("{\"error\":\"asset_not_found\"}");
        out->len = strlen(out->body);
        return;
    }
    static const char text[] = "<p>an asset</p>\n";
    int fd = memfd_create("asset", MFD_CLOEXEC);
    FUZZ_ASSERT(fd >= 0 && write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
    out->status = 200;
    out->content_type = html ? "text/html" : "text/plain";
    out->fd = fd;
    out->fd_size = sizeof text - 1;
    out->sandbox = html;
}

/* ------------------------------------------------------------ setup */

static void s_init(void)
{
    if (s_loop)
        return;
    signal(SIGPIPE, SIG_IGN); /* as rat-py does (sigs.c) */
    s_trace = getenv("FUZZ_HTTP_TRACE") != NULL;
    log_set_level(s_trace ? LOG_LEVEL_DEBUG : LOG_LEVEL_OFF);
    FUZZ_ASSERT(sodium_init() >= 0);
    s_loop = loop_new();
    s_srv = mcp_server_new("rat-py", "0.0.0-fuzz", tools_instructions());
    fuzz_add_tools(s_srv, s_run, s_ctl);
}

static transport_http_t *s_transport(int cfg)
{
    if (s_http[cfg])
        return s_http[cfg];
    const s_config_t *c = &s_configs[cfg];
    transport_http_opts_t o = {
        .host = "127.0.0.1",
        .port = 0,
        .token = c->token,
        .allow_origins = cfg >= 2 ? s_origins : NULL,
        .max_body = c->max_body,
        .max_sessions = c->max_sessions,
        .connection_timeout_s = LINGER_S,
    };
    char err[256];
    s_http[cfg] = transport_http_new(s_loop, s_srv, &o, err, sizeof err);
    if (!s_http[cfg]) {
        fprintf(stderr, "fuzz_http: %s\n", err);
        abort();
    }
    transport_http_route(s_http[cfg], "/health", s_route_health, s_http[cfg]);
    transport_http_route(s_http[cfg], "/assets/", s_route_assets, NULL);
    transport_http_route_open(s_http[cfg], "/static/", s_route_page, NULL);
    transport_http_route(s_http[cfg], "/", s_route_page, NULL);
    return s_http[cfg];
}

/* ------------------------------------------------------------ client connections */

typedef struct {
    int fd;          /* -1 once closed by us */
    buf_t out;       /* everything the server wrote */
    size_t scanned;  /* out scanned for session ids up to here */
    bool eof;        /* the server closed (or reset) the connection */
    bool reset;      /* ... with a reset: the end of out may be lost */
    bool head;       /* the stream may hold a HEAD request (bodiless responses) */
    bool http10;     /* ... or an HTTP/1.0 one (streams delimited by the close) */
    bool cleanup;    /* the harness's own DELETEs */
} s_conn_t;

typedef struct {
    s_conn_t conns[CONN_MAX + 1]; /* + the cleanup connection */
    int nconns;
    char (*sids)[SID_LEN + 1];    /* session ids seen, in order */
    int nsids;
} s_input_t;

/* One loop pass (see loop_run_once); a signal (libFuzzer's timers) only
 * means the pass is run again. */
static int s_pass(int timeout_ms)
{
    int ran;
    while ((ran = loop_run_once(s_loop, timeout_ms)) < 0 && errno == EINTR)
        ;
    FUZZ_ASSERT(ran >= 0);
    return ran;
}

/* Reads what arrived on every open connection (one poll finds which).
 * Returns whether anything did. */
static bool s_read_all(s_input_t *in)
{
    struct pollfd pfd[CONN_MAX + 1];
    int idx[CONN_MAX + 1], npfd = 0;
    for (int i = 0; i < in->nconns; i++) {
        if (in->conns[i].fd >= 0 && !in->conns[i].eof) {
            pfd[npfd] = (struct pollfd){.fd = in->conns[i].fd, .events = POLLIN};
            idx[npfd++] = i;
        }
    }
    int rc;
    while ((rc = poll(pfd, (nfds_t)npfd, 0)) < 0 && errno == EINTR)
        ;
    if (rc <= 0)
        return false;
    bool got = false;
    char tmp[16384];
    for (int k = 0; k < npfd; k++) {
        if (!pfd[k].revents)
            continue;
        s_conn_t *c = &in->conns[idx[k]];
        while (!c->eof) {
            ssize_t n = recv(c->fd, tmp, sizeof tmp, 0);
            if (n > 0) {
                FUZZ_ASSERT(buf_append(&c->out, tmp, (size_t)n) == 0);
                got = true;
            } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                c->eof = true;
                c->reset = n < 0;
                got = true;
            } else {
                break;
            }
        }
    }
    return got;
}

static bool s_is_hex_id(const char *p, size_t n)
{
    if (n < SID_LEN)
        return false;
    for (size_t i = 0; i < SID_LEN; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

/* Collects the Mcp-Session-Id headers that arrived since the last scan. */
static void s_scan_sids(s_input_t *in)
{
    static const char hdr[] = "\r\nMcp-Session-Id: ";
    for (int i = 0; i < in->nconns; i++) {
        s_conn_t *c = &in->conns[i];
        const char *p;
        while (c->out.len > c->scanned &&
               (p = memmem(c->out.data + c->scanned, c->out.len - c->scanned, hdr, sizeof hdr - 1))) {
            const char *v = p + sizeof hdr - 1;
            size_t left = c->out.len - (size_t)(v - c->out.data);
            if (left < SID_LEN + 2)
                break; /* the rest has not arrived: scan it next time */
            c->scanned = (size_t)(v - c->out.data);
            FUZZ_ASSERT(s_is_hex_id(v, left) && memcmp(v + SID_LEN, "\r\n", 2) == 0);
            if (in->nsids < SID_MAX) {
                memcpy(in->sids[in->nsids], v, SID_LEN);
                in->sids[in->nsids++][SID_LEN] = '\0';
            }
        }
    }
}

/* Runs the loop until it is idle: a pass with nothing ready, no timer due
 * and nothing read. (Loopback delivers within the sending call, so what the
 * server wrote is readable at once, and what a client wrote wakes the
 * server's epoll descriptor at once.) Then collects the new session ids:
 * any answer may carry one, a pipelined initialize that a held stream
 * delayed until the end of the input included. */
static void s_settle(s_input_t *in)
{
    for (int i = 0; i < SETTLE_MAX; i++) {
        int ran = s_pass(0);
        bool got = s_read_all(in);
        if (!ran && !got) {
            s_scan_sids(in);
            return;
        }
    }
    FUZZ_ASSERT(!"the loop never goes idle");
}

/* A new client connection: over loopback TCP through the listening socket,
 * or, three times cheaper, a socketpair whose other end the transport adopts. */
static s_conn_t *s_connect(s_input_t *in, transport_http_t *http, bool tcp)
{
    s_conn_t *c = &in->conns[in->nconns++];
    memset(c, 0, sizeof *c);
    buf_init(&c->out, 0);
    if (!tcp) {
        int sv[2];
        FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
        c->fd = sv[0];
        transport_http_adopt(http, sv[1]); /* refused: the client reads EOF */
        return c;
    }
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    FUZZ_ASSERT(c->fd >= 0);
    /* Closing sends a reset: no TIME_WAIT on either side. */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    int port = transport_http_port(http);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Non-blocking, so that a signal cannot cut it short: loopback completes
     * the handshake at once, the server accepts when the loop runs. */
    int rc = connect(c->fd, (struct sockaddr *)&sa, sizeof sa), err = rc ? errno : 0;
    if (err == EINPROGRESS || err == EINTR) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
        while ((rc = poll(&pfd, 1, 1000)) < 0 && errno == EINTR)
            ;
        socklen_t len = sizeof err;
        if (rc == 0)
            err = ETIMEDOUT;
        else
            getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err) {
        fprintf(stderr, "fuzz_http: connect to port %d: %s\n", port, strerror(err));
        abort();
    }
    return c;
}

/* Writes all of data (the loop runs while the socket is full), then lets the
 * server finish. */
static void s_send(s_input_t *in, s_conn_t *c, const char *data, size_t len)
{
    size_t off = 0;
    int stuck = 0;
    while (off < len && !c->eof) {
        ssize_t n = send(c->fd, data + off, len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            stuck = 0;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break; /* the server closed: it will have said why */
        /* Full: the server reads only as fast as it handles requests. */
        int ran = s_pass(1);
        if (!s_read_all(in) && !ran && ++stuck > 50)
            break; /* it stopped reading (a held stream ahead in the pipeline) */
    }
    s_settle(in);
}

static void s_close(s_conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* The stream with "@SID@" and "@SIDn@" replaced. */
static void s_expand(const s_input_t *in, const char *p, size_t n, buf_t *out)
{
    static const char zeros[] = "00000000000000000000000000000000";
    buf_reset(out);
    const char *end = p + n;
    while (p < end) {
        const char *at = memchr(p, '@', (size_t)(end - p));
        if (!at)
            at = end;
        buf_append(out, p, (size_t)(at - p));
        p = at;
        if (p == end)
            break;
        size_t left = (size_t)(end - p);
        if (left >= 5 && memcmp(p, "@SID@", 5) == 0) {
            buf_append(out, in->nsids ? in->sids[in->nsids - 1] : zeros, SID_LEN);
            p += 5;
        } else if (left >= 6 && memcmp(p, "@SID", 4) == 0 && p[4] >= '0' && p[4] <= '9' && p[5] == '@') {
            int k = p[4] - '0';
            buf_append(out, k < in->nsids ? in->sids[k] : zeros, SID_LEN);
            p += 6;
        } else {
            buf_putc(out, *p++);
        }
    }
}

/* ------------------------------------------------------------ response checks */

/* Statuses the server may send: transport_http's (README, Streamable HTTP:
 * 200, 202, 204 for a CORS preflight, 400, 401, 403, 404, 405, 406, 409, 413,
 * 415, 503 when every session is busy) and libmicrohttpd's own (100 Continue,
 * 400 malformed, 413 chunk or length too large, 414, 431, 505). */
static bool s_status_ok(int status)
{
    static const int ok[] = {100, 200, 202, 204, 400, 401, 403, 404, 405, 406, 409, 413, 414, 415, 431, 503, 505};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (ok[i] == status)
            return true;
    return false;
}

static const char *s_find_crlf(const char *p, const char *end)
{
    return memmem(p, (size_t)(end - p), "\r\n", 2);
}

static bool s_starts(const char *p, const char *end, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(end - p) >= n && memcmp(p, s, n) == 0;
}

/* Decodes a chunked body from *pp. Returns whether it was complete (last
 * chunk and its CRLF seen); *pp is left after it. */
static bool s_dechunk(const char **pp, const char *end, buf_t *body)
{
    const char *p = *pp;
    for (;;) {
        const char *eol = s_find_crlf(p, end);
        if (!eol)
            break;
        char *hexend = NULL;
        unsigned long size = strtoul(p, &hexend, 16);
        FUZZ_ASSERT(hexend > p && (hexend == eol || *hexend == ';'));
        p = eol + 2;
        if (size == 0) {
            eol = s_find_crlf(p, end); /* no trailers from us: just the final CRLF */
            if (!eol)
                break;
            FUZZ_ASSERT(eol == p);
            *pp = eol + 2;
            return true;
        }
        size_t have = (size_t)(end - p);
        buf_append(body, p, have < size ? have : size);
        if (have < size + 2) {
            p = end;
            break;
        }
        FUZZ_ASSERT(memcmp(p + size, "\r\n", 2) == 0);
        p += size + 2;
    }
    *pp = end;
    return false;
}

/* An event stream's body: whole lines only, unless the stream is still open. */
static void s_check_sse(const char *p, size_t n, bool complete)
{
    const char *end = p + n;
    int responses = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            FUZZ_ASSERT(!complete); /* a line cut by the client's close */
            break;
        }
        size_t len = (size_t)(nl - p);
        if (s_starts(p, nl, "data: ")) {
            FUZZ_ASSERT(responses == 0); /* the response is the last message */
            if (fuzz_check_jsonrpc(p + 6, len - 6, FUZZ_MSG_ANY))
                responses++;
        } else if (s_starts(p, nl, "id: ")) {
            FUZZ_ASSERT(len > 4 && strspn(p + 4, "0123456789") == len - 4);
        } else {
            FUZZ_ASSERT(len == 0 || (len == 14 && memcmp(p, "event: message", 14) == 0) ||
                        (len == 11 && memcmp(p, ": keepalive", 11) == 0));
        }
        p = nl + 1;
    }
}

static void s_check_json(int status, const char *p, size_t n)
{
    FUZZ_ASSERT(fuzz_utf8_ok(p, n));
    json_object *o = fuzz_parse_json(p, n);
    FUZZ_ASSERT(o && json_object_is_type(o, json_type_object));
    bool rpc = json_object_object_get_ex(o, "jsonrpc", NULL);
    /* Not JSON-RPC: a route's own body (/health, an asset's 404). */
    FUZZ_ASSERT(rpc || json_object_object_get_ex(o, "status", NULL) || json_object_object_get_ex(o, "error", NULL));
    json_object_put(o);
    if (rpc) {
        fuzz_check_jsonrpc(p, n, FUZZ_MSG_RESPONSE);
        FUZZ_ASSERT(status == 200 || status >= 400);
    }
}

typedef struct {
    int status;
    const char *ctype, *ctype_end;
    long long length; /* -1: none */
    bool chunked, www_bearer, has_sid;
} s_head_t;

/* Parses one header line into h. */
static void s_header_line(const char *p, const char *eol, s_head_t *h)
{
    const char *colon = memchr(p, ':', (size_t)(eol - p));
    FUZZ_ASSERT(colon && colon > p);
    for (const char *q = p; q < colon; q++)
        FUZZ_ASSERT(*q > ' ' && *q < 0x7f);
    const char *v = colon + 1;
    while (v < eol && *v == ' ')
        v++;
    for (const char *q = v; q < eol; q++)
        FUZZ_ASSERT((unsigned char)*q >= ' ' && *q != 0x7f);
    size_t name = (size_t)(colon - p), vlen = (size_t)(eol - v);
    if (name == 12 && strncasecmp(p, "Content-Type", 12) == 0) {
        h->ctype = v;
        h->ctype_end = eol;
    } else if (name == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
        FUZZ_ASSERT(vlen > 0 && vlen < 18 && strspn(v, "0123456789") >= vlen);
        h->length = strtoll(v, NULL, 10);
    } else if (name == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0) {
        h->chunked = vlen == 7 && strncasecmp(v, "chunked", 7) == 0;
    } else if (name == 16 && strncasecmp(p, "WWW-Authenticate", 16) == 0) {
        h->www_bearer = vlen == 6 && memcmp(v, "Bearer", 6) == 0;
    } else if (name == 14 && strncasecmp(p, "Mcp-Session-Id", 14) == 0) {
        FUZZ_ASSERT(vlen == SID_LEN && s_is_hex_id(v, vlen));
        h->has_sid = true;
    }
}

static bool s_ctype_is(const s_head_t *h, const char *type)
{
    size_t n = strlen(type);
    return h->ctype && (size_t)(h->ctype_end - h->ctype) >= n && strncasecmp(h->ctype, type, n) == 0;
}

/* Everything the server wrote on one connection. */
static void s_check_conn(const s_conn_t *c)
{
    const char *p = c->out.data ? c->out.data : "", *end = p + c->out.len;
    buf_t body;
    buf_init(&body, 0);
    while (p < end) {
        const char *start = p;
        const char *eol = s_find_crlf(p, end);
        if (!eol && c->reset)
            break; /* the end was lost to the reset */
        FUZZ_ASSERT(eol && eol - p >= 12);
        FUZZ_ASSERT(s_starts(p, eol, "HTTP/1.1 ") || s_starts(p, eol, "HTTP/1.0 "));
        FUZZ_ASSERT(strspn(p + 9, "0123456789") >= 3 && (eol - p == 12 || p[12] == ' '));
        s_head_t h = {.status = atoi(p + 9), .length = -1};
        FUZZ_ASSERT(s_status_ok(h.status));
        p = eol + 2;
        bool headers_done = false;
        while (p < end) {
            eol = s_find_crlf(p, end);
            if (!eol)
                break;
            if (eol == p) {
                p += 2;
                headers_done = true;
                break;
            }
            s_header_line(p, eol, &h);
            p = eol + 2;
        }
        if (!headers_done && c->reset)
            break;
        FUZZ_ASSERT(headers_done);
        /* libmicrohttpd before 1.0.0 sends the header block of the errors it
         * finds in the request's headers (a malformed or too large
         * Content-Length) twice: the block is built when the error is queued
         * and again when the reply starts (fixed upstream in f1bfbe71, "fixed
         * handling of various errors automatically detected by MHD code").
         * Only the client that sent the malformed request is affected. */
        size_t hlen = (size_t)(p - start);
        if ((h.status == 400 || h.status == 413) && !h.ctype && (size_t)(end - p) >= hlen &&
            memcmp(p, start, hlen) == 0)
            p += hlen;
        if (h.status == 401)
            FUZZ_ASSERT(h.www_bearer);
        if (h.has_sid)
            FUZZ_ASSERT(h.status == 200);
        if (c->cleanup)
            FUZZ_ASSERT(h.status == 200 || h.status == 404);
        if (h.status == 100 || h.status == 204)
            continue; /* no body */
        bool sse = s_ctype_is(&h, "text/event-stream");
        bool complete = true, bodiless = false;
        buf_reset(&body);
        if (h.chunked) {
            complete = s_dechunk(&p, end, &body);
            /* A stream cut short only by the client's close or a reset. */
            FUZZ_ASSERT(complete || !c->eof || c->reset);
        } else if (h.length >= 0) {
            size_t have = (size_t)(end - p);
            if (h.length > 0 && c->head && (p == end || s_starts(p, end, "HTTP/1."))) {
                bodiless = true; /* the answer to a HEAD: the length of a body not sent */
            } else if (have < (size_t)h.length) {
                FUZZ_ASSERT(c->reset);
                complete = false;
                p = end;
            } else {
                buf_append(&body, p, (size_t)h.length);
                p += h.length;
            }
        } else {
            /* Only an HTTP/1.0 event stream is delimited by the close. */
            FUZZ_ASSERT(sse);
            buf_append(&body, p, (size_t)(end - p));
            p = end;
            complete = c->eof && !c->reset;
        }
        if (!complete)
            FUZZ_ASSERT(p == end && (sse || c->reset));
        if (sse) {
            FUZZ_ASSERT(h.status == 200);
            s_check_sse(buf_str(&body), body.len, complete);
        } else if (complete && !bodiless && s_ctype_is(&h, "application/json")) {
            s_check_json(h.status, buf_str(&body), body.len);
        }
        if (h.status == 202)
            FUZZ_ASSERT(body.len == 0 && !h.ctype);
    }
    buf_free(&body);
}

/* ------------------------------------------------------------ one input */

/* Ends every session this input saw, with DELETEs on one connection. */
static void s_end_sessions(s_input_t *in, transport_http_t *http, const s_config_t *cfg)
{
    if (!in->nsids)
        return;
    buf_t req;
    buf_init(&req, 0);
    for (int i = 0; i < in->nsids; i++)
        buf_printf(&req, "DELETE /mcp HTTP/1.1\r\nHost: localhost\r\n%s%s%sMcp-Session-Id: %s\r\n\r\n",
                   cfg->token ? "Authorization: Bearer " : "", cfg->token ? cfg->token : "", cfg->token ? "\r\n" : "",
                   in->sids[i]);
    s_conn_t *c = s_connect(in, http, false);
    c->cleanup = true;
    s_send(in, c, req.data, req.len);
    s_close(c);
    buf_free(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    s_init();
    int cfg = data[0] & 3;
    bool destroy = data[0] & 4, tcp = data[0] & 8;
    transport_http_t *http = s_transport(cfg);

    static s_input_t in;
    static char sids[SID_MAX][SID_LEN + 1];
    memset(&in, 0, sizeof in);
    in.sids = sids;
    buf_t stream;
    buf_init(&stream, 0);
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    while (p < end) {
        const char *sep = memmem(p, (size_t)(end - p), SEP, sizeof SEP - 1);
        const char *stop = sep ? sep : end;
        if (stop > p && in.nconns < CONN_MAX) {
            s_expand(&in, p, (size_t)(stop - p), &stream);
            s_conn_t *c = s_connect(&in, http, tcp);
            c->head = memmem(stream.data, stream.len, "HEAD", 4) != NULL;
            c->http10 = memmem(stream.data, stream.len, "HTTP/1.0", 8) != NULL;
            s_send(&in, c, stream.data, stream.len);
            if (c->eof)
                s_close(c);
        }
        p = sep ? sep + sizeof SEP - 1 : end;
    }
    buf_free(&stream);

    /* Half of what is still kept is answered while its client listens. */
    for (int i = 0; i < KEEP_MAX; i += 2)
        if (s_kept[i].call)
            s_finish(s_kept[i].call, "done");
    s_settle(&in);
    size_t deferred = 0;
    for (int i = 0; i < in.nconns; i++) {
        s_conn_t *c = &in.conns[i];
        /* libmicrohttpd 0.9.75 closes a connection whose HTTP/1.0 stream ends
         * after being resumed, but cleans it up only at the connection's next
         * event or timeout; a client that has gone sends no more events. */
        if (c->fd >= 0 && c->http10 && c->out.len && memmem(c->out.data, c->out.len, "text/event-stream", 17))
            deferred++;
        s_close(c);
    }
    /* Modern (2026-07-28) calls belong to no session that ending could
     * cancel: like a call whose client left without ending its session, one
     * still kept lasts until it ends (or a keep-alive write fails, seconds
     * later). End them, so their streams go as the sessions' do. */
    for (int i = 0; i < KEEP_MAX; i++)
        if (s_kept[i].call && mcp_call_modern(s_kept[i].call))
            s_finish(s_kept[i].call, "done");
    if (destroy) {
        transport_http_destroy(&s_http[cfg]);
        s_lingering[cfg] = 0;
    } else {
        s_end_sessions(&in, http, &s_configs[cfg]);
        FUZZ_ASSERT(transport_http_sessions(http) == 0);
        /* The server notices the closed clients; nothing is left but what
         * MHD defers (see above), from this input or earlier ones. */
        size_t bound = s_lingering[cfg] + deferred;
        for (int i = 0; i < 100 && transport_http_connections(http) > bound; i++)
            s_pass(1);
        s_lingering[cfg] = transport_http_connections(http);
        FUZZ_ASSERT(s_lingering[cfg] <= bound);
    }
    for (int i = 0; i < KEEP_MAX; i++)
        FUZZ_ASSERT(s_kept[i].call == NULL);
    if (s_huge_served) {
        /* A reply's file is the transport's to close, sent or not. */
        FUZZ_ASSERT(!s_memfd_open("rat-fuzz-huge"));
        s_huge_served = false;
    }
    for (int i = 0; i < in.nconns; i++) {
        if (s_trace)
            fprintf(stderr, "--- connection %d (%s%s):\n%s\n", i, in.conns[i].eof ? "closed by the server" : "held",
                    in.conns[i].reset ? ", reset" : "", buf_str(&in.conns[i].out));
        s_check_conn(&in.conns[i]);
        buf_free(&in.conns[i].out);
    }
    return 0;
}
