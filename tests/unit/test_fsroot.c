/* fsroot: no path gets out of the root (.., absolute spellings, symbolic
 * links anywhere on the way, hidden names), special files do not hang a
 * read, and a write that fails half-way (a full disk) leaves the file as it
 * was and no temporary file behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fsroot.h"
#include "mem.h"

static char s_top[] = "/tmp/rat-test-fsroot-XXXXXX";
static char *s_root;    /* s_top/root: the confined tree */
static char *s_outside; /* s_top/outside: must stay unreachable */

static void s_put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

static size_t s_entries(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static void setup(void)
{
    CHECK(mkdtemp(s_top) != NULL);
    s_root = xasprintf("%s/root", s_top);
    s_outside = xasprintf("%s/outside", s_top);
    CHECK(mkdir(s_root, 0755) == 0 && mkdir(s_outside, 0755) == 0);
    char *p = xasprintf("%s/secret.txt", s_outside);
    s_put(p, "outside\n");
    free(p);
    p = xasprintf("%s/sub", s_root);
    CHECK(mkdir(p, 0755) == 0);
    free(p);
    p = xasprintf("%s/sub/nb.ipynb", s_root);
    s_put(p, "{}\n");
    free(p);
    /* Links out of the root: to a file, to a directory, nested, and one
     * that points back inside (refused all the same: no link is followed). */
    p = xasprintf("%s/secret.txt", s_outside);
    char *l = xasprintf("%s/to_file", s_root);
    CHECK(symlink(p, l) == 0);
    free(l);
    free(p);
    l = xasprintf("%s/to_dir", s_root);
    CHECK(symlink(s_outside, l) == 0);
    free(l);
    l = xasprintf("%s/sub/up", s_root);
    CHECK(symlink("../../outside", l) == 0);
    free(l);
    l = xasprintf("%s/inside", s_root);
    CHECK(symlink("sub", l) == 0);
    free(l);
}

static void test_paths_that_leave_the_root_are_refused(void)
{
    fsroot_t *r = fsroot_new(s_root);
    CHECK(r != NULL);
    size_t len = 0;
    struct stat st;
    static const struct {
        const char *path;
        int err;
    } bad[] = {
        {"../outside/secret.txt", EINVAL}, {"sub/../../outside/secret.txt", EINVAL}, {"./sub/nb.ipynb", EINVAL},
        {"to_file", ELOOP},                {"to_dir/secret.txt", ELOOP},            {"sub/up/secret.txt", ELOOP},
        {"inside/nb.ipynb", ELOOP},        {".hidden", EPERM},                      {"sub/.ipynb_checkpoints/x", EPERM},
        {"nope/x", ENOENT},                {"sub/nb.ipynb/x", ENOTDIR},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        char *data = fsroot_read(r, bad[i].path, 0, 1 << 20, &len, NULL);
        CHECK(data == NULL);
        if (errno != bad[i].err)
            fprintf(stderr, "  %s: errno %d (%s), want %d\n", bad[i].path, errno, strerror(errno), bad[i].err);
        CHECK_EQ_INT(errno, bad[i].err);
        free(data);
        /* Writes through the same spellings are refused the same way and
         * change nothing outside. */
        errno = 0;
        CHECK(fsroot_write(r, bad[i].path, 0, "pwned\n", 6, NULL) < 0);
        CHECK(errno == bad[i].err || (bad[i].err == ENOENT && errno == ENOENT));
    }
    /* An absolute spelling is relative to the root ("/" components are
     * skipped): /etc/passwd is root/etc/passwd, which does not exist. */
    errno = 0;
    CHECK(fsroot_read(r, "/etc/passwd", 0, 1 << 20, &len, NULL) == NULL && errno == ENOENT);
    char *data = fsroot_read(r, "//sub///nb.ipynb/", 0, 1 << 20, &len, &st);
    CHECK(data && len == 3 && strcmp(data, "{}\n") == 0);
    free(data);
    /* A link is seen as a link by stat, never as its target. */
    CHECK(fsroot_stat(r, "to_dir", 0, &st) == 0 && S_ISLNK(st.st_mode));
    /* Listing: a link into the outside cannot be listed through. */
    fsroot_entry_t *ents = NULL;
    bool more = false;
    CHECK(fsroot_list(r, "to_dir", 0, 100, &ents, &more) < 0 && errno == ELOOP);
    long n = fsroot_list(r, "", 0, 100, &ents, &more);
    CHECK_EQ_INT(n, 4); /* inside, sub, to_dir, to_file: sorted, links reported as links */
    if (n == 4) {
        CHECK_EQ_STR(ents[0].name, "inside");
        CHECK(S_ISLNK(ents[0].st.st_mode));
        CHECK_EQ_STR(ents[1].name, "sub");
    }
    fsroot_entries_free(ents, n);
    /* Rename cannot move a link, nor go out. */
    CHECK(fsroot_rename(r, "to_file", "moved", 0) < 0 && errno == ELOOP);
    CHECK(fsroot_rename(r, "sub/nb.ipynb", "../outside/nb.ipynb", 0) < 0 && errno == EINVAL);
    char *secret = xasprintf("%s/secret.txt", s_outside);
    data = NULL;
    int fd = open(secret, O_RDONLY);
    char buf[32] = {0};
    CHECK(fd >= 0 && read(fd, buf, sizeof buf - 1) == 8 && strcmp(buf, "outside\n") == 0);
    close(fd);
    CHECK_EQ_INT(s_entries(s_outside), 1);
    free(secret);
    fsroot_destroy(&r);
}

static void test_special_files_do_not_hang(void)
{
    fsroot_t *r = fsroot_new(s_root);
    char *fifo = xasprintf("%s/pipe", s_root);
    CHECK(mkfifo(fifo, 0600) == 0);
    size_t len = 0;
    errno = 0;
    CHECK(fsroot_read(r, "pipe", 0, 1 << 20, &len, NULL) == NULL && errno == EINVAL);
    CHECK(fsroot_write(r, "pipe", 0, "x", 1, NULL) < 0 && errno == EINVAL);
    unlink(fifo);
    free(fifo);
    /* Bounded: a file over max is refused. */
    CHECK(fsroot_write(r, "big.txt", 0, "0123456789", 10, NULL) == 0);
    errno = 0;
    CHECK(fsroot_read(r, "big.txt", 0, 9, &len, NULL) == NULL && errno == EFBIG);
    char *d = fsroot_read(r, "big.txt", 0, 10, &len, NULL);
    CHECK(d && len == 10);
    free(d);
    fsroot_destroy(&r);
}

/* A write that fails after some bytes (RLIMIT_FSIZE makes write() fail with
 * EFBIG at a chosen size, as a full disk fails with ENOSPC): the old file is
 * whole, no temporary file is left, and errno says why. In a child, so the
 * limit does not stay on this process. */
static void test_a_failed_write_leaves_the_file_as_it_was(void)
{
    fsroot_t *r = fsroot_new(s_root);
    CHECK(fsroot_write(r, "sub/keep.ipynb", 0, "{\"old\": true}\n", 14, NULL) == 0);
    char *sub = xasprintf("%s/sub", s_root);
    size_t before = s_entries(sub);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {.rlim_cur = 4096, .rlim_max = 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        char *big = xmalloc(1 << 16);
        memset(big, 'x', 1 << 16);
        int rc = fsroot_write(r, "sub/keep.ipynb", 0, big, 1 << 16, NULL);
        int e = errno;
        /* Freed before _exit: under valgrind (scripts/test) the child's
         * leak check counts a lost buffer as an error (exit 99). */
        free(big);
        free(sub);
        fsroot_destroy(&r);
        if (rc == 0 || e != EFBIG)
            fprintf(stderr, "child: fsroot_write returned %d, errno %d (%s); EFBIG expected\n", rc, e, strerror(e));
        _exit(rc < 0 && e == EFBIG ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "child: %s %d\n", WIFEXITED(status) ? "exit status" : "killed by signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t len = 0;
    char *d = fsroot_read(r, "sub/keep.ipynb", 0, 1 << 20, &len, NULL);
    CHECK(d && strcmp(d, "{\"old\": true}\n") == 0);
    free(d);
    CHECK_EQ_INT(s_entries(sub), before);
    /* A write that succeeds keeps the file's mode. */
    char *keep = xasprintf("%s/sub/keep.ipynb", s_root);
    CHECK(chmod(keep, 0640) == 0);
    struct stat st;
    CHECK(fsroot_write(r, "sub/keep.ipynb", 0, "{}\n", 3, &st) == 0);
    CHECK(stat(keep, &st) == 0 && (st.st_mode & 07777) == 0640);
    CHECK_EQ_INT(s_entries(sub), before);
    free(keep);
    free(sub);
    fsroot_destroy(&r);
}

static void test_hidden_names_with_the_flag(void)
{
    fsroot_t *r = fsroot_new(s_root);
    CHECK(fsroot_mkdir(r, "sub/.ipynb_checkpoints", 0) < 0 && errno == EPERM);
    CHECK(fsroot_mkdir(r, "sub/.ipynb_checkpoints", FSROOT_HIDDEN) == 0);
    CHECK(fsroot_write(r, "sub/.ipynb_checkpoints/nb-checkpoint.ipynb", FSROOT_HIDDEN, "{}\n", 3, NULL) == 0);
    fsroot_entry_t *ents = NULL;
    bool more = false;
    long n = fsroot_list(r, "sub", 0, 100, &ents, &more);
    for (long i = 0; i < n; i++)
        CHECK(ents[i].name[0] != '.');
    fsroot_entries_free(ents, n);
    n = fsroot_list(r, "sub", 0, 1, &ents, &more);
    CHECK(n == 1 && more);
    fsroot_entries_free(ents, n);
    CHECK(fsroot_rename(r, "sub/nb.ipynb", "sub/keep.ipynb", 0) < 0 && errno == EEXIST);
    fsroot_destroy(&r);
}

/* FSROOT_EXCL creates only: an existing name is EEXIST and keeps its data,
 * and no temporary file is left behind. */
static void test_exclusive_write_never_replaces(void)
{
    fsroot_t *r = fsroot_new(s_root);
    CHECK(fsroot_write(r, "sub/excl.txt", FSROOT_EXCL, "one\n", 4, NULL) == 0);
    char *sub = xasprintf("%s/sub", s_root);
    size_t before = s_entries(sub);
    CHECK(before > 0);
    CHECK(fsroot_write(r, "sub/excl.txt", FSROOT_EXCL, "two\n", 4, NULL) < 0);
    CHECK_EQ_INT(errno, EEXIST);
    size_t len = 0;
    char *data = fsroot_read(r, "sub/excl.txt", 0, 100, &len, NULL);
    CHECK(data && strcmp(data, "one\n") == 0);
    free(data);
    CHECK(s_entries(sub) == before);
    free(sub);
    CHECK(fsroot_write(r, "sub/excl.txt", 0, "three\n", 6, NULL) == 0);
    fsroot_destroy(&r);
}

int main(void)
{
    setup();
    RUN_CASE(test_paths_that_leave_the_root_are_refused);
    RUN_CASE(test_special_files_do_not_hang);
    RUN_CASE(test_a_failed_write_leaves_the_file_as_it_was);
    RUN_CASE(test_hidden_names_with_the_flag);
    RUN_CASE(test_exclusive_write_never_replaces);
    char *cmd = xasprintf("rm -rf '%s'", s_top);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", s_top);
    free(cmd);
    free(s_root);
    free(s_outside);
    return check_report("fsroot");
}
