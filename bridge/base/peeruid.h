/* peeruid: which local user owns the other end of a connection.
 *
 * A server on a loopback address serves every process of the machine,
 * whoever runs it. Linux knows the owner of each socket: for TCP, the
 * NETLINK_SOCK_DIAG inet query for the connection's exact 4-tuple answers
 * with the peer socket's uid (one request, one reply, answered inside the
 * sendmsg: no dump of the socket table); /proc/net/tcp and tcp6 (a linear
 * scan) are the fallback where sock_diag is not available (some sandboxes).
 * For a Unix socket, SO_PEERCRED.
 *
 * The uid of a socket is its creator's, fixed when it was created; a socket
 * no process holds any more (closed: orphaned, or in TIME_WAIT, whose
 * entries the kernel reports with uid 0) tells nothing about who sent what
 * is on the connection, and is reported as gone, never as root's. */
#ifndef RAT_PEERUID_H
#define RAT_PEERUID_H

#include <sys/types.h>

typedef enum {
    PEERUID_FOUND,   /* *uid owns the peer's socket, and a process still holds it */
    PEERUID_GONE,    /* the peer's socket was closed (orphaned, TIME_WAIT): no owner to tell */
    PEERUID_UNKNOWN, /* cannot tell: not a TCP or Unix stream socket, or the kernel would not say */
} peeruid_result_t;

/* The owner of the socket at the other end of fd, a connected socket of
 * this process (TCP over IPv4 or IPv6, or a Unix stream socket): sock_diag
 * first, then /proc/net/tcp{,6}. Never blocks. */
peeruid_result_t peeruid_get(int fd, uid_t *uid);
/* The same through /proc/net/tcp{,6} only (the fallback; for tests). */
peeruid_result_t peeruid_get_proc(int fd, uid_t *uid);
/* The same through sock_diag only; PEERUID_UNKNOWN when netlink refuses. */
peeruid_result_t peeruid_get_diag(int fd, uid_t *uid);

#endif
