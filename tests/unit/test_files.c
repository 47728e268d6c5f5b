/* Files other users may race us for: the connection file (it holds the
 * kernel's key) is written through a temporary file that must never be a
 * predictable name opened without O_EXCL, so a symlink planted in a shared
 * directory cannot redirect or expose it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "connfile.h"
#include "fileio.h"
#include "interp.h"
#include "mem.h"

static char s_dir[] = "/tmp/rat-test-files-XXXXXX";

static size_t s_count_entries(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static void test_planted_symlinks_are_not_followed(void)
{
    char *victim = xasprintf("%s/victim", s_dir);
    char *path = xasprintf("%s/kernel-1.json", s_dir);
    int fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, "mine\n", 5) == 5);
    close(fd);
    /* The names the old code used (path.tmp-PID) for a range of pids
     * around ours, all pointing at the victim. */
    for (long pid = (long)getpid() - 50; pid <= (long)getpid() + 50; pid++) {
        char *trap = xasprintf("%s.tmp-%ld", path, pid);
        CHECK(symlink(victim, trap) == 0);
        free(trap);
    }
    size_t before = s_count_entries(s_dir);
    connfile_t c;
    char err[256];
    CHECK(connfile_init_local(&c, "python3", err, sizeof err) == 0);
    mode_t old = umask(0);
    CHECK(connfile_write(path, &c, err, sizeof err) == 0);
    umask(old);
    size_t len = 0;
    char *text = fileio_read(victim, 4096, &len);
    CHECK_EQ_STR(text, "mine\n"); /* the victim is untouched */
    free(text);
    struct stat st;
    CHECK(lstat(path, &st) == 0);
    CHECK(S_ISREG(st.st_mode));               /* a file, not the planted link */
    CHECK_EQ_INT(st.st_mode & 0777, 0600);    /* even with umask 0 */
    CHECK_EQ_INT(st.st_uid, getuid());
    connfile_t back;
    CHECK(connfile_read(path, &back, err, sizeof err) == 0);
    CHECK_EQ_STR(back.key, c.key);
    CHECK_EQ_INT(s_count_entries(s_dir), before + 1); /* no temporary file left behind */
    connfile_free(&back);
    connfile_free(&c);
    free(path);
    free(victim);
}

static void test_write_failure_leaves_nothing(void)
{
    char *sub = xasprintf("%s/ro", s_dir);
    CHECK(mkdir(sub, 0700) == 0);
    char *path = xasprintf("%s/missing-dir/f.json", sub);
    CHECK(fileio_write_atomic(path, "x", 1, 0600) < 0);
    CHECK_EQ_INT(s_count_entries(sub), 0);
    /* A rename that fails (the target is a directory) removes the temporary. */
    char *target = xasprintf("%s/adir", sub);
    CHECK(mkdir(target, 0700) == 0);
    CHECK(fileio_write_atomic(target, "x", 1, 0600) < 0);
    CHECK_EQ_INT(s_count_entries(sub), 1);
    rmdir(target);
    rmdir(sub);
    free(target);
    free(path);
    free(sub);
}

/* fstat, through the linker's --wrap (tests/CMakeLists.txt): fails with
 * EIO when s_fail_fstat is set, leaving in *st what a failed call may leave
 * there (here: a mode that is not a regular file's). */
int __real_fstat(int fd, struct stat *st);
int __wrap_fstat(int fd, struct stat *st);
static int s_fail_fstat;

int __wrap_fstat(int fd, struct stat *st)
{
    if (!s_fail_fstat)
        return __real_fstat(fd, st);
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFDIR;
    errno = EIO;
    return -1;
}

/* A failed fstat is reported with its own errno; st is never read after it
 * (it used to be: the error came out as EINVAL, or from whatever st held). */
