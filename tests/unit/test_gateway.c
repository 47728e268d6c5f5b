/* Unit tests: what the gateway path takes from outside before anything
 * trusts it: the --gateway URL (gateway_new), the server's error bodies
 * (gateway_http_error), and WebSocket messages (wire_from_json: the
 * checks that stand in for a signature on the JSON form). The real server
 * is tests/integration/gateway.test.mjs's. */
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "check.h"
#include "gateway.h"
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

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    RUN_CASE(s_check_urls);
    RUN_CASE(s_check_errors);
    RUN_CASE(s_check_json_messages);
    return check_report("test_gateway");
}
