/* Unit test: the stdio transport over real pipes. A run's output batches
 * (notifications of up to 64 KiB of text) must not stay in an idle rat-py's
 * memory once the client has read them (issue 14: idle RSS after a flood). */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "loop.h"
#include "mcp.h"
#include "mem.h"
#include "transport_stdio.h"

#define BATCH (64u << 10) /* tool_run's largest notification batch */

/* Bytes malloc has handed out: arena chunks and mmapped blocks. */
static size_t s_heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void s_small_tool(mcp_call_t *call, json_object *args, void *ud)
{
    mcp_call_text(call, "ok", false);
}

static void s_batch_tool(mcp_call_t *call, json_object *args, void *ud)
{
    char *text = xmalloc(BATCH);
    for (size_t i = 0; i < BATCH; i++)
        text[i] = i % 25 == 24 ? '\n' : (char)('0' + i % 10);
    mcp_call_log(call, MCP_LOG_INFO, "stdout", text, BATCH);
    free(text);
    mcp_call_text(call, "ok", false);
}

typedef struct {
    loop_t *loop;
    int to_rat, from_rat;
    char got[1 << 20];
    size_t len;
} s_pipe_t;

static void s_put(s_pipe_t *p, const char *line)
{
    CHECK(write(p->to_rat, line, strlen(line)) == (ssize_t)strlen(line));
}

/* Runs the loop, reading everything written, until a response with this id
 * has been read whole (then nothing is left in the transport's queue: the
 * response is queued after the notifications). */
static void s_until_response(s_pipe_t *p, int id)
{
    char want[64];
    snprintf(want, sizeof want, "\"id\":%d,\"result\"", id);
    p->len = 0;
    for (int i = 0; i < 2000; i++) {
        loop_run_once(p->loop, 10);
        ssize_t n;
        while ((n = read(p->from_rat, p->got + p->len, sizeof p->got - 1 - p->len)) > 0)
            p->len += (size_t)n;
        p->got[p->len] = '\0';
        char *at = strstr(p->got, want);
        if (at && strchr(at, '\n'))
            return;
    }
    CHECK(!"no response");
}

static void test_drained_queue_is_freed(void)
{
    loop_t *loop = loop_new();
    mcp_server_t *srv = mcp_server_new("t", "1.0", NULL);
    mcp_tool_t small = {.name = "small", .description = "d", .input_schema = "{\"type\":\"object\"}", .fn = s_small_tool};
    mcp_tool_t batch = {.name = "batch", .description = "d", .input_schema = "{\"type\":\"object\"}", .fn = s_batch_tool};
    mcp_server_add_tool(srv, &small);
    mcp_server_add_tool(srv, &batch);
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    transport_stdio_t *t = transport_stdio_new(loop, srv, in[0], out[1], NULL, NULL);
    s_pipe_t *p = xcalloc(1, sizeof *p);
    p->loop = loop;
    p->to_rat = in[1];
    p->from_rat = out[0];
    s_put(p, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
             "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    s_until_response(p, 1);
    s_put(p, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"small\",\"arguments\":{}}}\n");
    s_until_response(p, 2);
    size_t base = s_heap_in_use();
    /* The batch is bigger than a pipe holds (64 KiB): it is queued, then
     * written as the test reads. */
    s_put(p, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"batch\",\"arguments\":{}}}\n");
    s_until_response(p, 3);
    CHECK(strstr(p->got, "\"notifications/message\"") != NULL);
    CHECK(p->len > BATCH);
    size_t after = s_heap_in_use();
    /* Before: the queue kept up to 256 KiB of capacity (here 128 KiB). What
     * may remain is bookkeeping, far below one batch. */
#if defined(__SANITIZE_ADDRESS__)
    /* ASan's allocator (freed blocks quarantined) makes the figures meaningless. */
    (void)base;
    (void)after;
#else
    if (base > 0) {
        CHECK(after < base + BATCH / 2);
        if (after >= base + BATCH / 2)
            fprintf(stderr, "heap in use: %zu before the batch, %zu after\n", base, after);
    }
#endif
    transport_stdio_destroy(&t);
    mcp_server_destroy(&srv);
    loop_destroy(&loop);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    free(p);
}

int main(void)
{
    RUN_CASE(test_drained_queue_is_freed);
    return check_report("test_stdio");
}
