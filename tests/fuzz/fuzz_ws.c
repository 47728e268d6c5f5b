/* fuzz_ws: what a gateway sends on a kernel's WebSocket, through the real
 * kernel_ws: the upgrade response (the handshake reader and its RFC 6455
 * checks), then the frames (libwslay) and the Jupyter messages in them.
 *
 * Made once and kept across inputs: the loop, a listening socket on
 * 127.0.0.1 that plays the gateway, and a gateway_t pointing at it. Each
 * input is played twice, each time on a new kernel_ws connection: the
 * harness accepts it, reads the upgrade request, and writes the stream, once
 * in one write and once cut where the input says, the loop running between
 * the pieces so each is read on its own.
 *
 * The input: byte 0 holds the number of cuts (low 3 bits); then two bytes
 * per cut (little-endian offsets into the stream, taken modulo its length,
 * sorted); the rest is the stream. In its head (up to the first empty
 * line), "@ACCEPT@" becomes the Sec-WebSocket-Accept the connection's key
 * asks for (the key is random).
 *
 * Checked: the connection comes up only when the stream holds the right
 * accept value (RFC 6455 4.1); the outcome does not depend on how the bytes
 * were cut across reads (the same messages, in the same order, the same
 * link events): frames read with the 101 used to be lost when the head
 * ended where the buffer had just grown; ASan/UBSan and no leaks across
 * inputs. Before a piece follows, and before the peer closes, kernel_ws
 * has read everything sent so far (its socket's own counters say so), so
 * the machine's load cannot make the two plays differ. Each peer socket is
 * closed with a reset after the input, so neither side collects TIME_WAIT
 * sockets while fuzzing. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (glibc's lacks it) */
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <czmq.h>
#include <sodium.h>

#include "buf.h"
#include "fuzz_check.h"
#include "gateway.h"
#include "kernel_ws.h"
#include "log.h"
#include "loop.h"

#define MAX_CUTS 7
#define STREAM_MAX (256u << 10)

typedef struct {
    char ids[2048];       /* msg_type/msg_id of each message, in order */
    int msgs, up, lost, ok, gone;
} s_seen_t;

static loop_t *s_loop;
static gateway_t *s_gw;
static int s_lfd = -1;

static void s_on_msg(void *ud, kchan_t ch, wire_msg_t *m)
{
    s_seen_t *s = ud;
    s->msgs++;
    size_t n = strlen(s->ids);
    snprintf(s->ids + n, sizeof s->ids - n, "%d:%s/%s,", (int)ch, m->msg_type ? m->msg_type : "",
             m->msg_id ? m->msg_id : "");
}

static void s_on_event(void *ud, kconn_event_t ev)
{
    s_seen_t *s = ud;
    s->up += ev == KCONN_UP;
    s->lost += ev == KCONN_HB_LOST;
    s->ok += ev == KCONN_HB_OK;
    s->gone += ev == KCONN_GONE;
}

static void s_init(void)
{
    if (s_loop)
        return;
    log_set_level(LOG_LEVEL_OFF);
    if (sodium_init() < 0)
        abort();
    s_loop = loop_new();
    s_lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(s_lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(s_lfd, 64) < 0 ||
        getsockname(s_lfd, (struct sockaddr *)&a, &al) < 0)
        abort();
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    gateway_opts_t go = {.url = url, .token = "fuzz"};
    s_gw = gateway_new(s_loop, &go, err, sizeof err);
    if (!s_gw) {
        fprintf(stderr, "fuzz_ws: %s\n", err);
        abort();
    }
}

