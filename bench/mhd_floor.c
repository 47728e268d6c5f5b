/* mhd_floor: the least a libmicrohttpd server can do per request, for the
 * HTTP rows of scripts/bench: answers every request with a small JSON body,
 * in the mode rat-py uses (one thread, MHD's epoll fd polled by the caller).
 *   mhd_floor PORT        (prints "port N" once listening; runs until killed) */
#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum MHD_Result s_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)cls, (void)url, (void)method, (void)version, (void)upload;
    if (*con_cls == NULL) { /* first call: headers only */
        *con_cls = c;
        return MHD_YES;
    }
    if (*upload_size) { /* a body: take it */
        *upload_size = 0;
        return MHD_YES;
    }
    static const char body[] = "{\"status\":\"ok\"}";
    struct MHD_Response *r = MHD_create_response_from_buffer(sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "content-type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

int main(int argc, char **argv)
{
    unsigned port = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, (uint16_t)port, NULL, NULL,
                                            s_access, NULL, MHD_OPTION_CONNECTION_LIMIT, 2048u, MHD_OPTION_END);
    if (!d)
        return 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("port %u\n", info->port);
    fflush(stdout);
    int fd = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD)->epoll_fd;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        MHD_UNSIGNED_LONG_LONG to = 0;
        int ms = MHD_get_timeout(d, &to) == MHD_YES ? (int)(to > 1000 ? 1000 : to) : 1000;
        poll(&p, 1, ms);
        MHD_run(d);
    }
}
