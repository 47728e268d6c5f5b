/* Unit tests: what the gateway path takes from outside before anything
 * trusts it: the --gateway URL (gateway_new), the server's error bodies
 * (gateway_http_error), and WebSocket messages (wire_from_json and wire_from_json_text: the
 * checks that stand in for a signature on the JSON form), and kernel_ws
 * against a fake peer for what a real Jupyter Server never sends (broken
 * upgrades, frames that are not Jupyter messages, absurd lengths). The real
 * server is tests/integration/gateway.test.mjs's. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <czmq.h>
#include <sodium.h>

#include "buf.h"
#include "check.h"
#include "gateway.h"
#include "kernel_ws.h"
#include "loop.h"
#include "mem.h"
#include "wire.h"

static gateway_t *s_gw(const char *url, const char *token, char *err, size_t errlen)
{
    gateway_opts_t o = {.url = url, .token = token};
    return gateway_new(NULL, &o, err, errlen);
}

static void s_check_urls(void)
{
    char err[512];
    gateway_t *gw = s_gw("http://127.0.0.1:8888/", "t", err, sizeof err);
    CHECK(gw != NULL);
    if (gw) {
        CHECK_EQ_STR(gateway_url(gw), "http://127.0.0.1:8888");
        CHECK_EQ_STR(gateway_host(gw), "127.0.0.1");
        CHECK_EQ_INT(gateway_port(gw), 8888);
        CHECK_EQ_STR(gateway_base(gw), "");
        CHECK(!gateway_tls(gw));
        CHECK_EQ_STR(gateway_token(gw), "t");
    }
    gateway_destroy(&gw);
    CHECK(gw == NULL);
    gw = s_gw("https://gw.example.org/user/alice//", NULL, err, sizeof err);
    CHECK(gw != NULL);
    if (gw) {
        CHECK(gateway_tls(gw));
        CHECK_EQ_INT(gateway_port(gw), 443);
        CHECK_EQ_STR(gateway_base(gw), "/user/alice");
        CHECK_EQ_STR(gateway_url(gw), "https://gw.example.org:443/user/alice");
        CHECK(gateway_token(gw) == NULL);
    }
    gateway_destroy(&gw);
    gw = s_gw("http://[::1]:9000", NULL, err, sizeof err);
    CHECK(gw != NULL);
    if (gw) {
        CHECK_EQ_STR(gateway_host(gw), "::1");
        CHECK_EQ_STR(gateway_url(gw), "http://[::1]:9000");
    }
    gateway_destroy(&gw);
    static const char *const bad[] = {
        "ftp://h/", "http://", "http://:80", "http://h:0", "http://h:65536", "http://h:12ab", "http://h:",
        "http://[::1", "http://h/a b", "http://h/a?b=1", "http://h/#x", "http://us er@h/", "http://h\r\nX: y/",
        "127.0.0.1:8888", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        gw = s_gw(bad[i], NULL, err, sizeof err);
        if (gw)
            fprintf(stderr, "accepted bad URL '%s'\n", bad[i]);
        CHECK(gw == NULL);
        CHECK(err[0] != '\0');
        gateway_destroy(&gw);
    }
    /* A token that would split the Authorization header. */
    gw = s_gw("http://h:1", "a\r\nX-Evil: 1", err, sizeof err);
    CHECK(gw == NULL);
    CHECK(strstr(err, "printable ASCII") != NULL);
}

static void s_check_errors(void)
{
    char err[256];
    gateway_t *gw = s_gw("http://127.0.0.1:1", NULL, err, sizeof err);
    CHECK(gw != NULL);
    if (!gw)
        return;
    char *e = gateway_http_error(gw, "cannot start a kernel", 401, "{\"message\": \"nope\"}");
    CHECK_EQ_STR(e, "cannot start a kernel: the gateway at http://127.0.0.1:1 refused the token (HTTP 401 Unauthorized): "
                 "give the right one with --gateway-token or JUPYTER_GATEWAY_AUTH_TOKEN");
    free(e);
    /* Enterprise Gateway's refusal of a user says why; a refused token's 403
     * (Jupyter Server's, EG's) has no reason of its own: the token. */
    e = gateway_http_error(gw, "cannot start a kernel", 403,
                           "{\"reason\": \"User 'root' is not authorized to start kernel 'Python 3 (ipykernel)'. Ensure "
                           "KERNEL_USERNAME is set to an appropriate value and retry the request.\", \"message\": \"\"}");
    CHECK_EQ_STR(e, "cannot start a kernel: the gateway at http://127.0.0.1:1 refused (HTTP 403 Forbidden): User 'root' is "
                 "not authorized to start kernel 'Python 3 (ipykernel)'. Ensure KERNEL_USERNAME is set to an appropriate "
                 "value and retry the request.");
    free(e);
    e = gateway_http_error(gw, "x", 403, "{\"message\": \"'_xsrf' argument missing from POST\", \"reason\": null}");
    CHECK(strstr(e, "refused the token (HTTP 403 Forbidden)") != NULL);
    free(e);
    e = gateway_http_error(gw, "x", 403, "{\"reason\": \"Forbidden\", \"message\": \"Forbidden\"}");
    CHECK(strstr(e, "refused the token (HTTP 403 Forbidden)") != NULL);
    free(e);
    e = gateway_http_error(gw, "x", 401, "{\"reason\": \"Unauthorized\", \"message\": \"\"}");
    CHECK(strstr(e, "refused the token (HTTP 401 Unauthorized)") != NULL);
    free(e);
    e = gateway_http_error(gw, "x", 404, "{\"message\": \"No such kernelspec nosuch\", \"reason\": null}");
    CHECK_EQ_STR(e, "x: the gateway at http://127.0.0.1:1 answered HTTP 404: No such kernelspec nosuch");
    free(e);
    /* Not JSON, a non-string message, a huge message: no crash, bounded. */
    e = gateway_http_error(gw, "x", 500, "<html>oops</html>");
    CHECK_EQ_STR(e, "x: the gateway at http://127.0.0.1:1 answered HTTP 500");
    free(e);
    e = gateway_http_error(gw, "x", 500, "{\"message\": [1]}");
    CHECK_EQ_STR(e, "x: the gateway at http://127.0.0.1:1 answered HTTP 500");
    free(e);
    char *big = xmalloc(100001);
    memset(big, 'm', 100000);
    big[100000] = '\0';
    char *body = xasprintf("{\"message\": \"%s\"}", big);
    e = gateway_http_error(gw, "x", 500, body);
    CHECK(strlen(e) < 400);
    free(e);
    free(body);
    free(big);
    /* A refused connection, synchronously: a sentence, no status. */
    long status = -1;
    char *out = NULL, why[512];
    CHECK_EQ_INT(gateway_request_sync(gw, "GET", "/api/kernelspecs", NULL, 2000, &status, &out, why, sizeof why), -1);
    CHECK(strstr(why, "refused the connection (is it running?)") != NULL);
    CHECK(out == NULL);
    gateway_destroy(&gw);
}

