/* transport_http_tls: what HTTPS accepts (TLS 1.2 and 1.3, AEAD suites
 * only), and a plain-HTTP request sent to the HTTPS port answered with a
 * readable 400 instead of a closed connection. */
#define LOG_MODULE "http"
#include "transport_http_internal.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

/* GnuTLS's priority string for Mozilla's "intermediate" profile (TLS 1.2
 * and 1.3; ECDHE or DHE key exchange; AES-GCM and ChaCha20-Poly1305 only: no
 * CBC, no SHA-1 MAC, no RSA key exchange; no SHA-1 signatures), on top of
 * GnuTLS's SECURE128 (which also drops everything under 128-bit security).
 * The client's order of preference is kept, as the profile says. */
const char http_tls_priorities[] = "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:"
                                   "-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305:"
                                   "-MAC-ALL:+AEAD:"
                                   "-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:"
                                   "-SIGN-RSA-SHA1:-SIGN-ECDSA-SHA1:-SIGN-DSA-SHA1";

/* Seconds the kernel holds a new connection that has sent nothing yet
 * before handing it over anyway (TCP_DEFER_ACCEPT). */
#define DEFER_ACCEPT_S 5

/* HTTPS: a connection is handed to libmicrohttpd only once its first bytes
 * have arrived (every TLS and HTTP client speaks first), so that
 * http_tls_sniff sees them at accept. The kernel still hands over a silent
 * connection after DEFER_ACCEPT_S; that one goes to the TLS handshake as
 * before. Best effort: without it, only plain HTTP that arrived before the
 * accept gets the 400. */
void http_tls_listen_setup(transport_http_t *self)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    int secs = DEFER_ACCEPT_S;
    if (!i || i->listen_fd < 0 || setsockopt(i->listen_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof secs) < 0)
        log_debug("TCP_DEFER_ACCEPT not set: plain HTTP to the HTTPS port may go unanswered");
}

/* A just-accepted HTTPS connection whose first byte is an ASCII capital (a
 * request line, "GET / HTTP/1.1"; a TLS record starts with 0x16, an SSLv2
 * hello with 0x80) was sent plain HTTP: it gets a plain 400 saying to use
 * https://, and its write side is shut so that nothing else follows (the
 * TLS handshake then fails on what is left, or on end of file, and
 * libmicrohttpd closes it). What arrived is read away first (at most one
 * request head's worth), so that the close that follows is an orderly one
 * and the client reads the answer. Cost on every HTTPS connection: one
 * recv(MSG_PEEK) that does not wait. */
void http_tls_sniff(int fd)
{
    unsigned char b = 0;
    if (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 1 || b < 'A' || b > 'Z')
        return;
    char junk[4096];
    size_t got = 0;
    ssize_t n;
    while (got < (32u << 10) && (n = recv(fd, junk, sizeof junk, MSG_DONTWAIT)) > 0)
        got += (size_t)n;
    static const char body[] = "400 Bad Request: this port speaks HTTPS, and the request came in plain HTTP. "
                               "Use https:// in the URL.\n";
    char head[256];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      sizeof body - 1);
    /* A fresh connection's send buffer takes both at once. */
    if (send(fd, head, (size_t)hl, MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE) == hl)
        (void)send(fd, body, sizeof body - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    log_debug("plain HTTP on the HTTPS port: answered 400");
}
