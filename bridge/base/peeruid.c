/* peeruid: which local user owns the other end of a connection (see
 * peeruid.h). */
#include "peeruid.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

/* One end of a TCP connection as the kernel keys it: the address as four
 * 32-bit words in network order (IPv4 in w[0]), the port in network order. */
typedef struct {
    int family;
    uint32_t w[4];
    uint16_t port;
} s_end_t;

static bool s_ends(int fd, s_end_t *local, s_end_t *peer, int *family);
static bool s_end_from(const struct sockaddr_storage *ss, s_end_t *e);
static bool s_mapped(const s_end_t *e);
static void s_to_mapped(const s_end_t *v4, s_end_t *v6);
static void s_from_mapped(const s_end_t *v6, s_end_t *v4);
/* s_proc's answer when the file was read to its end without a match. */
#define S_NOT_LISTED ((peeruid_result_t)(PEERUID_UNKNOWN + 1))

static peeruid_result_t s_diag(const s_end_t *peer, const s_end_t *local, uid_t *uid);
static peeruid_result_t s_proc(const char *file, const s_end_t *peer, const s_end_t *local, uid_t *uid);
static peeruid_result_t s_unix(int fd, uid_t *uid);

static bool s_end_from(const struct sockaddr_storage *ss, s_end_t *e)
{
    memset(e, 0, sizeof *e);
    e->family = ss->ss_family;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
        memcpy(&e->w[0], &sin->sin_addr, 4);
        e->port = sin->sin_port;
        return true;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
        memcpy(e->w, &sin6->sin6_addr, 16);
        e->port = sin6->sin6_port;
        return true;
    }
    return false;
}

/* The connection's two ends, or false (not TCP/IP, not connected). */
static bool s_ends(int fd, s_end_t *local, s_end_t *peer, int *family)
{
    struct sockaddr_storage a, b;
    socklen_t al = sizeof a, bl = sizeof b;
    if (getsockname(fd, (struct sockaddr *)&a, &al) < 0 || getpeername(fd, (struct sockaddr *)&b, &bl) < 0)
        return false;
    if (a.ss_family != b.ss_family || !s_end_from(&a, local) || !s_end_from(&b, peer))
        return false;
    *family = a.ss_family;
    return true;
}

/* ::ffff:a.b.c.d, an IPv4 peer of a dual-stack IPv6 socket. */
static bool s_mapped(const s_end_t *e)
{
    return e->family == AF_INET6 && e->w[0] == 0 && e->w[1] == 0 && e->w[2] == htonl(0xffff);
}

static void s_to_mapped(const s_end_t *v4, s_end_t *v6)
{
    *v6 = (s_end_t){.family = AF_INET6, .w = {0, 0, htonl(0xffff), v4->w[0]}, .port = v4->port};
}

static void s_from_mapped(const s_end_t *v6, s_end_t *v4)
{
    *v4 = (s_end_t){.family = AF_INET, .w = {v6->w[3], 0, 0, 0}, .port = v6->port};
}

/* One sock_diag request for the socket whose own end is peer and whose
 * other end is local (the kernel looks it up as a packet from local to
 * peer would be: the established hash, TIME_WAIT included; no dump). The
 * reply is queued while sendto runs, so the receive never waits. */
static peeruid_result_t s_diag(const s_end_t *peer, const s_end_t *local, uid_t *uid)
{
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return PEERUID_UNKNOWN;
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req;
    memset(&req, 0, sizeof req);
    req.nlh.nlmsg_len = sizeof req;
    req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nlh.nlmsg_flags = NLM_F_REQUEST;
    req.nlh.nlmsg_seq = 1;
    req.r.sdiag_family = (uint8_t)peer->family;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = ~0u;
    req.r.id.idiag_sport = peer->port;
    req.r.id.idiag_dport = local->port;
    memcpy(req.r.id.idiag_src, peer->w, sizeof peer->w);
    memcpy(req.r.id.idiag_dst, local->w, sizeof local->w);
    req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    peeruid_result_t res = PEERUID_UNKNOWN;
    if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) != (ssize_t)sizeof req) {
        close(nl);
        return PEERUID_UNKNOWN;
    }
    /* Room for the reply's message and the attributes the kernel adds. */
    union {
        struct nlmsghdr h;
        char b[4096];
    } rep;
    struct sockaddr_nl from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(nl, &rep, sizeof rep, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
    close(nl);
    if (n <= 0 || fl < sizeof from || from.nl_pid != 0) /* only the kernel's answer counts */
        return PEERUID_UNKNOWN;
    size_t left = (size_t)n;
    for (struct nlmsghdr *h = &rep.h; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_seq != 1)
            continue;
        if (h->nlmsg_type == NLMSG_ERROR) {
            const struct nlmsgerr *e = NLMSG_DATA(h);
            if (h->nlmsg_len >= NLMSG_LENGTH(sizeof *e) && e->error == -ENOENT)
                res = PEERUID_GONE; /* no such connection any more */
            break;
        }
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
            break;
        const struct inet_diag_msg *m = NLMSG_DATA(h);
        /* The kernel answers for the exact tuple; checked all the same. */
        if (m->id.idiag_sport != peer->port || m->id.idiag_dport != local->port)
            break;
        if (m->idiag_inode == 0) {
            res = PEERUID_GONE; /* orphaned or TIME_WAIT: no process holds it, uid says nothing */
        } else {
            *uid = (uid_t)m->idiag_uid;
            res = PEERUID_FOUND;
        }
        break;
    }
    return res;
}

