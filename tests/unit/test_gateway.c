/* Unit tests: what the gateway path takes from outside before anything
 * trusts it: the --gateway URL (gateway_new), the server's error bodies
 * (gateway_http_error), and WebSocket messages (wire_from_json and wire_from_json_text: the
 * checks that stand in for a signature on the JSON form); a request's ud and
 * the start request's body. kernel_ws against a fake peer is
 * test_gateway_ws.c's and test_gateway_ws_frames.c's. The real server is
 * tests/integration/gateway.test.mjs's. */
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
#include "gw_peer.h"
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
    int lfd = gwpeer_listener(&port);
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
    RUN_CASE(s_check_request_ud);
    return check_report("test_gateway");
}
