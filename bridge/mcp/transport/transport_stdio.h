/* transport_stdio: MCP over newline-delimited JSON on stdin/stdout.
 *
 * The only code in rat-py that writes to stdout. Reads are non-blocking and
 * bounded (a line longer than the limit is discarded and answered with an
 * error); writes go through a bounded queue: when the client stops reading,
 * notifications are dropped first and reading stops until the queue drains, so
 * a client that never reads cannot grow rat-py without limit. */
#ifndef RAT_TRANSPORT_STDIO_H
#define RAT_TRANSPORT_STDIO_H

#include "loop.h"
#include "mcp.h"

/* Largest accepted message (one line). */
#define TRANSPORT_STDIO_MAX_LINE (16u << 20)

typedef struct transport_stdio transport_stdio_t;
/* Called once, from the loop, after stdin reached EOF (or failed) and every
 * request received before it has been answered (or dropped by the client's
 * notifications/cancelled), or an hour after EOF at the latest. */
typedef void (transport_stdio_eof_fn)(void *ud);

transport_stdio_t *transport_stdio_new(loop_t *loop, mcp_server_t *server, int in_fd, int out_fd,
                                       transport_stdio_eof_fn *on_eof, void *ud);
/* Ends the session (calls in flight are cancelled as "gone") and restores the
 * descriptors' flags. Does not close the descriptors. */
void transport_stdio_destroy(transport_stdio_t **self_p);
/* Writes out what is queued, waiting at most timeout_ms. */
void transport_stdio_flush(transport_stdio_t *self, int timeout_ms);

#endif
