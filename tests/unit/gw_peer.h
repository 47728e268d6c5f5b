/* gw_peer: a fake Jupyter Server WebSocket peer on loopback, shared by the
 * gateway's unit tests (test_gateway.c, test_gateway_ws.c,
 * test_gateway_ws_frames.c): it accepts kernel_ws's connection, answers the
 * upgrade and writes unmasked server frames, and records what kernel_ws
 * delivers. Checks count in the test program's totals (check.h,
 * CHECK_HELPER). */
#ifndef RAT_TEST_GW_PEER_H
#define RAT_TEST_GW_PEER_H

#include <stddef.h>

#include "buf.h"
#include "kernel_conn.h"
#include "loop.h"
#include "wire.h"

/* What kernel_ws delivered: messages and connection events. */
typedef struct {
    int msgs, up, lost, ok, gone;
    char last_type[64];
    kchan_t last_ch;
    char ids[1024]; /* the msg_ids received, in order, each followed by ',' */
} gwpeer_seen_t;

/* kernel_ws's callbacks; ud is the gwpeer_seen_t. */
void gwpeer_on_msg(void *ud, kchan_t ch, wire_msg_t *m);
void gwpeer_on_event(void *ud, kconn_event_t ev);

typedef struct {
    loop_t *loop;
    int lfd, port;
} gwpeer_t;

/* Runs loop for about ms. */
void gwpeer_pump(loop_t *loop, int ms);
/* Accepts kernel_ws's next connection and reads its upgrade request into
 * req; the connection's fd, or -1. */
int gwpeer_accept(gwpeer_t *p, buf_t *req);
void gwpeer_send_all(int fd, const void *data, size_t len);
/* An unmasked server frame, sent on fd or appended to out (16-bit lengths
 * at most). */
void gwpeer_frame(int fd, int opcode, const char *payload, size_t len);
void gwpeer_frame_buf(buf_t *out, int opcode, const char *payload, size_t len);
/* The Sec-WebSocket-Accept the request in req asks for (RFC 6455 4.2.2),
 * computed independently of kernel_ws. */
void gwpeer_accept_of(const buf_t *req, char out[32]);
/* A 101 that answers req, appended to out; head_extra goes among its
 * headers. gwpeer_send_101 sends a plain one. */
void gwpeer_make_101(const buf_t *req, const char *reason, const char *head_extra, buf_t *out);
void gwpeer_send_101(int fd, const buf_t *req);
/* A listening loopback socket nobody accepts from: connections complete
 * (the backlog) and then nothing answers. Its port in *port. */
int gwpeer_listener(int *port);

#endif
