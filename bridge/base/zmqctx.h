/* zmqctx: the process's ZeroMQ context, czmq's (zsys), set up for rat-py.
 *
 * czmq keeps one context per process and makes it on the first zsock_new.
 * Its defaults do not suit a program whose stdout is the MCP channel and
 * whose signals arrive on a signalfd (sigs.h): zsys_init installs its own
 * SIGINT/SIGTERM handler and sends czmq's log lines to stdout. zmqctx_init
 * turns the handler off before the context exists and sends the log to
 * stderr once it does. Call it before the first czmq socket is made (the
 * kernel connection, kernel_zmq.c, does; tests that make their own sockets
 * do too); later calls do nothing.
 *
 * The context lives as long as the process: czmq tears it down at exit
 * (zsys_shutdown, an atexit handler), once every socket is closed. A
 * process that never talks ZeroMQ (a gateway kernel) never makes one. */
#ifndef RAT_ZMQCTX_H
#define RAT_ZMQCTX_H

void zmqctx_init(void);

#endif
