/* gw_peer: a fake Jupyter Server WebSocket peer on loopback (gw_peer.h). */
#define CHECK_HELPER
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <czmq.h>
#include <sodium.h>

#include "check.h"
#include "gw_peer.h"

void gwpeer_on_msg(void *ud, kchan_t ch, wire_msg_t *m)
{
    gwpeer_seen_t *s = ud;
    s->msgs++;
    s->last_ch = ch;
    snprintf(s->last_type, sizeof s->last_type, "%s", m->msg_type);
    size_t n = strlen(s->ids);
    snprintf(s->ids + n, sizeof s->ids - n, "%s,", m->msg_id);
}

void gwpeer_on_event(void *ud, kconn_event_t ev)
{
    gwpeer_seen_t *s = ud;
    s->up += ev == KCONN_UP;
    s->lost += ev == KCONN_HB_LOST;
    s->ok += ev == KCONN_HB_OK;
    s->gone += ev == KCONN_GONE;
}

void gwpeer_pump(loop_t *loop, int ms)
{
    for (int i = 0; i < ms / 5; i++)
        loop_run_once(loop, 5);
}

/* Accepts kernel_ws's next connection and reads its upgrade request. */
int gwpeer_accept(gwpeer_t *p, buf_t *req)
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

void gwpeer_send_all(int fd, const void *data, size_t len)
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
void gwpeer_frame(int fd, int opcode, const char *payload, size_t len)
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
    gwpeer_send_all(fd, h, n);
    gwpeer_send_all(fd, payload, len);
}

/* The Sec-WebSocket-Accept the request in req asks for (RFC 6455 4.2.2),
 * computed here independently of kernel_ws. */
void gwpeer_accept_of(const buf_t *req, char out[32])
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
void gwpeer_make_101(const buf_t *req, const char *reason, const char *head_extra, buf_t *out)
{
    char acc[32];
    gwpeer_accept_of(req, acc);
    buf_printf(out, "HTTP/1.1 101 %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
               reason, acc, head_extra ? head_extra : "");
}

void gwpeer_send_101(int fd, const buf_t *req)
{
    buf_t b;
    buf_init(&b, 0);
    gwpeer_make_101(req, "Switching Protocols", NULL, &b);
    gwpeer_send_all(fd, b.data, b.len);
    buf_free(&b);
}

/* An unmasked server frame, appended to out (16-bit lengths at most). */
void gwpeer_frame_buf(buf_t *out, int opcode, const char *payload, size_t len)
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

/* A listening socket nobody accepts from: connections complete (the
 * backlog) and then nothing answers. */
int gwpeer_listener(int *port)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 8) == 0 &&
          getsockname(lfd, (struct sockaddr *)&a, &al) == 0);
    *port = ntohs(a.sin_port);
    return lfd;
}