/* The line of /proc/net/tcp{,6} for the socket whose own end is peer and
 * whose other end is local: its uid and inode. Read line by line (the file
 * is generated as it is read), stopping at the match. */
static peeruid_result_t s_proc(const char *file, const s_end_t *peer, const s_end_t *local, uid_t *uid)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return PEERUID_UNKNOWN;
    int words = peer->family == AF_INET ? 1 : 4;
    char line[512];
    peeruid_result_t res = S_NOT_LISTED;
    bool header = true;
    while (fgets(line, sizeof line, f)) {
        if (header) {
            header = false;
            continue;
        }
        char la[33], ra[33];
        unsigned lp, rp, st;
        unsigned long u, ino;
        if (sscanf(line, " %*u: %32[0-9A-Fa-f]:%x %32[0-9A-Fa-f]:%x %x %*x:%*x %*x:%*x %*x %lu %*d %lu", la, &lp,
                   ra, &rp, &st, &u, &ino) != 7)
            continue;
        if (strlen(la) != (size_t)words * 8 || strlen(ra) != (size_t)words * 8 || lp != ntohs(peer->port) ||
            rp != ntohs(local->port))
            continue;
        /* Each word is printed as the 32-bit value it has in memory. */
        bool same = true;
        for (int i = 0; i < words && same; i++) {
            unsigned lw, rw;
            char a[9], b[9];
            memcpy(a, la + 8 * i, 8);
            memcpy(b, ra + 8 * i, 8);
            a[8] = b[8] = '\0';
            same = sscanf(a, "%x", &lw) == 1 && sscanf(b, "%x", &rw) == 1 && lw == peer->w[i] && rw == local->w[i];
        }
        if (!same)
            continue;
        if (ino == 0) {
            res = PEERUID_GONE;
        } else {
            *uid = (uid_t)u;
            res = PEERUID_FOUND;
        }
        break;
    }
    fclose(f);
    return res;
}

peeruid_result_t peeruid_get_proc(int fd, uid_t *uid)
{
    s_end_t local, peer, l2, p2;
    int family = 0;
    if (!s_ends(fd, &local, &peer, &family))
        return s_unix(fd, uid);
    /* The peer's socket may be of the other family: an IPv4 connection
     * made from a dual-stack IPv6 socket is listed in tcp6, mapped. */
    peeruid_result_t r;
    if (family == AF_INET) {
        r = s_proc("/proc/net/tcp", &peer, &local, uid);
        s_to_mapped(&peer, &p2);
        s_to_mapped(&local, &l2);
        if (r == S_NOT_LISTED)
            r = s_proc("/proc/net/tcp6", &p2, &l2, uid);
    } else {
        r = s_proc("/proc/net/tcp6", &peer, &local, uid);
        if (r == S_NOT_LISTED && s_mapped(&peer) && s_mapped(&local)) {
            s_from_mapped(&peer, &p2);
            s_from_mapped(&local, &l2);
            r = s_proc("/proc/net/tcp", &p2, &l2, uid);
        }
    }
    /* Listed nowhere: the connection is gone (reset, or fully closed). */
    return r == S_NOT_LISTED ? PEERUID_GONE : r;
}

peeruid_result_t peeruid_get_diag(int fd, uid_t *uid)
{
    s_end_t local, peer;
    int family = 0;
    if (!s_ends(fd, &local, &peer, &family))
        return s_unix(fd, uid);
    /* A mapped tuple is looked up in the IPv4 table by the kernel itself. */
    return s_diag(&peer, &local, uid);
}

peeruid_result_t peeruid_get(int fd, uid_t *uid)
{
    peeruid_result_t r = peeruid_get_diag(fd, uid);
    return r == PEERUID_UNKNOWN ? peeruid_get_proc(fd, uid) : r;
}

/* A Unix stream socket: the credentials the kernel recorded at connect
 * (socketpair: the creator's). */
static peeruid_result_t s_unix(int fd, uid_t *uid)
{
    struct sockaddr_storage a;
    socklen_t al = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &al) < 0 || a.ss_family != AF_UNIX)
        return PEERUID_UNKNOWN;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cl != sizeof cr)
        return PEERUID_UNKNOWN;
    *uid = cr.uid;
    return PEERUID_FOUND;
}
