/* Unit tests: the HTTP transport against what libmicrohttpd may answer
 * (mhd_dl's table, loaded for real, with single entries replaced). The
 * protocol itself is tested end to end by tests/integration/http*.test.mjs
 * and the fuzz harness (tests/fuzz/fuzz_http.c). */
#define MHD_DL_IMPL /* the table itself, not the MHD_* names it stands for */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "loop.h"
#include "mcp.h"
#include "mhd_dl.h"
#include "transport_http.h"

static const union MHD_DaemonInfo *(*s_real_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);

/* MHD_get_daemon_info that knows no epoll descriptor (NULL, as a build
 * without epoll answers), and passes the rest on. */
static const union MHD_DaemonInfo *s_info_no_epoll(struct MHD_Daemon *d, enum MHD_DaemonInfoType t, ...)
{
    if (t == MHD_DAEMON_INFO_EPOLL_FD)
        return NULL;
    return s_real_info(d, t);
}

/* transport_http_new checks the epoll descriptor it is given: an error, no
 * crash (it used to dereference NULL), nothing left listening. */
static void test_no_epoll_fd(void)
{
    char err[512] = "";
    if (mhd_dl_load(err, sizeof err) < 0) {
        fprintf(stderr, "skipped: %s\n", err);
        return;
    }
    loop_t *loop = loop_new();
    mcp_server_t *srv = mcp_server_new("t", "1", NULL);
    transport_http_opts_t o = {.port = 0};
    transport_http_t *t = transport_http_new(loop, srv, &o, err, sizeof err);
    CHECK(t != NULL); /* the real one works */
    transport_http_destroy(&t);
    s_real_info = mhd_dl.get_daemon_info;
    mhd_dl.get_daemon_info = s_info_no_epoll;
    err[0] = '\0';
    t = transport_http_new(loop, srv, &o, err, sizeof err);
    mhd_dl.get_daemon_info = s_real_info;
    CHECK(t == NULL);
    CHECK(strstr(err, "no epoll descriptor") != NULL);
    transport_http_destroy(&t);
    mcp_server_destroy(&srv);
    loop_destroy(&loop);
}

int main(void)
{
    RUN_CASE(test_no_epoll_fd);
    return check_report("http");
}
