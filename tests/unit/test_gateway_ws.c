/* Unit tests: kernel_ws against a fake peer (gw_peer.h) for what a real
 * Jupyter Server never sends: broken upgrades, the RFC 6455 checks of the
 * 101, frames that are not Jupyter messages, absurd lengths, reconnects, a
 * peer that floods PINGs and reads nothing, and the send queue's bounds. How
 * frames that arrive with the 101 or split across reads are taken:
 * test_gateway_ws_frames.c. The real server is
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

static void s_check_ws_peer(void)
{
    gwpeer_t p = {.loop = loop_new()};
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
    gwpeer_seen_t seen = {0};
    kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-1", gwpeer_on_msg, gwpeer_on_event, &seen, err, sizeof err);
    CHECK(c != NULL);
    /* Sent before the connection exists: queued. */
    char id[WIRE_ID_LEN + 1];
    CHECK_EQ_INT(kernel_conn_send(c, KCHAN_SHELL, "kernel_info_request", NULL, NULL, id), 0);
    CHECK_EQ_INT(kernel_conn_send(c, KCHAN_IOPUB, "x", NULL, NULL, NULL), -1); /* iopub is receive-only */
    buf_t req;
    buf_init(&req, 0);
    int fd = gwpeer_accept(&p, &req);
    CHECK(fd >= 0);
    buf_putc(&req, '\0');
    CHECK(strstr(req.data, "GET /base/api/kernels/kid-1/channels?session_id=") == req.data);
    CHECK(strstr(req.data, "\r\nAuthorization: token tok\r\n") != NULL);
    CHECK(strstr(req.data, "\r\nSec-WebSocket-Version: 13\r\n") != NULL);
    /* The 101 and a first message in one write: the bytes after the headers
     * belong to the WebSocket. */
    static const char good[] = "{\"header\":{\"msg_id\":\"m1\",\"msg_type\":\"status\"},\"parent_header\":{},"
                               "\"metadata\":{},\"content\":{\"execution_state\":\"idle\"},\"channel\":\"iopub\"}";
    gwpeer_send_101(fd, &req);
    gwpeer_frame(fd, 1, good, strlen(good));
    gwpeer_pump(p.loop, 100);
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
        gwpeer_frame(fd, 1, junk[i], strlen(junk[i]));
    gwpeer_frame(fd, 2, "\x01\x02", 2); /* binary: the v1 subprotocol we did not ask for */
    gwpeer_pump(p.loop, 100);
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
    gwpeer_frame(fd, 1, bad8, strlen(bad8));
    gwpeer_pump(p.loop, 50);
    int fd2 = gwpeer_accept(&p, &req);
    CHECK(fd2 >= 0);
    buf_putc(&req, '\0');
    CHECK(first_session[0] && strstr(req.data, first_session) != NULL);
    CHECK_EQ_INT(seen.lost, 1);
    CHECK_EQ_INT(seen.msgs, 1);
    close(fd);
    gwpeer_send_101(fd2, &req);
    gwpeer_pump(p.loop, 50);
    CHECK_EQ_INT(seen.ok, 1);
    CHECK_EQ_INT(seen.up, 2);
    /* A frame announcing 2^40 bytes: refused by the length bound. */
    static const unsigned char huge[] = {0x81, 127, 0, 0, 1, 0, 0, 0, 0, 0, (unsigned char)'{'};
    gwpeer_send_all(fd2, huge, sizeof huge);
    gwpeer_pump(p.loop, 50);
    int fd3 = gwpeer_accept(&p, &req);
    CHECK(fd3 >= 0);
    CHECK_EQ_INT(seen.lost, 2);
    close(fd2);
    /* A close frame from the server: reconnect again. */
    gwpeer_send_101(fd3, &req);
    gwpeer_pump(p.loop, 50);
    CHECK_EQ_INT(seen.up, 3);
    gwpeer_frame(fd3, 8, "\x03\xe8", 2);
    gwpeer_pump(p.loop, 50);
    int fd3b = gwpeer_accept(&p, &req);
    CHECK(fd3b >= 0);
    close(fd3);
    fd3 = fd3b;
    /* Not HTTP at all: an attempt that failed, tried again (not GONE). */
    static const char ssh[] = "SSH-2.0-OpenSSH\r\n\r\n";
    gwpeer_send_all(fd3, ssh, strlen(ssh));
    gwpeer_pump(p.loop, 50);
    int fd4 = gwpeer_accept(&p, &req);
    CHECK(fd4 >= 0);
    close(fd3);
    CHECK_EQ_INT(seen.gone, 0);
    /* 404 on the upgrade: the kernel is gone, for good. */
    static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    gwpeer_send_all(fd4, nf, strlen(nf));
    gwpeer_pump(p.loop, 50);
    CHECK_EQ_INT(seen.gone, 1);
    CHECK(c->ops->error && c->ops->error(c) && strstr(c->ops->error(c), "kid-1 is gone from the gateway"));
    CHECK_EQ_INT(kernel_conn_send(c, KCHAN_SHELL, "execute_request", NULL, NULL, NULL), -1);
    close(fd4);
    kernel_conn_destroy(&c);
    /* 403 on the upgrade: the token, said so. */
    seen = (gwpeer_seen_t){0};
    c = kernel_ws_new(p.loop, gw, "kid-2", gwpeer_on_msg, gwpeer_on_event, &seen, err, sizeof err);
    int fd5 = gwpeer_accept(&p, &req);
    CHECK(fd5 >= 0);
    static const char fb[] = "HTTP/1.1 403 Forbidden\r\n\r\n";
    gwpeer_send_all(fd5, fb, strlen(fb));
    gwpeer_pump(p.loop, 50);
    CHECK_EQ_INT(seen.gone, 1);
    CHECK(c->ops->error(c) && strstr(c->ops->error(c), "refused the token (HTTP 403 Forbidden)"));
    close(fd5);
    kernel_conn_destroy(&c);
    buf_free(&req);
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
    gwpeer_t p = {.loop = loop_new()};
    p.lfd = gwpeer_listener(&p.port);
    int small = 4096;
    setsockopt(p.lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small); /* inherited by the accepted socket */
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", p.port);
    gateway_opts_t go = {.url = url};
    gateway_t *gw = gateway_new(p.loop, &go, err, sizeof err);
    CHECK(gw != NULL);
    gwpeer_seen_t seen = {0};
    kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-f", gwpeer_on_msg, gwpeer_on_event, &seen, err, sizeof err);
    buf_t req, pings;
    buf_init(&req, 0);
    buf_init(&pings, 0);
    int fd = gwpeer_accept(&p, &req);
    CHECK(fd >= 0);
    gwpeer_send_101(fd, &req);
    gwpeer_pump(p.loop, 20);
    CHECK_EQ_INT(seen.up, 1);
    char payload[125];
    memset(payload, 'f', sizeof payload);
    for (int i = 0; i < 64; i++)
        gwpeer_frame_buf(&pings, 9, payload, sizeof payload);
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
    int fd2 = gwpeer_accept(&p, &req);
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
    gwpeer_t p = {.loop = loop_new()};
    p.lfd = gwpeer_listener(&p.port);
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
        gwpeer_seen_t seen = {0};
        kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-h", gwpeer_on_msg, gwpeer_on_event, &seen, err, sizeof err);
        buf_t req, head;
        buf_init(&req, 0);
        buf_init(&head, 0);
        int fd = gwpeer_accept(&p, &req);
        CHECK(fd >= 0);
        char acc[32];
        gwpeer_accept_of(&req, acc);
        buf_printf(&head, cases[i].head, acc, acc);
        /* Split inside the final CRLF CRLF: the end of the head is found
         * across two reads. */
        gwpeer_send_all(fd, head.data, head.len - 2);
        loop_run_once(p.loop, 20);
        gwpeer_send_all(fd, head.data + head.len - 2, 2);
        gwpeer_pump(p.loop, 30);
        if (seen.up != (cases[i].ok ? 1 : 0))
            fprintf(stderr, "case %zu: up %d\n", i, seen.up);
        CHECK_EQ_INT(seen.up, cases[i].ok ? 1 : 0);
        CHECK_EQ_INT(seen.gone, 0);
        if (!cases[i].ok) {
            int again = gwpeer_accept(&p, &req); /* failed, so tried again */
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
    gwpeer_t p = {.loop = loop_new()};
    p.lfd = gwpeer_listener(&p.port);
    char url[64], err[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", p.port);
    gateway_opts_t go = {.url = url};
    gateway_t *gw = gateway_new(p.loop, &go, err, sizeof err);
    CHECK(gw != NULL);
    gwpeer_seen_t seen = {0};
    /* The byte budget: 64 MiB, so 63 messages of 1 MiB of code and their
     * envelopes (~300 bytes each) fit and the 64th does not. */
    kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-q", gwpeer_on_msg, gwpeer_on_event, &seen, err, sizeof err);
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
    int fd = gwpeer_accept(&p, &req);
    CHECK(fd >= 0);
    gwpeer_send_101(fd, &req);
    gwpeer_pump(p.loop, 50);
    CHECK_EQ_INT(seen.up, 1);
    /* Open, and the server reads nothing: what waits in wslay's queue is
     * bounded the same way (it used to take every send). */
    int taken = s_fill_queue(c, content);
    CHECK(taken < 64);
    CHECK_EQ_INT(seen.gone, 0);
    close(fd);
    gwpeer_pump(p.loop, 50);
    CHECK_EQ_INT(seen.lost, 1);
    CHECK_EQ_INT(s_fill_queue(c, content), 63);
    kernel_conn_destroy(&c); /* frees the queue (ASan) */
    /* The count: 4096 small messages, then refused. */
    seen = (gwpeer_seen_t){0};
    c = kernel_ws_new(p.loop, gw, "kid-q2", gwpeer_on_msg, gwpeer_on_event, &seen, err, sizeof err);
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

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    RUN_CASE(s_check_ws_peer);
    RUN_CASE(s_check_ws_handshake_rules);
    RUN_CASE(s_check_ws_ping_flood);
    RUN_CASE(s_check_ws_queue_bounds);
    return check_report("test_gateway_ws");
}
