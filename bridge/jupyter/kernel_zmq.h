/* kernel_zmq: kernel_conn over ZeroMQ, the standard Jupyter transport.
 *
 * shell, control and stdin are DEALER sockets sharing one routing id (the
 * kernel routes input_request with the shell identity), iopub is a SUB on
 * everything, hb a REQ with RELAXED+CORRELATE so a lost ping never wedges it.
 * Every incoming message is verified (wire_decode) before its JSON is
 * parsed; rejected ones are counted and dropped. The sockets are czmq's
 * (zsock_t), and all of them, the monitors of the three DEALERs' handshakes
 * included, live on the loop thread. */
#ifndef RAT_KERNEL_ZMQ_H
#define RAT_KERNEL_ZMQ_H

#include <stddef.h>

#include "connfile.h"
#include "kernel_conn.h"
#include "loop.h"

/* The sockets are czmq's, in the process's context (zmqctx.h). Returns NULL
 * with err filled if they cannot be connected. */
kernel_conn_t *kernel_zmq_new(loop_t *loop, const connfile_t *ci, kernel_conn_msg_fn *on_msg,
                              kernel_conn_event_fn *on_event, void *ud, char *err, size_t errlen);

/* For tests only: sleep this long (ms) after each socket's connect, so a
 * test can let the handshakes finish before anything else is set up. */
extern int kernel_zmq_test_connect_delay_ms;

#endif
