/* Unit tests: kernel_ws takes the frames a Jupyter Server sends right after
 * the 101 (a recorded replay) cut at every byte and in streams of every
 * length in one write, against a fake peer (gw_peer.h): every message
 * delivered, in order. */
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
    gwpeer_frame_buf(out, 1, m.data, m.len);
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
    gwpeer_frame_buf(out, 1, m.data, m.len);
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
static void s_pump_msgs(loop_t *loop, gwpeer_seen_t *seen, int n)
{
    for (int i = 0; i < 400 && seen->msgs < n && !seen->lost; i++)
        loop_run_once(loop, 5);
}

/* One connection: the upgrade answered with head, then the replayed
 * frames, the whole stream cut after `cut` bytes (0: one write). Checks
 * every message arrived, in order, on a link that stayed up. */
static bool s_one_split(gwpeer_t *p, gateway_t *gw, size_t cut, const char *reason, size_t pad_to)
{
    gwpeer_seen_t seen = {0};
    char err[256];
    kernel_conn_t *c = kernel_ws_new(p->loop, gw, "kid-s", gwpeer_on_msg, gwpeer_on_event, &seen, err, sizeof err);
    buf_t req, stream;
    buf_init(&req, 0);
    buf_init(&stream, 0);
    int fd = gwpeer_accept(p, &req);
    bool ok = fd >= 0;
    const char *want = s_replay_ids;
    if (ok) {
        gwpeer_make_101(&req, reason, NULL, &stream);
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
            gwpeer_send_all(fd, stream.data, cut);
            loop_run_once(p->loop, 50); /* kernel_ws reads the first part alone */
            gwpeer_send_all(fd, stream.data + cut, stream.len - cut);
        } else {
            gwpeer_send_all(fd, stream.data, stream.len);
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
    gwpeer_t p = {.loop = loop_new()};
    p.lfd = gwpeer_listener(&p.port);
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
    gwpeer_seen_t seen = {0};
    kernel_conn_t *c = kernel_ws_new(p.loop, gw, "kid-p", gwpeer_on_msg, gwpeer_on_event, &seen, err, sizeof err);
    buf_t req, stream;
    buf_init(&req, 0);
    buf_init(&stream, 0);
    int fd = gwpeer_accept(&p, &req);
    CHECK(fd >= 0);
    gwpeer_make_101(&req, "", NULL, &stream);
    char ping[126];
    size_t plen = 127 - stream.len - 2;
    CHECK(plen <= 125);
    memset(ping, 'p', plen);
    gwpeer_frame_buf(&stream, 9, ping, plen);
    CHECK_EQ_INT(stream.len, 127);
    gwpeer_send_all(fd, stream.data, stream.len);
    for (int i = 0; i < 40 && !seen.up; i++)
        loop_run_once(p.loop, 5);
    gwpeer_pump(p.loop, 30);
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

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    RUN_CASE(s_check_ws_splits);
    return check_report("test_gateway_ws_frames");
}