/* Closes fd with a reset: no TIME_WAIT on either side. */
static void s_abort(int fd)
{
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

/* Connections kernel_ws made again after a failure, never answered. */
static void s_drain_backlog(void)
{
    int fd;
    while ((fd = accept4(s_lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
        s_abort(fd);
}

/* Writes what the socket takes, running the loop while it is full; false
 * when the peer is gone or stays full. */
static bool s_write(int fd, const char *p, size_t len)
{
    for (int spins = 0; len && spins < 200;) {
        ssize_t r = send(fd, p, len, MSG_NOSIGNAL);
        if (r > 0) {
            p += r;
            len -= (size_t)r;
            continue;
        }
        if (r < 0 && errno != EAGAIN && errno != EINTR)
            return false;
        loop_run_once(s_loop, 5);
        spins++;
    }
    return len == 0;
}

/* kernel_ws's end of the connection whose other end is peer: the socket
 * of this process whose address is peer's remote one; -1 when there is
 * none (kernel_ws closed it). */
static int s_client_end(int peer, int hint)
{
    struct sockaddr_in pa, a;
    socklen_t l = sizeof pa;
    if (getpeername(peer, (struct sockaddr *)&pa, &l) < 0)
        return -1;
    for (int fd = hint >= 0 ? hint : 3; fd < 4096; fd = hint >= 0 ? 4096 : fd + 1) {
        socklen_t al = sizeof a;
        if (fd != peer && getsockname(fd, (struct sockaddr *)&a, &al) == 0 && a.sin_family == AF_INET &&
            a.sin_port == pa.sin_port && a.sin_addr.s_addr == pa.sin_addr.s_addr)
            return fd;
    }
    return -1;
}

/* Runs the loop until kernel_ws has read all `written` bytes the peer sent
 * (its socket received them and holds none unread) or has closed the
 * connection. Cut or not, it has then seen the same bytes: the outcomes are
 * comparable whatever the machine's load did to the timing. */
static void s_wait_read(int peer, int cfd, uint64_t written)
{
    for (int i = 0; i < 2000; i++) {
        if (s_client_end(peer, cfd) < 0)
            return;
        struct tcp_info ti;
        socklen_t tl = sizeof ti;
        int inq = 0;
        memset(&ti, 0, sizeof ti);
        if (getsockopt(cfd, IPPROTO_TCP, TCP_INFO, &ti, &tl) < 0 || ioctl(cfd, SIOCINQ, &inq) < 0)
            return;
        if (ti.tcpi_bytes_received >= written && inq == 0)
            return;
        loop_run_once(s_loop, 1);
    }
}

static void s_accept_of(const char *req, size_t len, char out[32])
{
    out[0] = '\0';
    const char *k = memmem(req, len, "\r\nSec-WebSocket-Key: ", 21);
    const char *e = k ? memmem(k + 21, len - (size_t)(k + 21 - req), "\r\n", 2) : NULL;
    if (!e)
        return;
    zdigest_t *d = zdigest_new();
    zdigest_update(d, (const byte *)k + 21, (size_t)(e - k - 21));
    zdigest_update(d, (const byte *)"258EAFA5-E914-47DA-95CA-C5AB0DC85B11", 36);
    sodium_bin2base64(out, 32, zdigest_data(d), zdigest_size(d), sodium_base64_VARIANT_ORIGINAL);
    zdigest_destroy(&d);
}

/* One connection fed `raw` (with @ACCEPT@ substituted) in the pieces that
 * the cuts make. Returns false when the harness itself could not play it
 * (no connection, request not read). */
static bool s_play(const uint8_t *raw, size_t len, const size_t *cuts, size_t ncuts, s_seen_t *seen,
                   bool *had_accept)
{
    memset(seen, 0, sizeof *seen);
    char err[256];
    kernel_conn_t *c = kernel_ws_new(s_loop, s_gw, "fuzz-kernel", s_on_msg, s_on_event, seen, err, sizeof err);
    int fd = -1;
    for (int i = 0; i < 200 && fd < 0; i++) {
        fd = accept4(s_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            loop_run_once(s_loop, 2);
    }
    char req[4096];
    size_t rlen = 0;
    for (int i = 0; fd >= 0 && i < 200 && !memmem(req, rlen, "\r\n\r\n", 4); i++) {
        ssize_t r = recv(fd, req + rlen, sizeof req - rlen, 0);
        if (r > 0)
            rlen += (size_t)r;
        else
            loop_run_once(s_loop, 2);
    }
    bool played = fd >= 0 && memmem(req, rlen, "\r\n\r\n", 4);
    if (played) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char acc[32];
        s_accept_of(req, rlen, acc);
        buf_t st;
        buf_init(&st, 0);
        /* The cuts are offsets into raw; each substitution moves the later
         * ones by the length difference. */
        size_t piece_end[MAX_CUTS + 1], np = 0, ci = 0;
        /* Only in the head: the accept differs from play to play (each
         * connection has its own random key), so in the frames it would make
         * the two plays different streams (a length byte taken from it). */
        const uint8_t *head_end = memmem(raw, len, "\r\n\r\n", 4);
        size_t subst_end = head_end ? (size_t)(head_end - raw) : len;
        for (size_t i = 0; i < len;) {
            while (ci < ncuts && cuts[ci] <= i) {
                piece_end[np++] = st.len;
                ci++;
            }
            if (i + 8 <= subst_end && memcmp(raw + i, "@ACCEPT@", 8) == 0) {
                buf_puts(&st, acc);
                i += 8;
            } else {
                buf_putc(&st, (char)raw[i++]);
            }
        }
        *had_accept = acc[0] && memmem(st.data, st.len, acc, strlen(acc)) != NULL;
        int cfd = s_client_end(fd, -1);
        size_t from = 0;
        bool ok = true;
        for (size_t k = 0; k < np && ok; k++) {
            if (piece_end[k] > from) {
                ok = s_write(fd, st.data + from, piece_end[k] - from);
                from = piece_end[k];
                s_wait_read(fd, cfd, from);
            }
        }
        if (ok && st.len > from && s_write(fd, st.data + from, st.len - from))
            from = st.len;
        s_wait_read(fd, cfd, from);
        buf_free(&st);
    }
    if (fd >= 0)
        s_abort(fd);
    kernel_conn_destroy(&c);
    s_drain_backlog();
    return played;
}

static int s_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    s_init();
    if (size < 1)
        return 0;
    size_t ncuts = data[0] & MAX_CUTS, off = 1;
    if (size < off + 2 * ncuts)
        return 0;
    const uint8_t *cutb = data + off;
    off += 2 * ncuts;
    const uint8_t *raw = data + off;
    size_t len = size - off;
    if (len == 0 || len > STREAM_MAX)
        return 0;
    size_t cuts[MAX_CUTS];
    for (size_t i = 0; i < ncuts; i++)
        cuts[i] = (size_t)(cutb[2 * i] | cutb[2 * i + 1] << 8) % len;
    qsort(cuts, ncuts, sizeof *cuts, s_cmp);
    s_seen_t whole, cut;
    bool acc_whole = false, acc_cut = false;
    if (!s_play(raw, len, NULL, 0, &whole, &acc_whole) || !s_play(raw, len, cuts, ncuts, &cut, &acc_cut))
        return 0; /* the harness could not connect: nothing to compare */
    /* Up only with the accept our key asks for. */
    FUZZ_ASSERT(whole.up == 0 || acc_whole);
    FUZZ_ASSERT(cut.up == 0 || acc_cut);
    FUZZ_ASSERT(whole.up <= 1 && cut.up <= 1);
    /* The cuts change nothing. */
    if (whole.up != cut.up || whole.msgs != cut.msgs || strcmp(whole.ids, cut.ids) != 0 ||
        whole.lost != cut.lost || whole.gone != cut.gone) {
        fprintf(stderr, "whole: up %d lost %d gone %d msgs %d %s\ncut:   up %d lost %d gone %d msgs %d %s\n",
                whole.up, whole.lost, whole.gone, whole.msgs, whole.ids, cut.up, cut.lost, cut.gone, cut.msgs,
                cut.ids);
        FUZZ_ASSERT(!"the outcome depends on how the stream was cut");
    }
    return 0;
}