static void test_read_reports_fstat_failure(void)
{
    char *path = xasprintf("%s/plain", s_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, "x\n", 2) == 2);
    close(fd);
    size_t len = 0;
    char *text = fileio_read(path, 64, &len);
    CHECK_EQ_STR(text, "x\n");
    free(text);
    s_fail_fstat = 1;
    errno = 0;
    text = fileio_read(path, 64, &len);
    int e = errno;
    s_fail_fstat = 0;
    CHECK(text == NULL);
    CHECK_EQ_INT(e, EIO);
    /* Not a regular file: EINVAL, as before. */
    errno = 0;
    CHECK(fileio_read(s_dir, 64, &len) == NULL);
    CHECK_EQ_INT(errno, EINVAL);
    unlink(path);
    free(path);
}

/* A venv found by discovery is trusted only when no one else may change what
 * its python's path names, now or at a later restart (the kernel is started
 * again by the same path): every directory from / down to it and every link
 * of a symlink chain, not only the last file and its directory. */
static void s_mkdir(const char *p, mode_t m)
{
    CHECK(mkdir(p, 0700) == 0);
    CHECK(chmod(p, m) == 0);
}

static void s_expect_distrust(const char *dir, const char *env, const char *bad)
{
    char *why = interp_venv_distrust(dir, env);
    char *want = xasprintf("%s is writable by others (mode 0777)", bad);
    CHECK(why != NULL);
    if (why && !strstr(why, want))
        fprintf(stderr, "  why: %s\n  want: %s\n", why, want);
    CHECK(why && strstr(why, want));
    free(want);
    free(why);
}

static void test_venv_trust_covers_the_whole_way(void)
{
    char *p = xasprintf("%s/vt", s_dir);
    s_mkdir(p, 0755);
    /* a: bin/python -> pub/py -> /bin/sh, pub writable by anyone: they may
     * point py elsewhere (the last file and its directory are root's). */
    char *a = xasprintf("%s/a", p), *apub = xasprintf("%s/a/pub", p), *aproj = xasprintf("%s/a/proj", p);
    char *aenv = xasprintf("%s/.venv", aproj), *abin = xasprintf("%s/.venv/bin", aproj);
    char *apy = xasprintf("%s/python", abin), *alink = xasprintf("%s/py", apub);
    s_mkdir(a, 0755);
    s_mkdir(apub, 0777);
    s_mkdir(aproj, 0755);
    s_mkdir(aenv, 0755);
    s_mkdir(abin, 0755);
    CHECK(symlink("/bin/sh", alink) == 0);
    CHECK(symlink(alink, apy) == 0);
    s_expect_distrust(aproj, aenv, apub);
    /* b: .venv -> pub/envs/v, pub writable by anyone: they may rename envs
     * and put their own venv in its place. */
    char *b = xasprintf("%s/b", p), *bpub = xasprintf("%s/b/pub", p), *benvs = xasprintf("%s/b/pub/envs", p);
    char *bv = xasprintf("%s/v", benvs), *bvbin = xasprintf("%s/v/bin", benvs), *bvpy = xasprintf("%s/v/bin/python", benvs);
    char *bproj = xasprintf("%s/b/proj", p), *benv = xasprintf("%s/b/proj/.venv", p);
    s_mkdir(b, 0755);
    s_mkdir(bpub, 0777);
    s_mkdir(benvs, 0755);
    s_mkdir(bv, 0755);
    s_mkdir(bvbin, 0755);
    CHECK(symlink("/bin/sh", bvpy) == 0);
    s_mkdir(bproj, 0755);
    CHECK(symlink(bv, benv) == 0);
    s_expect_distrust(bproj, benv, bpub);
    /* c: the directory above the project (and its .venv) is writable by
     * anyone: they may rename proj and put a tree of their own there. */
    char *c = xasprintf("%s/c", p), *cproj = xasprintf("%s/c/proj", p), *cenv = xasprintf("%s/c/proj/.venv", p);
    char *cbin = xasprintf("%s/bin", cenv), *cpy = xasprintf("%s/bin/python", cenv);
    s_mkdir(c, 0777);
    s_mkdir(cproj, 0755);
    s_mkdir(cenv, 0755);
    s_mkdir(cbin, 0755);
    CHECK(symlink("/bin/sh", cpy) == 0);
    s_expect_distrust(cproj, cenv, c);
    /* The same tree with c private is trusted. */
    CHECK(chmod(c, 0755) == 0);
    char *why = interp_venv_distrust(cproj, cenv);
    if (why)
        fprintf(stderr, "  why: %s\n", why);
    CHECK(why == NULL);
    free(why);
    free(a), free(apub), free(aproj), free(aenv), free(abin), free(apy), free(alink);
    free(b), free(bpub), free(benvs), free(bv), free(bvbin), free(bvpy), free(bproj), free(benv);
    free(c), free(cproj), free(cenv), free(cbin), free(cpy);
    free(p);
}

