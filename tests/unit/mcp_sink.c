/* mcp_sink: a transport that records what an MCP session sends
 * (mcp_sink.h). */
#include <stdlib.h>
#include <string.h>

#include "mcp_sink.h"
#include "mem.h"

void mcpsink_send(void *transport, void *origin, const char *json, size_t len, mcp_msg_kind_t kind)
{
    mcpsink_t *s = transport;
    if (s->n < 64) {
        s->final[s->n] = kind == MCP_MSG_RESPONSE;
        s->kind[s->n] = kind;
        s->msgs[s->n++] = xstrndup(json, len);
    }
}

void mcpsink_clear(mcpsink_t *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->msgs[i]);
    s->n = 0;
}

int mcpsink_last_code(mcpsink_t *s)
{
    if (!s->n)
        return 0;
    json_object *o = json_tokener_parse(s->msgs[s->n - 1]);
    json_object *e = NULL, *c = NULL;
    int code = 0;
    if (o && json_object_object_get_ex(o, "error", &e) && json_object_object_get_ex(e, "code", &c))
        code = json_object_get_int(c);
    json_object_put(o);
    return code;
}

void mcpsink_feed(mcp_session_t *s, const char *line)
{
    mcp_session_handle(s, line, strlen(line), NULL);
}