static void s_check_json_messages(void)
{
    wire_msg_t m;
    json_object *j = json_tokener_parse(
        "{\"header\":{\"msg_id\":\"a1\",\"msg_type\":\"stream\",\"session\":\"s\"},\"parent_header\":{\"msg_id\":\"p9\"},"
        "\"metadata\":{},\"content\":{\"name\":\"stdout\",\"text\":\"h\\u00e9\\n\"},\"buffers\":[],\"channel\":\"iopub\"}");
    CHECK_EQ_INT(wire_from_json(j, &m), WIRE_OK);
    CHECK_EQ_STR(m.msg_type, "stream");
    CHECK_EQ_STR(m.msg_id, "a1");
    CHECK_EQ_STR(m.parent_id, "p9");
    const char *t = NULL;
    size_t len = 0;
    CHECK(wire_stream_next(&m, &t, &len));
    CHECK_EQ_INT(len, 4);
    CHECK(t && memcmp(t, "h\xc3\xa9\n", 4) == 0);
    CHECK(!wire_stream_next(&m, &t, &len));
    json_object_put(j); /* the message keeps its own references */
    CHECK_EQ_STR(m.msg_type, "stream");
    wire_msg_free(&m);
    /* An empty parent (a message nobody asked for): no parent id. */
    j = json_tokener_parse("{\"header\":{},\"parent_header\":{},\"content\":{}}");
    CHECK_EQ_INT(wire_from_json(j, &m), WIRE_OK);
    CHECK(m.parent_id == NULL);
    CHECK_EQ_STR(m.msg_type, "");
    CHECK_EQ_STR(m.msg_id, "");
    wire_msg_free(&m);
    json_object_put(j);
    static const char *const bad[] = {
        "[]", "1", "\"x\"", "{}", "{\"header\":{},\"parent_header\":{}}", "{\"header\":[],\"parent_header\":{},\"content\":{}}",
        "{\"header\":{},\"parent_header\":null,\"content\":{}}", "{\"header\":{},\"parent_header\":{},\"content\":\"x\"}",
        "{\"header\":\"h\",\"parent_header\":{},\"content\":{}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = json_tokener_parse(bad[i]);
        memset(&m, 0x5a, sizeof m);
        CHECK_EQ_INT(wire_from_json(j, &m), WIRE_ERR_JSON);
        CHECK(m.header == NULL && m.content == NULL && m.parent == NULL); /* zeroed */
        json_object_put(j);
    }
    CHECK_EQ_INT(wire_from_json(NULL, &m), WIRE_ERR_JSON);
}