/* "Writable by the group" is let pass only when the group is the user's
 * alone. A user whose primary group (passwd's gid) it is belongs to it
 * without being listed in /etc/group: such a user may write a
 * group-writable venv as well. Root only: a private mount namespace puts a
 * passwd and group of the test's own over /etc (the system's are not
 * touched). */
static void test_venv_private_group_has_no_hidden_member(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "  skipped: needs root (a private mount namespace over /etc/passwd)\n");
        return;
    }
    /* On the stack: the child ends with _exit, and a checker (valgrind)
     * would count heap copies it never freed. */
    char p[64], proj[128], env[192], bin[256], py[320], pw[128], gr[128];
    snprintf(p, sizeof p, "%s/pg", s_dir);
    snprintf(proj, sizeof proj, "%s/proj", p);
    snprintf(env, sizeof env, "%s/.venv", proj);
    snprintf(bin, sizeof bin, "%s/bin", env);
    snprintf(py, sizeof py, "%s/python", bin);
    snprintf(pw, sizeof pw, "%s/passwd", p);
    snprintf(gr, sizeof gr, "%s/group", p);
    s_mkdir(p, 0755);
    s_mkdir(proj, 0755);
    s_mkdir(env, 0755);
    s_mkdir(bin, 0755);
    int fd = open(py, O_WRONLY | O_CREAT | O_EXCL, 0775);
    CHECK(fd >= 0 && close(fd) == 0);
    CHECK(chmod(py, 0775) == 0 && chown(py, 0, 0) == 0);
    for (int hidden = 0; hidden < 2; hidden++) {
        FILE *f = fopen(pw, "w");
        fprintf(f, "root:x:0:0:root:/root:/bin/sh\n%s", hidden ? "bob:x:4242:0:bob:/nonexistent:/bin/sh\n" : "");
        fclose(f);
        f = fopen(gr, "w");
        fprintf(f, "root:x:0:\n");
        fclose(f);
        pid_t pid = fork();
        if (pid == 0) {
            /* "none": a type the kernel ignores for these, not NULL (valgrind) */
            if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
                mount(pw, "/etc/passwd", "none", MS_BIND, NULL) < 0 ||
                mount(gr, "/etc/group", "none", MS_BIND, NULL) < 0)
                _exit(3);
            char *why = interp_venv_distrust(proj, env);
            int rc = why ? 1 : 0;
            free(why);
            _exit(rc);
        }
        int st = 0;
        CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
        /* no hidden member: group root is root's alone, the venv passes;
         * bob's primary group is root: refused */
        CHECK_EQ_INT(WEXITSTATUS(st), (hidden ? 1 : 0));
    }
}

int main(void)
{
    if (!mkdtemp(s_dir))
        return 2;
    RUN_CASE(test_planted_symlinks_are_not_followed);
    RUN_CASE(test_write_failure_leaves_nothing);
    RUN_CASE(test_read_reports_fstat_failure);
    RUN_CASE(test_venv_trust_covers_the_whole_way);
    RUN_CASE(test_venv_private_group_has_no_hidden_member);
    char *cmd = xasprintf("rm -rf '%s'", s_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", s_dir);
    free(cmd);
    return check_report("files");
}
