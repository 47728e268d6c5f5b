/* mcp_sink: the MCP unit tests' transport (test_mcp.c, test_mcp_tasks.c): it
 * records what a session would send, up to 64 messages, instead of sending. */
#ifndef RAT_TEST_MCP_SINK_H
#define RAT_TEST_MCP_SINK_H

#include <stdbool.h>
#include <stddef.h>

#include "mcp.h"

typedef struct {
    char *msgs[64]; /* each message's JSON text, owned */
    int n;
    bool final[64]; /* a response (MCP_MSG_RESPONSE) */
    mcp_msg_kind_t kind[64];
} mcpsink_t;

/* The session's send callback; transport is the mcpsink_t. */
void mcpsink_send(void *transport, void *origin, const char *json, size_t len, mcp_msg_kind_t kind);
/* Frees the recorded messages; the sink is empty again. */
void mcpsink_clear(mcpsink_t *s);
/* The error code of the last message, or 0. */
int mcpsink_last_code(mcpsink_t *s);
/* Hands one line to the session, as a transport does. */
void mcpsink_feed(mcp_session_t *s, const char *line);

#endif