static void s_check_json_texts(void)
{
    char ch[WIRE_CHANNEL_MAX];
    wire_msg_t m;
    /* A stream message: its text stays in the frame, decoded in pieces. */
    static const char st[] = "{\"header\": {\"msg_id\":\"a\",\"msg_type\":\"stream\"}, \"parent_header\":{\"msg_id\":\"p\"},"
                             "\"metadata\":{},\"content\":{\"name\":\"stdout\",\"text\":\"x\\ty\\u00e9\\n\"},"
                             "\"buffers\":[],\"channel\":\"iopub\"}";
    CHECK_EQ_INT(wire_from_json_text(st, strlen(st), ch, &m), WIRE_OK);
    CHECK_EQ_STR(ch, "iopub");
    CHECK_EQ_STR(m.msg_type, "stream");
    CHECK_EQ_STR(m.parent_id, "p");
    CHECK(m.stream_raw != NULL && m.stream_raw > st && m.stream_raw < st + sizeof st);
    CHECK_EQ_STR(wire_get_str(m.content, "name"), "stdout");
    const char *t = NULL;
    size_t len = 0;
    CHECK(wire_stream_next(&m, &t, &len));
    CHECK(len == 6 && memcmp(t, "x\ty\xc3\xa9\n", 6) == 0);
    wire_msg_free(&m);
    /* Other messages: the content parsed, nesting and all. */
    static const char ex[] = "{\"channel\":\"shell\",\"content\":{\"status\":\"ok\",\"a\":[1,{\"b\":\"}]\\\"\"}]},"
                             "\"header\":{\"msg_type\":\"execute_reply\"},\"parent_header\":{}}";
    CHECK_EQ_INT(wire_from_json_text(ex, strlen(ex), ch, &m), WIRE_OK);
    CHECK_EQ_STR(ch, "shell");
    CHECK_EQ_STR(wire_get_str(m.content, "status"), "ok");
    CHECK(m.stream_raw == NULL);
    wire_msg_free(&m);
    /* A repeated content: json-c's rule, the last one. */
    static const char dup[] = "{\"header\":{},\"parent_header\":{},\"content\":{\"v\":\"1\"},\"content\":{\"v\":\"2\"},"
                              "\"channel\":\"shell\"}";
    CHECK_EQ_INT(wire_from_json_text(dup, strlen(dup), ch, &m), WIRE_OK);
    CHECK_EQ_STR(wire_get_str(m.content, "v"), "2");
    wire_msg_free(&m);
    /* An escaped spelling of "content" after the plain one: json-c's rule too. */
    static const char esc[] = "{\"header\":{},\"parent_header\":{},\"content\":{\"v\":\"1\"},"
                              "\"\\u0063ontent\":{\"v\":\"2\"},\"channel\":\"shell\"}";
    CHECK_EQ_INT(wire_from_json_text(esc, strlen(esc), ch, &m), WIRE_OK);
    CHECK_EQ_STR(wire_get_str(m.content, "v"), "2");
    wire_msg_free(&m);
    /* Nesting around json-c's depth limit: accepted exactly when json-c
     * accepts the whole text. */
    for (int n = 26; n <= 36; n++) {
        buf_t b;
        buf_init(&b, 0);
        buf_puts(&b, "{\"header\":{},\"parent_header\":{},\"content\":{\"a\":");
        for (int i = 0; i < n; i++)
            buf_putc(&b, '[');
        buf_putc(&b, '1');
        for (int i = 0; i < n; i++)
            buf_putc(&b, ']');
        buf_puts(&b, "},\"channel\":\"shell\"}");
        json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        json_object *whole = json_tokener_parse_ex(tok, b.data, (int)b.len);
        bool want = whole && json_tokener_get_error(tok) == json_tokener_success;
        json_object_put(whole);
        json_tokener_free(tok);
        wire_err_t e = wire_from_json_text(b.data, b.len, ch, &m);
        if ((e == WIRE_OK) != want)
            fprintf(stderr, "depth %d: json-c %s, wire_from_json_text %s\n", n, want ? "accepts" : "refuses",
                    e == WIRE_OK ? "accepts" : "refuses");
        CHECK((e == WIRE_OK) == want);
        wire_msg_free(&m);
        buf_free(&b);
    }
    /* Refused: *out zeroed, nothing leaks (ASan). */
    static const char *const bad[] = {
        "{\"header\":{},\"parent_header\":{},\"content\":{}} x",                /* after the object */
        "{\"header\":{},\"parent_header\":{},\"content\":\"x\"}",            /* content not an object */
        "{\"header\":{\"msg_type\":\"stream\"},\"parent_header\":{},\"content\":{\"text\":\"\xc3\"}}", /* bad UTF-8 */
        "{\"header\":{\"x\":\"\xff\"},\"parent_header\":{},\"content\":{}}", /* bad UTF-8 outside */
        "{\"header\":{},\"parent_header\":{},\"content\":{\"a\":[[[[",       /* unterminated */
        "{\"header\":{},\"content\":{}}",                                       /* no parent */
        "{\"header\":{},\"parent_header\":{},\"content\":{\"a\":tru}}",       /* not JSON */
        "{\"header\":{},\"parent_header\":{},\"content\":{},}",               /* trailing comma */
        "", "{", "[]", "{}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&m, 0x5a, sizeof m);
        wire_err_t e = wire_from_json_text(bad[i], strlen(bad[i]), ch, &m);
        if (e == WIRE_OK)
            fprintf(stderr, "accepted bad message %zu: %s\n", i, bad[i]);
        CHECK(e != WIRE_OK);
        CHECK(m.header == NULL && m.content == NULL && m.stream_raw == NULL);
    }
    /* 200 levels of nesting in content: refused (json-c's depth), no stack blow-up. */
    buf_t deep;
    buf_init(&deep, 0);
    buf_puts(&deep, "{\"header\":{},\"parent_header\":{},\"content\":{\"a\":");
    for (int i = 0; i < 200; i++)
        buf_putc(&deep, '[');
    for (int i = 0; i < 200; i++)
        buf_putc(&deep, ']');
    buf_puts(&deep, "}}");
    CHECK(wire_from_json_text(deep.data, deep.len, ch, &m) != WIRE_OK);
    buf_free(&deep);
    /* Whitespace around the object, as JSON allows. */
    static const char ws[] = " \n{\"header\":{\"msg_type\":\"stream\"},\"parent_header\":{},\"content\":{\"text\":\"t\"},"
                             "\"channel\":\"iopub\"}\r\n ";
    CHECK_EQ_INT(wire_from_json_text(ws, strlen(ws), ch, &m), WIRE_OK);
    CHECK(m.stream_raw != NULL);
    wire_msg_free(&m);
    /* A channel name longer than the buffer: "" (not a channel). */
    static const char lc[] = "{\"header\":{},\"parent_header\":{},\"content\":{},\"channel\":\"iopubiopubiopubiopub\"}";
    CHECK_EQ_INT(wire_from_json_text(lc, strlen(lc), ch, &m), WIRE_OK);
    CHECK_EQ_STR(ch, "");
    wire_msg_free(&m);
}

/* ------------------------------------------------ kernel_ws, a fake peer */

typedef struct {
    int msgs, up, lost, ok, gone;
    char last_type[64];
    kchan_t last_ch;
    char ids[1024];               /* the msg_ids received, in order, each followed by ',' */
} s_seen_t;

static void s_on_msg(void *ud, kchan_t ch, wire_msg_t *m)
{
    s_seen_t *s = ud;
    s->msgs++;
    s->last_ch = ch;
    snprintf(s->last_type, sizeof s->last_type, "%s", m->msg_type);
    size_t n = strlen(s->ids);
    snprintf(s->ids + n, sizeof s->ids - n, "%s,", m->msg_id);
}

static void s_on_event(void *ud, kconn_event_t ev)
{
    s_seen_t *s = ud;
    s->up += ev == KCONN_UP;
    s->lost += ev == KCONN_HB_LOST;
    s->ok += ev == KCONN_HB_OK;
    s->gone += ev == KCONN_GONE;
}

typedef struct {
    loop_t *loop;
    int lfd, port;
} s_peer_t;

static void s_pump(loop_t *loop, int ms)
{
    for (int i = 0; i < ms / 5; i++)
        loop_run_once(loop, 5);
}

/* Accepts kernel_ws's next connection and reads its upgrade request. */
static int s_accept(s_peer_t *p, buf_t *req)
{
    int fd = -1;
    for (int i = 0; i < 600 && fd < 0; i++) {
        fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            loop_run_once(p->loop, 5);
    }
    if (fd < 0)
        return -1;
    /* Each write goes at once: Nagle would hold a second piece for the
     * first one's (delayed) ACK, 40 ms per split. */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    buf_reset(req);
    for (int i = 0; i < 600; i++) {
        char tmp[4096];
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r > 0)
            buf_append(req, tmp, (size_t)r);
        if (req->len && memmem(req->data, req->len, "\r\n\r\n", 4))
            return fd;
        loop_run_once(p->loop, 5);
    }
    close(fd);
    return -1;
}

static void s_send_all(int fd, const void *data, size_t len)
{
    const char *d = data;
    while (len) {
        ssize_t r = send(fd, d, len, MSG_NOSIGNAL);
        if (r < 0 && errno == EAGAIN)
            continue;
        if (r <= 0)
            return;
        d += r;
        len -= (size_t)r;
    }
}

/* An unmasked server frame. */
static void s_frame(int fd, int opcode, const char *payload, size_t len)
{
    unsigned char h[10];
    size_t n = 0;
    h[n++] = (unsigned char)(0x80 | opcode);
    if (len < 126) {
        h[n++] = (unsigned char)len;
    } else {
        h[n++] = 126;
        h[n++] = (unsigned char)(len >> 8);
        h[n++] = (unsigned char)len;
    }
    s_send_all(fd, h, n);
    s_send_all(fd, payload, len);
}

