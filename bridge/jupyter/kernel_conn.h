/* kernel_conn: the small interface between rat-py and a kernel's channels.
 *
 * A connection sends messages on a channel and delivers verified, parsed
 * messages and connection events to its owner. ZMQ (kernel_zmq.c) is one
 * implementation; a Jupyter Server WebSocket connection can be another,
 * and the unit tests hand the runtime a fake one (kernel_conn_factory_fn),
 * without changing the code that uses this interface.
 *
 * Callbacks and lifetime: on_msg and on_event are called from the
 * connection's own loop callbacks, and an implementation may use itself
 * after a handler returns (kernel_zmq keeps draining its socket). So the
 * owner never destroys a connection from inside one of its handlers: it
 * destroys it from the loop (kernel.c frees a kernel destroyed inside a
 * handler, and its connection, from a 0 ms timer). This is the rule that
 * runs through every layer (see kernel.h, runtime.h): nothing is freed
 * under a caller that may still use it. */
#ifndef RAT_KERNEL_CONN_H
#define RAT_KERNEL_CONN_H

#include <stdbool.h>
#include <json-c/json.h>

#include "connfile.h"
#include "loop.h"
#include "wire.h"

typedef enum { KCHAN_SHELL, KCHAN_CONTROL, KCHAN_STDIN, KCHAN_IOPUB, KCHAN_COUNT } kchan_t;

typedef enum {
    KCONN_HB_LOST,   /* no heartbeat reply within the tolerance */
    KCONN_HB_OK,     /* heartbeat replies again */
    KCONN_UP,        /* shell, control and stdin are all connected to the kernel */
    KCONN_GONE,      /* the kernel no longer exists at the other end, or the peer
                      * refuses us for good (a gateway's 404, 401, 403): the
                      * connection's error op says why */
} kconn_event_t;

typedef struct {
    unsigned long received;   /* messages delivered */
    unsigned long sent;
    unsigned long dropped;    /* rejected: bad/missing/replayed signature, bad frames/JSON */
    unsigned long bad_sig;    /* of which: bad or missing signature */
    unsigned long replayed;   /* of which: replayed signature */
    bool hb_ok;               /* last heartbeat state */
    long hb_rtt_us;           /* last heartbeat round trip, -1 if none yet */
} kconn_stats_t;

typedef struct kernel_conn kernel_conn_t;

/* msg is borrowed for the call; take references to keep parts of it. */
typedef void (kernel_conn_msg_fn)(void *ud, kchan_t ch, wire_msg_t *msg);
typedef void (kernel_conn_event_fn)(void *ud, kconn_event_t ev);

typedef struct {
    /* Sends msg_type with content (JSON text, NULL for {}) on ch. parent is
     * the header this message answers (NULL for none). Writes the new msg id
     * into id_out when not NULL. Returns 0 or -1. */
    int (*send)(kernel_conn_t *self, kchan_t ch, const char *msg_type, const char *content,
                json_object *parent, char id_out[WIRE_ID_LEN + 1]);
    /* Turns heartbeat monitoring on (interval and tolerance in ms) or off (0). */
    void (*heartbeat)(kernel_conn_t *self, int interval_ms, int tolerance_ms);
    void (*stats)(const kernel_conn_t *self, kconn_stats_t *out);
    void (*destroy)(kernel_conn_t *self);
    /* Optional (NULL): a sentence for the last KCONN_GONE, or NULL. */
    const char *(*error)(const kernel_conn_t *self);
} kernel_conn_ops_t;

struct kernel_conn {
    const kernel_conn_ops_t *ops;
    kernel_conn_msg_fn *on_msg;
    kernel_conn_event_fn *on_event;
    void *ud;
};

/* Makes a connection to the kernel described by ci, delivering to on_msg and
 * on_event with ud. factory_ud is the factory's own. Returns NULL with err
 * filled when it cannot. kernel.c uses ZeroMQ (kernel_zmq_new) unless its
 * options name another factory. */
typedef kernel_conn_t *(kernel_conn_factory_fn)(void *factory_ud, loop_t *loop, const connfile_t *ci,
                                                kernel_conn_msg_fn *on_msg, kernel_conn_event_fn *on_event,
                                                void *ud, char *err, size_t errlen);

static inline int kernel_conn_send(kernel_conn_t *c, kchan_t ch, const char *msg_type, const char *content,
                                   json_object *parent, char id_out[WIRE_ID_LEN + 1])
{
    return c->ops->send(c, ch, msg_type, content, parent, id_out);
}

static inline void kernel_conn_heartbeat(kernel_conn_t *c, int interval_ms, int tolerance_ms)
{
    c->ops->heartbeat(c, interval_ms, tolerance_ms);
}

static inline void kernel_conn_stats(const kernel_conn_t *c, kconn_stats_t *out)
{
    c->ops->stats(c, out);
}

static inline void kernel_conn_destroy(kernel_conn_t **c)
{
    if (c && *c) {
        (*c)->ops->destroy(*c);
        *c = NULL;
    }
}

const char *kernel_conn_channel_name(kchan_t ch);

#endif
