/* peeruid against real loopback connections: the owner of the client's
 * socket through sock_diag and through /proc/net/tcp{,6} agree; a client
 * that has closed its socket is "gone", never root's; as root, a client
 * made by a child dropped to nobody is nobody's. Prints the cost of one
 * lookup (what the HTTP transport adds to each connection). */
#include "check.h"
#include "peeruid.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A listener on addr (127.0.0.1 or ::1), port chosen by the kernel; -1 when
 * the family is not there. */
static int s_listen(int family, struct sockaddr_storage *ss, socklen_t *len)
{
    int l = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0)
        return -1;
    memset(ss, 0, sizeof *ss);
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        *len = sizeof *a;
    }
    if (bind(l, (struct sockaddr *)ss, *len) < 0 || listen(l, 16) < 0 ||
        getsockname(l, (struct sockaddr *)ss, len) < 0) {
        close(l);
        return -1;
    }
    return l;
}

static double s_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void s_family(int family)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int l = s_listen(family, &ss, &len);
    if (l < 0) {
        fprintf(stderr, "  (no %s loopback here: skipped)\n", family == AF_INET ? "IPv4" : "IPv6");
        return;
    }
    int c = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(connect(c, (struct sockaddr *)&ss, len) == 0);
    int s = accept(l, NULL, NULL);
    CHECK(s >= 0);
    uid_t a = 12345, b = 54321;
    CHECK_EQ_INT(peeruid_get_diag(s, &a), PEERUID_FOUND);
    CHECK_EQ_INT(a, geteuid());
    CHECK_EQ_INT(peeruid_get_proc(s, &b), PEERUID_FOUND);
    CHECK_EQ_INT(b, geteuid());
    /* A half-closed client still holds its socket: still its owner's. */
    CHECK(shutdown(c, SHUT_WR) == 0);
    CHECK_EQ_INT(peeruid_get(s, &a), PEERUID_FOUND);

    /* The cost of one lookup, as the transport pays it per connection. */
    /* Few enough to stay quick under valgrind (scripts/test runs it so). */
    enum { N = 500, NPROC = 20 };
    double t0 = s_now_us();
    for (int i = 0; i < N; i++)
        (void)peeruid_get_diag(s, &a);
    double t1 = s_now_us();
    for (int i = 0; i < NPROC; i++)
        (void)peeruid_get_proc(s, &a);
    double t2 = s_now_us();
    fprintf(stderr, "  %s: sock_diag %.1f us per lookup, /proc/net fallback %.1f us (this machine's socket table)\n",
            family == AF_INET ? "IPv4" : "IPv6", (t1 - t0) / N, (t2 - t1) / NPROC);

    /* Closed by its process: orphaned, then TIME_WAIT (which the kernel
     * lists as uid 0): gone, not root's. */
    close(c);
    CHECK_EQ_INT(peeruid_get_diag(s, &a), PEERUID_GONE);
    CHECK_EQ_INT(peeruid_get_proc(s, &a), PEERUID_GONE);
    close(s);
    close(l);
}

static void test_same_user_v4(void) { s_family(AF_INET); }
static void test_same_user_v6(void) { s_family(AF_INET6); }

/* As root: a child that dropped to nobody connects; its socket is nobody's
 * through both ways. */
static void test_other_user(void)
{
    struct passwd *pw = getpwnam("nobody");
    if (geteuid() != 0 || !pw) {
        fprintf(stderr, "  (not root, or no user nobody: the other-user case needs both; skipped)\n");
        return;
    }
    struct sockaddr_storage ss;
    socklen_t len;
    int l = s_listen(AF_INET, &ss, &len);
    CHECK(l >= 0);
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
            _exit(2);
        int c = socket(AF_INET, SOCK_STREAM, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&ss, len) < 0)
            _exit(3);
        char x;
        close(go[1]);
        (void)!read(go[0], &x, 1); /* hold the socket until the parent has looked */
        _exit(0);
    }
    close(go[0]);
    int s = accept(l, NULL, NULL);
    CHECK(s >= 0);
    uid_t a = 0, b = 0;
    CHECK_EQ_INT(peeruid_get_diag(s, &a), PEERUID_FOUND);
    CHECK_EQ_INT(a, pw->pw_uid);
    CHECK_EQ_INT(peeruid_get_proc(s, &b), PEERUID_FOUND);
    CHECK_EQ_INT(b, pw->pw_uid);
    close(go[1]);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(s);
    close(l);
}

/* A Unix socket pair (the transport's adopt path): SO_PEERCRED. */
static void test_unix(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    uid_t a = 12345;
    CHECK_EQ_INT(peeruid_get(sv[0], &a), PEERUID_FOUND);
    CHECK_EQ_INT(a, geteuid());
    close(sv[0]);
    close(sv[1]);
    /* Not a socket at all. */
    int p[2];
    CHECK(pipe(p) == 0);
    CHECK_EQ_INT(peeruid_get(p[0], &a), PEERUID_UNKNOWN);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    RUN_CASE(test_same_user_v4);
    RUN_CASE(test_same_user_v6);
    RUN_CASE(test_other_user);
    RUN_CASE(test_unix);
    return check_report("peeruid");
}