/* The Sec-WebSocket-Accept the request in req asks for (RFC 6455 4.2.2),
 * computed here independently of kernel_ws. */
static void s_accept_of(const buf_t *req, char out[32])
{
    out[0] = '\0';
    const char *k = memmem(req->data, req->len, "\r\nSec-WebSocket-Key: ", 21);
    if (!k)
        return;
    k += 21;
    const char *e = memmem(k, req->len - (size_t)(k - req->data), "\r\n", 2);
    if (!e)
        return;
    zdigest_t *d = zdigest_new();
    zdigest_update(d, (const byte *)k, (size_t)(e - k));
    zdigest_update(d, (const byte *)"258EAFA5-E914-47DA-95CA-C5AB0DC85B11", 36);
    sodium_bin2base64(out, 32, zdigest_data(d), zdigest_size(d), sodium_base64_VARIANT_ORIGINAL);
    zdigest_destroy(&d);
}

/* A 101 that answers req; head_extra goes among its headers. */
static void s_make_101(const buf_t *req, const char *reason, const char *head_extra, buf_t *out)
{
    char acc[32];
    s_accept_of(req, acc);
    buf_printf(out, "HTTP/1.1 101 %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
               reason, acc, head_extra ? head_extra : "");
}

static void s_send_101(int fd, const buf_t *req)
{
    buf_t b;
    buf_init(&b, 0);
    s_make_101(req, "Switching Protocols", NULL, &b);
    s_send_all(fd, b.data, b.len);
    buf_free(&b);
}

