/* zmqctx: czmq's process context, set up once (see zmqctx.h). */
#include "zmqctx.h"

#include <pthread.h>
#include <stdio.h>
#include <czmq.h>

static void s_init(void)
{
    /* Before zsys_init, which would install the handler otherwise (and the
     * environment's ZSYS_SIGHANDLER cannot turn it back on). */
    zsys_handler_set(NULL);
    zsys_init();
    /* After zsys_init, which sets the stream (stdout, or ZSYS_LOGSTREAM). */
    zsys_set_logstream(stderr);
}

void zmqctx_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, s_init);
}
