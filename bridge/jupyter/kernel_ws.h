/* kernel_ws: kernel_conn over a Jupyter Server's WebSocket,
 * /api/kernels/{id}/channels (the JSON form every Jupyter Server speaks:
 * one text frame per message, the message dict plus "channel").
 *
 * The server signs toward the kernel, so messages here carry no signature:
 * each frame is parsed (strict JSON, valid UTF-8, at most WIRE_MAX_FRAME
 * bytes), checked for the message's parts (wire_from_json_text: a stream's
 * text stays in the frame, as kernel_zmq leaves it) and handed up as the
 * same wire_msg_t kernel_zmq hands up; anything else is counted as
 * dropped. Framing is libwslay's (loaded at run time, gw_dl.h) over a
 * non-blocking TCP socket on the loop (for https, libcurl's TLS connection
 * on that socket: CONNECT_ONLY, then curl_easy_send/recv); the HTTP upgrade
 * is ours.
 *
 * When the socket drops, it reconnects with the same session id, so the
 * server replays what it buffered meanwhile (a run's output is not lost);
 * the owner sees KCONN_HB_LOST then KCONN_HB_OK. A 404 (the kernel is gone:
 * deleted, culled, or the gateway restarted) or 401/403 on the upgrade is
 * KCONN_GONE with the reason in the error op. Messages sent while
 * disconnected are queued (bounded) and sent on reconnect. Heartbeat: WebSocket
 * pings; any received byte also proves the link alive. */
#ifndef RAT_KERNEL_WS_H
#define RAT_KERNEL_WS_H

#include <stddef.h>

#include "gateway.h"
#include "kernel_conn.h"
#include "loop.h"

/* gw is borrowed and must outlive the connection. An https gateway gives
 * wss (TLS through libcurl, verified like the REST calls). Does not fail;
 * the connection is made from the loop (err is for future checks). */
kernel_conn_t *kernel_ws_new(loop_t *loop, gateway_t *gw, const char *kernel_id, kernel_conn_msg_fn *on_msg,
                             kernel_conn_event_fn *on_event, void *ud, char *err, size_t errlen);

#endif