static void s_check_ws_peer(void)
{
    s_peer_t p = {.loop = loop_new()};
    p.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(p.lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(p.lfd, 8) == 0 &&
          getsockname(p.lfd, (struct sockaddr *)&a, &al) == 0);
    p.port = ntohs(a.sin_port);
    char url[64], err[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/base", p.port);
    gateway_opts_t go = {.url = url, .token = "tok"};
    gateway_t *gw = gateway_new(p.loop, &go, err, sizeof err);
    CHECK(gw != NULL);
    s_seen_t seen = {0};
    kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-1", s_on_msg, s_on_event, &seen, err, sizeof err);
    CHECK(c != NULL);
    /* Sent before the connection exists: queued. */
    char id[WIRE_ID_LEN + 1];
    CHECK_EQ_INT(kernel_conn_send(c, KCHAN_SHELL, "kernel_info_request", NULL, NULL, id), 0);
    CHECK_EQ_INT(kernel_conn_send(c, KCHAN_IOPUB, "x", NULL, NULL, NULL), -1); /* iopub is receive-only */
    buf_t req;
    buf_init(&req, 0);
    int fd = s_accept(&p, &req);
    CHECK(fd >= 0);
    buf_putc(&req, '\0');
    CHECK(strstr(req.data, "GET /base/api/kernels/kid-1/channels?session_id=") == req.data);
    CHECK(strstr(req.data, "\r\nAuthorization: token tok\r\n") != NULL);
    CHECK(strstr(req.data, "\r\nSec-WebSocket-Version: 13\r\n") != NULL);
    /* The 101 and a first message in one write: the bytes after the headers
     * belong to the WebSocket. */
    static const char good[] = "{\"header\":{\"msg_id\":\"m1\",\"msg_type\":\"status\"},\"parent_header\":{},"
                               "\"metadata\":{},\"content\":{\"execution_state\":\"idle\"},\"channel\":\"iopub\"}";
    s_send_101(fd, &req);
    s_frame(fd, 1, good, strlen(good));
    s_pump(p.loop, 100);
    CHECK_EQ_INT(seen.up, 1);
    CHECK_EQ_INT(seen.msgs, 1);
    CHECK_EQ_INT(seen.last_ch, KCHAN_IOPUB);
    CHECK_EQ_INT(strcmp(seen.last_type, "status"), 0);
    /* The queued request went out, masked, as a text frame. */
    unsigned char fr[4096];
    ssize_t got = recv(fd, fr, sizeof fr, 0);
    CHECK(got > 6 && fr[0] == 0x81 && (fr[1] & 0x80));
    if (got > 8) {
        size_t plen = fr[1] & 0x7f, off = 2;
        if (plen == 126) {
            plen = (size_t)fr[2] << 8 | fr[3];
            off = 4;
        }
        unsigned char *mask = fr + off, *pl = fr + off + 4;
        for (size_t i = 0; i < plen && off + 4 + i < (size_t)got; i++)
            pl[i] ^= mask[i % 4];
        CHECK(memmem(pl, plen, "\"msg_type\":\"kernel_info_request\"", 32) != NULL);
        CHECK(memmem(pl, plen, "\"channel\":\"shell\"", 17) != NULL);
        CHECK(memmem(pl, plen, id, WIRE_ID_LEN) != NULL);
    }
    /* Frames that are not Jupyter messages: dropped and counted, never handed up. */
    static const char *const junk[] = {
        "not json", "[1,2]", "{\"header\":{},\"parent_header\":{},\"content\":{}}", /* no channel */
        "{\"header\":{},\"parent_header\":{},\"content\":{},\"channel\":\"hb\"}",
        "{\"header\":[],\"parent_header\":{},\"content\":{},\"channel\":\"shell\"}",
        "{\"header\":{},\"parent_header\":{},\"content\":{},\"channel\":\"shell\"} trailing",
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        s_frame(fd, 1, junk[i], strlen(junk[i]));
    s_frame(fd, 2, "\x01\x02", 2); /* binary: the v1 subprotocol we did not ask for */
    s_pump(p.loop, 100);
    kconn_stats_t st;
    kernel_conn_stats(c, &st);
    CHECK_EQ_INT(seen.msgs, 1);
    CHECK_EQ_INT(st.dropped, 7);
    CHECK_EQ_INT(st.received, 1);
    char first_session[64] = "";
    const char *q = strstr(req.data, "session_id=");
    if (q)
        snprintf(first_session, sizeof first_session, "%.32s", q + 11);
    /* Invalid UTF-8 in a text frame: wslay fails the connection; it is
     * made again with the same session (the server would replay). */
    static const char bad8[] = "{\"header\":{\"msg_type\":\"\xff\xfe\"},\"parent_header\":{},\"content\":{},"
                               "\"channel\":\"shell\"}";
    s_frame(fd, 1, bad8, strlen(bad8));
    s_pump(p.loop, 50);
    int fd2 = s_accept(&p, &req);
    CHECK(fd2 >= 0);
    buf_putc(&req, '\0');
    CHECK(first_session[0] && strstr(req.data, first_session) != NULL);
    CHECK_EQ_INT(seen.lost, 1);
    CHECK_EQ_INT(seen.msgs, 1);
    close(fd);
    s_send_101(fd2, &req);
    s_pump(p.loop, 50);
    CHECK_EQ_INT(seen.ok, 1);
    CHECK_EQ_INT(seen.up, 2);
    /* A frame announcing 2^40 bytes: refused by the length bound. */
    static const unsigned char huge[] = {0x81, 127, 0, 0, 1, 0, 0, 0, 0, 0, (unsigned char)'{'};
    s_send_all(fd2, huge, sizeof huge);
    s_pump(p.loop, 50);
    int fd3 = s_accept(&p, &req);
    CHECK(fd3 >= 0);
    CHECK_EQ_INT(seen.lost, 2);
    close(fd2);
    /* A close frame from the server: reconnect again. */
    s_send_101(fd3, &req);
    s_pump(p.loop, 50);
    CHECK_EQ_INT(seen.up, 3);
    s_frame(fd3, 8, "\x03\xe8", 2);
    s_pump(p.loop, 50);
    int fd3b = s_accept(&p, &req);
    CHECK(fd3b >= 0);
    close(fd3);
    fd3 = fd3b;
    /* Not HTTP at all: an attempt that failed, tried again (not GONE). */
    static const char ssh[] = "SSH-2.0-OpenSSH\r\n\r\n";
    s_send_all(fd3, ssh, strlen(ssh));
    s_pump(p.loop, 50);
    int fd4 = s_accept(&p, &req);
    CHECK(fd4 >= 0);
    close(fd3);
    CHECK_EQ_INT(seen.gone, 0);
    /* 404 on the upgrade: the kernel is gone, for good. */
    static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    s_send_all(fd4, nf, strlen(nf));
    s_pump(p.loop, 50);
    CHECK_EQ_INT(seen.gone, 1);
    CHECK(c->ops->error && c->ops->error(c) && strstr(c->ops->error(c), "kid-1 is gone from the gateway"));
    CHECK_EQ_INT(kernel_conn_send(c, KCHAN_SHELL, "execute_request", NULL, NULL, NULL), -1);
    close(fd4);
    kernel_conn_destroy(&c);
    /* 403 on the upgrade: the token, said so. */
    seen = (s_seen_t){0};
    c = kernel_ws_new(p.loop, gw, "kid-2", s_on_msg, s_on_event, &seen, err, sizeof err);
    int fd5 = s_accept(&p, &req);
    CHECK(fd5 >= 0);
    static const char fb[] = "HTTP/1.1 403 Forbidden\r\n\r\n";
    s_send_all(fd5, fb, strlen(fb));
    s_pump(p.loop, 50);
    CHECK_EQ_INT(seen.gone, 1);
    CHECK(c->ops->error(c) && strstr(c->ops->error(c), "refused the token (HTTP 403 Forbidden)"));
    close(fd5);
    kernel_conn_destroy(&c);
    buf_free(&req);
    gateway_destroy(&gw);
    close(p.lfd);
    loop_destroy(&p.loop);
}

static int s_listener(int *port);

/* An unmasked server frame, appended to out (16-bit lengths at most). */
static void s_frame_buf(buf_t *out, int opcode, const char *payload, size_t len)
{
    buf_putc(out, (char)(0x80 | opcode));
    if (len < 126) {
        buf_putc(out, (char)len);
    } else {
        buf_putc(out, (char)126);
        buf_putc(out, (char)(len >> 8));
        buf_putc(out, (char)len);
    }
    buf_append(out, payload, len);
}

/* One Jupyter message as Jupyter Server sends it on the WebSocket, with
 * `pad` extra bytes in its content (to reach an exact stream length). */
static void s_jmsg(buf_t *out, const char *id, const char *type, const char *chan, const char *content, size_t pad)
{
    buf_t m;
    buf_init(&m, 0);
    buf_printf(&m,
               "{\"header\": {\"msg_id\": \"%s\", \"msg_type\": \"%s\", \"username\": \"u\", \"session\": "
               "\"9a0c1f2e-77b1\", \"date\": \"2025-01-01T00:00:00.000000Z\", \"version\": \"5.3\"}, "
               "\"msg_id\": \"%s\", \"msg_type\": \"%s\", \"parent_header\": {\"msg_id\": \"p1\", "
               "\"msg_type\": \"execute_request\"}, \"metadata\": {}, \"content\": {%s, \"pad\": \"",
               id, type, id, type, content);
    for (size_t i = 0; i < pad; i++)
        buf_putc(&m, 'x');
    buf_printf(&m, "\"}, \"buffers\": [], \"channel\": \"%s\"}", chan);
    s_frame_buf(out, 1, m.data, m.len);
    buf_free(&m);
}

/* A small idle status "t1" as one frame, with pad bytes in its content. */
static void s_jmin(buf_t *out, size_t pad)
{
    buf_t m;
    buf_init(&m, 0);
    buf_puts(&m, "{\"header\":{\"msg_id\":\"t1\",\"msg_type\":\"status\"},\"parent_header\":{},\"content\":"
                 "{\"execution_state\":\"idle\",\"pad\":\"");
    for (size_t i = 0; i < pad; i++)
        buf_putc(&m, 'x');
    buf_puts(&m, "\"},\"channel\":\"iopub\"}");
    s_frame_buf(out, 1, m.data, m.len);
    buf_free(&m);
}

/* What a Jupyter Server replays right after the 101 when rat-py reconnects
 * with its session: a run's busy status, its input, output (one message
 * over 125 bytes, one over 1 KiB), its reply and the idle status; nine
 * messages, ~4.6 KiB: more than the 4 KiB whose every split is tried. */
static const char *const s_replay_ids = "r1,r2,r3,r4,r5,r6,r7,r8,r9,";
static void s_replay(buf_t *out)
{
    s_jmsg(out, "r1", "status", "iopub", "\"execution_state\": \"busy\"", 0);
    s_jmsg(out, "r2", "execute_input", "iopub", "\"code\": \"for i in range(3): print(i)\", \"execution_count\": 7", 0);
    s_jmsg(out, "r3", "stream", "iopub", "\"name\": \"stdout\", \"text\": \"0\\n1\\n2\\n\"", 0);
    s_jmsg(out, "r4", "stream", "iopub", "\"name\": \"stdout\", \"text\": \"more\\n\"", 1200);
    s_jmsg(out, "r5", "stream", "iopub", "\"name\": \"stderr\", \"text\": \"warn\\n\"", 300);
    s_jmsg(out, "r6", "display_data", "iopub", "\"data\": {\"text/plain\": \"<Figure>\"}, \"transient\": {}", 1000);
    s_jmsg(out, "r7", "execute_result", "iopub", "\"data\": {\"text/plain\": \"42\"}, \"execution_count\": 7", 400);
    s_jmsg(out, "r8", "execute_reply", "shell", "\"status\": \"ok\", \"execution_count\": 7, \"payload\": []", 0);
    s_jmsg(out, "r9", "status", "iopub", "\"execution_state\": \"idle\"", 0);
}

/* Runs the loop until seen has n messages (or a drop), at most ~2 s. */
static void s_pump_msgs(loop_t *loop, s_seen_t *seen, int n)
{
    for (int i = 0; i < 400 && seen->msgs < n && !seen->lost; i++)
        loop_run_once(loop, 5);
}

/* One connection: the upgrade answered with head, then the replayed
 * frames, the whole stream cut after `cut` bytes (0: one write). Checks
 * every message arrived, in order, on a link that stayed up. */
static bool s_one_split(s_peer_t *p, gateway_t *gw, size_t cut, const char *reason, size_t pad_to)
{
    s_seen_t seen = {0};
    char err[256];
    kernel_conn_t *c = kernel_ws_new(p->loop, gw, "kid-s", s_on_msg, s_on_event, &seen, err, sizeof err);
    buf_t req, stream;
    buf_init(&req, 0);
    buf_init(&stream, 0);
    int fd = s_accept(p, &req);
    bool ok = fd >= 0;
    const char *want = s_replay_ids;
    if (ok) {
        s_make_101(&req, reason, NULL, &stream);
        if (pad_to) {
            /* One message, padded so the whole stream is pad_to bytes. */
            size_t head = stream.len;
            buf_t probe;
            buf_init(&probe, 0);
            s_jmin(&probe, 0);
            size_t base = probe.len, pad = pad_to > head + base ? pad_to - head - base : 0;
            if (base < 128 && base + pad >= 128)
                pad -= 2; /* the 16-bit length takes two more bytes */
            s_jmin(&stream, pad);
            buf_free(&probe);
            want = "t1,";
        } else {
            s_replay(&stream);
        }
        if (pad_to && stream.len != pad_to) {
            fprintf(stderr, "stream of %zu bytes, not %zu\n", stream.len, pad_to);
            ok = false;
        }
        if (cut && cut < stream.len) {
            s_send_all(fd, stream.data, cut);
            loop_run_once(p->loop, 50); /* kernel_ws reads the first part alone */
            s_send_all(fd, stream.data + cut, stream.len - cut);
        } else {
            s_send_all(fd, stream.data, stream.len);
        }
        int n = 0;
        for (const char *q = want; *q; q++)
            n += *q == ',';
        s_pump_msgs(p->loop, &seen, n);
        if (strcmp(seen.ids, want) != 0 || seen.up != 1 || seen.lost != 0) {
            fprintf(stderr, "cut at %zu of %zu: got ids '%s' (want '%s'), up %d, lost %d\n", cut, stream.len, seen.ids,
                    want, seen.up, seen.lost);
            ok = false;
        }
        close(fd);
    }
    kernel_conn_destroy(&c);
    buf_free(&req);
    buf_free(&stream);
    return ok;
}

/* The frames that come with the 101 in the same read (Jupyter Server
 * replays a reconnecting session's messages right after it) are never lost
 * nor cut, however the bytes are split across reads: every cut in the
 * first 4 KiB of a recorded stream, and streams of 2^k - 1 bytes in one
 * read (the sizes at which the head used to be measured against a buffer
 * that had just moved). */
static void s_check_ws_splits(void)
{
    s_peer_t p = {.loop = loop_new()};
    p.lfd = s_listener(&p.port);
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", p.port);
    gateway_opts_t go = {.url = url};
    gateway_t *gw = gateway_new(p.loop, &go, err, sizeof err);
    CHECK(gw != NULL);
    int bad = 0;
    for (size_t cut = 0; cut <= 4096 && bad < 5; cut++)
        bad += !s_one_split(&p, gw, cut, "Switching Protocols", 0);
    CHECK_EQ_INT(bad, 0);
    static const size_t totals[] = {255, 511, 1023, 2047, 4095, 8191};
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++)
        CHECK(s_one_split(&p, gw, 0, "", totals[i])); /* an empty reason phrase: room for 255 */
    /* 127 bytes: a short head (an empty reason phrase is allowed) and a PING
     * the client must answer with a PONG of the same payload. */
    s_seen_t seen = {0};
    kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-p", s_on_msg, s_on_event, &seen, err, sizeof err);
    buf_t req, stream;
    buf_init(&req, 0);
    buf_init(&stream, 0);
    int fd = s_accept(&p, &req);
    CHECK(fd >= 0);
    s_make_101(&req, "", NULL, &stream);
    char ping[126];
    size_t plen = 127 - stream.len - 2;
    CHECK(plen <= 125);
    memset(ping, 'p', plen);
    s_frame_buf(&stream, 9, ping, plen);
    CHECK_EQ_INT(stream.len, 127);
    s_send_all(fd, stream.data, stream.len);
    for (int i = 0; i < 40 && !seen.up; i++)
        loop_run_once(p.loop, 5);
    s_pump(p.loop, 30);
    unsigned char fr[256];
    ssize_t got = recv(fd, fr, sizeof fr, MSG_DONTWAIT);
    CHECK(got == (ssize_t)(6 + plen) && fr[0] == 0x8a && fr[1] == (0x80 | plen));
    CHECK_EQ_INT(seen.up, 1);
    CHECK_EQ_INT(seen.lost, 0);
    close(fd);
    kernel_conn_destroy(&c);
    buf_free(&req);
    buf_free(&stream);
    gateway_destroy(&gw);
    close(p.lfd);
    loop_destroy(&p.loop);
}

/* Issue 30, item 6: a server that floods PINGs and never reads: wslay
 * queues a PONG for each, and past the queue's bound (4096 messages) the
 * connection is dropped and made again; memory stays bounded. The peer's
 * receive buffer is small, so the PONGs pile up in wslay's queue, not in
 * the kernel's socket buffers. */
static void s_check_ws_ping_flood(void)
{
    s_peer_t p = {.loop = loop_new()};
    p.lfd = s_listener(&p.port);
    int small = 4096;
    setsockopt(p.lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small); /* inherited by the accepted socket */
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", p.port);
    gateway_opts_t go = {.url = url};
    gateway_t *gw = gateway_new(p.loop, &go, err, sizeof err);
    CHECK(gw != NULL);
    s_seen_t seen = {0};
    kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-f", s_on_msg, s_on_event, &seen, err, sizeof err);
    buf_t req, pings;
    buf_init(&req, 0);
    buf_init(&pings, 0);
    int fd = s_accept(&p, &req);
    CHECK(fd >= 0);
    s_send_101(fd, &req);
    s_pump(p.loop, 20);
    CHECK_EQ_INT(seen.up, 1);
    char payload[125];
    memset(payload, 'f', sizeof payload);
    for (int i = 0; i < 64; i++)
        s_frame_buf(&pings, 9, payload, sizeof payload);
    int sent = 0;
    for (; sent < 200000 && !seen.lost; sent += 64) {
        const char *d = pings.data;
        size_t left = pings.len;
        while (left) { /* our socket is non-blocking; kernel_ws reads as the loop runs */
            ssize_t r = send(fd, d, left, MSG_NOSIGNAL);
            if (r > 0) {
                d += r;
                left -= (size_t)r;
            } else if (r < 0 && errno == EAGAIN) {
                loop_run_once(p.loop, 1);
                if (seen.lost)
                    break;
            } else {
                break;
            }
        }
        loop_run_once(p.loop, 0);
    }
    fprintf(stderr, "dropped after %d PINGs\n", sent);
    CHECK_EQ_INT(seen.lost, 1);
    CHECK(sent < 100000);
    /* Made again, as for any lost link. */
    int fd2 = s_accept(&p, &req);
    CHECK(fd2 >= 0);
    if (fd2 >= 0)
        close(fd2);
    close(fd);
    kernel_conn_destroy(&c);
    buf_free(&req);
    buf_free(&pings);
    gateway_destroy(&gw);
    close(p.lfd);
    loop_destroy(&p.loop);
}

/* RFC 6455 4.1: a client fails the connection unless the 101 says Upgrade:
 * websocket and Connection: Upgrade, and answers its key in
 * Sec-WebSocket-Accept; an extension or subprotocol it did not offer fails
 * it too. Such a 101 is an attempt that failed (tried again), never an open
 * link. Header names and the tokens are case-insensitive. */
static void s_check_ws_handshake_rules(void)
{
    s_peer_t p = {.loop = loop_new()};
    p.lfd = s_listener(&p.port);
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", p.port);
    gateway_opts_t go = {.url = url};
    gateway_t *gw = gateway_new(p.loop, &go, err, sizeof err);
    CHECK(gw != NULL);
    static const struct {
        const char *head; /* "%s": the right accept */
        bool ok;
    } cases[] = {
        {"HTTP/1.1 101 Switching Protocols\r\nupgrade: WebSocket\r\nCONNECTION: keep-alive, Upgrade\r\n"
         "sec-websocket-accept: %s\r\nServer: TornadoServer/6.2\r\n\r\n", true},
        {"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", false},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
         false},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: %s\r\n\r\n", false},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: x%s\r\n\r\n", false},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n%s", false},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n", false},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: v1.kernel.websocket.jupyter.org\r\n\r\n", false},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Accept: %s\r\n\r\n", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s_seen_t seen = {0};
        kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-h", s_on_msg, s_on_event, &seen, err, sizeof err);
        buf_t req, head;
        buf_init(&req, 0);
        buf_init(&head, 0);
        int fd = s_accept(&p, &req);
        CHECK(fd >= 0);
        char acc[32];
        s_accept_of(&req, acc);
        buf_printf(&head, cases[i].head, acc, acc);
        /* Split inside the final CRLF CRLF: the end of the head is found
         * across two reads. */
        s_send_all(fd, head.data, head.len - 2);
        loop_run_once(p.loop, 20);
        s_send_all(fd, head.data + head.len - 2, 2);
        s_pump(p.loop, 30);
        if (seen.up != (cases[i].ok ? 1 : 0))
            fprintf(stderr, "case %zu: up %d\n", i, seen.up);
        CHECK_EQ_INT(seen.up, cases[i].ok ? 1 : 0);
        CHECK_EQ_INT(seen.gone, 0);
        if (!cases[i].ok) {
            int again = s_accept(&p, &req); /* failed, so tried again */
            CHECK(again >= 0);
            if (again >= 0)
                close(again);
        }
        close(fd);
        kernel_conn_destroy(&c);
        buf_free(&req);
        buf_free(&head);
    }
    gateway_destroy(&gw);
    close(p.lfd);
    loop_destroy(&p.loop);
}

/* A listening socket nobody accepts from: connections complete (the
 * backlog) and then nothing answers. */
static int s_listener(int *port)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 8) == 0 &&
          getsockname(lfd, (struct sockaddr *)&a, &al) == 0);
    *port = ntohs(a.sin_port);
    return lfd;
}

/* Sends 1 MiB execute_requests while the link is down until one is refused;
 * returns how many were taken. */
static int s_fill_queue(kernel_conn_t *c, const char *content)
{
    int n = 0;
    while (n < 100 && kernel_conn_send(c, KCHAN_SHELL, "execute_request", content, NULL, NULL) == 0)
        n++;
    return n;
}

/* While the WebSocket is down, sends are queued up to a count and a byte
 * budget; past either the send is refused (-1, the caller fails the run),
 * never taken and dropped later. */
static void s_check_ws_queue_bounds(void)
{
    s_peer_t p = {.loop = loop_new()};
    p.lfd = s_listener(&p.port);
    char url[64], err[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", p.port);
    gateway_opts_t go = {.url = url};
    gateway_t *gw = gateway_new(p.loop, &go, err, sizeof err);
    CHECK(gw != NULL);
    s_seen_t seen = {0};
    /* The byte budget: 64 MiB, so 63 messages of 1 MiB of code and their
     * envelopes (~300 bytes each) fit and the 64th does not. */
    kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-q", s_on_msg, s_on_event, &seen, err, sizeof err);
    size_t big = (size_t)1 << 20;
    char *content = xmalloc(big + 32);
    memcpy(content, "{\"code\":\"", 9);
    memset(content + 9, 'x', big);
    memcpy(content + 9 + big, "\"}", 3);
    CHECK_EQ_INT(s_fill_queue(c, content), 63);
    /* Refused by bytes, not shut: a small one still fits, and the link
     * being down is not the kernel being gone. */
    CHECK_EQ_INT(kernel_conn_send(c, KCHAN_SHELL, "kernel_info_request", NULL, NULL, NULL), 0);
    CHECK_EQ_INT(kernel_conn_send(c, KCHAN_SHELL, "execute_request", content, NULL, NULL), -1);
    kconn_stats_t st;
    kernel_conn_stats(c, &st);
    CHECK_EQ_INT(st.sent, 64);
    CHECK_EQ_INT(seen.gone, 0);
    /* The link opens: the queue goes to the socket and its budget is free
     * again. The peer then drops the connection without reading: while
     * kernel_ws reconnects, the budget is a whole 64 MiB again. */
    buf_t req;
    buf_init(&req, 0);
    int fd = s_accept(&p, &req);
    CHECK(fd >= 0);
    s_send_101(fd, &req);
    s_pump(p.loop, 50);
    CHECK_EQ_INT(seen.up, 1);
    /* Open, and the server reads nothing: what waits in wslay's queue is
     * bounded the same way (it used to take every send). */
    int taken = s_fill_queue(c, content);
    CHECK(taken < 64);
    CHECK_EQ_INT(seen.gone, 0);
    close(fd);
    s_pump(p.loop, 50);
    CHECK_EQ_INT(seen.lost, 1);
    CHECK_EQ_INT(s_fill_queue(c, content), 63);
    kernel_conn_destroy(&c); /* frees the queue (ASan) */
    /* The count: 4096 small messages, then refused. */
    seen = (s_seen_t){0};
    c = kernel_ws_new(p.loop, gw, "kid-q2", s_on_msg, s_on_event, &seen, err, sizeof err);
    int n = 0;
    while (n < 5000 && kernel_conn_send(c, KCHAN_SHELL, "kernel_info_request", NULL, NULL, NULL) == 0)
        n++;
    CHECK_EQ_INT(n, 4096);
    kernel_conn_destroy(&c);
    free(content);
    buf_free(&req);
    gateway_destroy(&gw);
    close(p.lfd);
    loop_destroy(&p.loop);
}

static int s_done_calls, s_freed;

static void s_req_done(void *ud, long status, const char *body, size_t len, const char *err)
{
    s_done_calls++;
    free(ud);
}

static void s_req_free_ud(void *ud)
{
    s_freed++;
    free(ud);
}

/* A request nobody tracks gives its ud to the request: freed once, by
 * gateway_cancel or gateway_destroy when done is never called (the
 * interrupt's description used to leak when rat-py exited with the
 * interrupt in flight). */
static void s_check_request_ud(void)
{
    loop_t *loop = loop_new();
    int port;
    int lfd = s_listener(&port);
    char url[64], err[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    gateway_opts_t go = {.url = url};
    gateway_t *gw = gateway_new(loop, &go, err, sizeof err);
    CHECK(gw != NULL);
    s_done_calls = s_freed = 0;
    gateway_req_t *r1 = gateway_request(gw, "POST", "/api/kernels/k/interrupt", "{}", 30000, s_req_done,
                                        xstrdup("interrupt 1"));
    gateway_req_t *r2 = gateway_request(gw, "POST", "/api/kernels/k/interrupt", "{}", 30000, s_req_done,
                                        xstrdup("interrupt 2"));
    gateway_req_t *r3 = gateway_request(gw, "POST", "/api/kernels/k/interrupt", "{}", 30000, s_req_done,
                                        xstrdup("interrupt 3"));
    CHECK(r1 && r2 && r3);
    gateway_request_free_ud(r1, s_req_free_ud);
    gateway_request_free_ud(r2, s_req_free_ud);
    gateway_request_free_ud(r3, s_req_free_ud);
    for (int i = 0; i < 20; i++) /* in flight: connected, the request written, no answer */
        loop_run_once(loop, 5);
    gateway_cancel(gw, &r1);
    CHECK(r1 == NULL);
    CHECK_EQ_INT(s_freed, 1);
    gateway_destroy(&gw);
    CHECK_EQ_INT(s_freed, 3);
    CHECK_EQ_INT(s_done_calls, 0);
    close(lfd);
    loop_destroy(&loop);
}

/* The start request's body: the kernelspec, and the env Enterprise Gateway
 * reads KERNEL_USERNAME from: KERNEL_* and JUPYTER_GATEWAY_ALLOWED_ENVS's
 * names, nothing else, bounded, UTF-8 only. */
static void s_check_start_body(void)
{
    char *envp[] = {"PATH=/usr/bin", "KERNEL_USERNAME=alice", "HOME=/root", "KERNEL_=x", "KERNEL_WORKING_DIR=/w",
                    "JUPYTER_GATEWAY_ALLOWED_ENVS=LANG,TZ", "TZ=UTC", "LANGUAGE=fr", "KERNEL_BAD=\xff", "=KERNEL_X", NULL};
    char *b = gateway_kernel_start_body("python3", envp);
    CHECK_EQ_STR(b, "{\"name\":\"python3\",\"env\":{\"KERNEL_USERNAME\":\"alice\",\"KERNEL_WORKING_DIR\":\"\\/w\",\"TZ\":\"UTC\"}}");
    free(b);
    char *none[] = {NULL};
    b = gateway_kernel_start_body("ir", none);
    CHECK_EQ_STR(b, "{\"name\":\"ir\",\"env\":{}}");
    free(b);
    /* Past GATEWAY_ENV_MAX variables: the rest are left out. */
    char **many = xcalloc(GATEWAY_ENV_MAX + 11, sizeof *many);
    for (int i = 0; i < GATEWAY_ENV_MAX + 10; i++)
        many[i] = xasprintf("KERNEL_V%d=%d", i, i);
    b = gateway_kernel_start_body("python3", many);
    json_object *j = json_tokener_parse(b), *env = NULL;
    CHECK(j && json_object_object_get_ex(j, "env", &env));
    CHECK_EQ_INT(env ? json_object_object_length(env) : -1, GATEWAY_ENV_MAX);
    json_object_put(j);
    free(b);
    for (int i = 0; i < GATEWAY_ENV_MAX + 10; i++)
        free(many[i]);
    free(many);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    RUN_CASE(s_check_urls);
    RUN_CASE(s_check_errors);
    RUN_CASE(s_check_start_body);
    RUN_CASE(s_check_json_messages);
    RUN_CASE(s_check_json_texts);
    RUN_CASE(s_check_ws_peer);
    RUN_CASE(s_check_ws_handshake_rules);
    RUN_CASE(s_check_ws_splits);
    RUN_CASE(s_check_ws_ping_flood);
    RUN_CASE(s_check_ws_queue_bounds);
    RUN_CASE(s_check_request_ud);
    return check_report("test_gateway");
}
