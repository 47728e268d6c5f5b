/* The `rat` manager's state file and names (bridge/rat/mgr_state.c,
 * mgr_names.c): a state.yaml the Go rat CLI wrote is read, and what rat-py
 * writes is, byte for byte, what the Go CLI writes for the same state
 * (fixtures/state_go.yaml is go-yaml v3.0.1's output for the Go CLI's
 * types), so each reads the other's; hostile files are bounded and
 * refused item by item; stale entries are marked stopped; names resolve as
 * the Go CLI resolves them; only a proven server is signalled; and
 * mgr_client reads curl's header lines by their length. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "check.h"
#include "fileio.h"
#include "mem.h"
#include "mgr_client.h"
#include "mgr_daemon.h"
#include "mgr_names.h"
#include "mgr_state.h"

static const char *s_fixtures = "fixtures";
static char s_err[512];
#define err_buf() s_err

static mgr_state_t s_empty(void)
{
    mgr_state_t st;
    memset(&st, 0, sizeof st);
    st.lock_fd = -1;
    return st;
}

static void test_reads_what_go_wrote_and_writes_it_back_the_same(void)
{
    char *path = xasprintf("%s/state_go.yaml", s_fixtures);
    size_t len = 0;
    char *go = fileio_read(path, 1 << 20, &len);
    CHECK(go != NULL);
    if (!go) {
        free(path);
        return;
    }
    mgr_state_t st = s_empty();
    char err[256];
    CHECK_EQ_INT(mgr_state_parse(&st, go, len, err, sizeof err), 0);
    CHECK_EQ_INT(st.nkernels, 2);
    CHECK_EQ_INT(st.nruntimes, 2);
    mgr_kernel_t *k = mgr_state_kernel(&st, "py@myproj");
    CHECK(k != NULL);
    if (k) {
        CHECK_EQ_STR(k->lang, "py");
        CHECK_EQ_INT(k->port, 8717);
        CHECK_EQ_INT(k->pid, 41235);
        CHECK_EQ_STR(k->cwd, "/home/me/my proj");
        CHECK_EQ_STR(k->venv, "/home/me/my proj/.venv");
        CHECK_EQ_STR(k->status, "running");
        CHECK_EQ_STR(k->started, "2026-01-01T10:00:00.123456789+01:00");
        CHECK(k->stopped == NULL);
    }
    k = mgr_state_kernel(&st, "sh@myproj");
    CHECK(k && k->port == 0 && !strcmp(k->status, "stopped") && !strcmp(k->stopped, "2026-01-01T09:30:00Z"));
    mgr_runtime_t *r = mgr_state_runtime(&st, "py-nb-notes-1a2b3c");
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_STR(r->cwd, "/home/me/notes: 2026");
        CHECK_EQ_STR(r->runtime_path, "/opt/py/bin/python3");
        CHECK_EQ_INT(r->noptions, 2);
        CHECK_EQ_INT(r->nenv, 4);
        bool token = false, yes = false, empty = false;
        for (size_t i = 0; i < r->nenv; i++) {
            token |= !strcmp(r->env[i].key, "TOKEN") && !strcmp(r->env[i].value, "a #b");
            yes |= !strcmp(r->env[i].key, "YES") && !strcmp(r->env[i].value, "yes");
            empty |= !strcmp(r->env[i].key, "EMPTY") && !strcmp(r->env[i].value, "");
        }
        CHECK(token && yes && empty);
    }
    /* Written back: the same bytes go-yaml wrote. */
    char *ours = mgr_state_text(&st, err, sizeof err);
    CHECK_EQ_STR(ours, go);
    free(ours);
    mgr_state_clear(&st);
    free(go);
    free(path);
}

static void test_an_empty_state_and_a_new_entry_in_the_go_layout(void)
{
    mgr_state_t st = s_empty();
    char err[256];
    char *t = mgr_state_text(&st, err, sizeof err);
    CHECK_EQ_STR(t, "kernels: []\n");
    free(t);
    mgr_kernel_t *k = mgr_state_put_kernel(&st, "py-nb-x-abc123");
    k->lang = xstrdup("py");
    k->port = 8720;
    k->pid = 77;
    k->cwd = xstrdup("/w/yes");
    k->status = xstrdup("running");
    k->started = xstrdup("2026-01-01T10:00:00Z");
    mgr_runtime_t *r = mgr_state_put_runtime(&st, "py-nb-x-abc123");
    r->lang = xstrdup("py");
    r->cwd = xstrdup("/w/#tag: x");
    t = mgr_state_text(&st, err, sizeof err);
    CHECK_EQ_STR(t, "kernels:\n"
                    "    - name: py-nb-x-abc123\n"
                    "      lang: py\n"
                    "      port: 8720\n"
                    "      pid: 77\n"
                    "      cwd: /w/yes\n"
                    "      status: running\n"
                    "      started: 2026-01-01T10:00:00Z\n"
                    "runtimes:\n"
                    "    - name: py-nb-x-abc123\n"
                    "      lang: py\n"
                    "      cwd: '/w/#tag: x'\n");
    /* And it reads back. */
    mgr_state_t back = s_empty();
    CHECK_EQ_INT(mgr_state_parse(&back, t, strlen(t), err, sizeof err), 0);
    CHECK(mgr_state_runtime(&back, "py-nb-x-abc123") && !strcmp(mgr_state_runtime(&back, "py-nb-x-abc123")->cwd,
                                                               "/w/#tag: x"));
    mgr_state_clear(&back);
    free(t);
    /* A time as Go writes one. */
    char *now = mgr_state_now();
    CHECK(strlen(now) >= 20 && now[4] == '-' && now[10] == 'T');
    free(now);
    mgr_state_clear(&st);
}

static void test_hostile_files(void)
{
    char err[256];
    mgr_state_t st = s_empty();
    CHECK_EQ_INT(mgr_state_parse(&st, "kernels: [oops", 14, err, sizeof err), -1);
    CHECK(strncmp(err, "line ", 5) == 0);
    CHECK_EQ_INT(mgr_state_parse(&st, "- a\n- b\n", 8, err, sizeof err), -1);
    /* Items are checked one by one: the bad ones go, the good one stays. */
    const char *mixed = "kernels:\n"
                        "    - name: ../../etc\n      port: 1\n"
                        "    - name: ok\n      lang: py\n      port: 8717\n      pid: 5\n      status: running\n"
                        "    - name: badport\n      port: 99999\n"
                        "    - name: notnum\n      pid: abc\n"
                        "    - name: ok\n      port: 2\n"
                        "    - name: weird\n      status: paused\n"
                        "    - name: [1, 2]\n"
                        "    - just a string\n"
                        "runtimes: {a: 1}\n"
                        "other: ignored\n";
    CHECK_EQ_INT(mgr_state_parse(&st, mixed, strlen(mixed), err, sizeof err), 0);
    CHECK_EQ_INT(st.nkernels, 1);
    CHECK(mgr_state_kernel(&st, "ok") && mgr_state_kernel(&st, "ok")->port == 8717);
    CHECK_EQ_INT(st.nruntimes, 0);
    mgr_state_clear(&st);
    /* A NUL inside a value: that item is dropped (an escape for U+00FF is
     * text, and stays); raw bytes that are not UTF-8: not a YAML file. */
    const char bad[] = "kernels:\n    - name: a\n      cwd: \"\\xff\"\n    - name: b\n      cwd: \"x\\0y\"\n";
    CHECK_EQ_INT(mgr_state_parse(&st, bad, sizeof bad - 1, err, sizeof err), 0);
    CHECK_EQ_INT(st.nkernels, 1);
    CHECK(mgr_state_kernel(&st, "a") && !strcmp(mgr_state_kernel(&st, "a")->cwd, "\xc3\xbf"));
    mgr_state_clear(&st);
    CHECK_EQ_INT(mgr_state_parse(&st, "kernels:\n    - name: \xff\n", 22, err, sizeof err), -1);
    mgr_state_clear(&st);
    char *huge = xmalloc(MGR_STATE_MAX + 2);
    memset(huge, ' ', MGR_STATE_MAX + 1);
    huge[MGR_STATE_MAX + 1] = '\0';
    CHECK_EQ_INT(mgr_state_parse(&st, huge, MGR_STATE_MAX + 1, err, sizeof err), -1);
    free(huge);
    /* An alias bomb stays small: values are read at one depth only. */
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nkernels: [*c, *c, *c]\n";
    CHECK_EQ_INT(mgr_state_parse(&st, bomb, strlen(bomb), err, sizeof err), 0);
    CHECK_EQ_INT(st.nkernels, 0);
    mgr_state_clear(&st);
}

static void test_stale_entries_are_marked_stopped(void)
{
    mgr_state_t st = s_empty();
    /* A pid that is gone. */
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    mgr_kernel_t *k = mgr_state_put_kernel(&st, "gone");
    k->pid = pid;
    k->port = 8717;
    k->status = xstrdup("running");
    /* A live pid that is not a server on that port (this test). */
    mgr_kernel_t *k2 = mgr_state_put_kernel(&st, "reused");
    k2->pid = getpid();
    k2->port = 8718;
    k2->status = xstrdup("running");
    /* No status: running if it has a pid, else stopped. */
    mgr_kernel_t *k3 = mgr_state_put_kernel(&st, "legacy");
    (void)k3;
    CHECK(mgr_state_normalize(&st));
    for (size_t i = 0; i < st.nkernels; i++) {
        CHECK_EQ_STR(st.kernels[i].status, "stopped");
        CHECK_EQ_INT(st.kernels[i].pid, 0);
        CHECK_EQ_INT(st.kernels[i].port, 0);
        CHECK(st.kernels[i].stopped != NULL);
    }
    CHECK(!mgr_state_normalize(&st));
    mgr_state_clear(&st);
}

/* A process that is not a server: `sh -c 'sleep 600; :' sh ARGS...` (its
 * argv holds ARGS; the `; :` keeps the shell from exec'ing sleep), leading
 * a process group of its own as a server does. */
static pid_t s_bystander(const char *a1, const char *a2, const char *a3)
{
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        /* Nothing of ours held open (ctest waits for its pipes). */
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
        execl("/bin/sh", "sh", "-c", "sleep 600; :", "sh", a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    /* Until it has exec'd, its argv is ours: wait for sh's. */
    for (int i = 0; i < 400; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
        size_t len = 0;
        char *cmd = fileio_read(path, 4096, &len);
        bool sh = cmd && len > 3 && !strcmp(cmd, "sh");
        free(cmd);
        if (sh)
            break;
        usleep(5000);
    }
    return pid;
}

/* Whether pid, our child, is still running (not exited nor killed). */
static bool s_running(pid_t pid)
{
    return waitpid(pid, NULL, WNOHANG) == 0;
}

static mgr_kernel_t *s_put_running(mgr_state_t *st, const char *name, pid_t pid, long port)
{
    mgr_kernel_t *k = mgr_state_put_kernel(st, name);
    k->pid = pid;
    k->port = port;
    k->status = xstrdup("running");
    return k;
}

static void test_only_a_proven_server_is_signalled(void)
{
    mgr_state_t st = s_empty();
    char why[512];
    pid_t plain = s_bystander("-x", "-y", "-z");
    pid_t like = s_bystander("--http", "--port", "8799");
    mgr_proc_id_t id;
    CHECK_EQ_INT(mgr_proc_id(plain, &id), 0);
    CHECK(id.start > 0 && id.ino > 0);
    mgr_proc_id_t gone;
    CHECK_EQ_INT(mgr_proc_id(0, &gone), -1);

    /* Port 0, no identity: nothing shows it is a server (the old check
     * skipped the argv then and took it for alive). */
    mgr_kernel_t *k = s_put_running(&st, "port0", plain, 0);
    CHECK_EQ_INT(mgr_state_proc(k, why, sizeof why), MGR_PROC_GONE);
    CHECK(strstr(why, "no port and no identity") != NULL);
    CHECK(!mgr_state_alive(k));
    CHECK_EQ_INT(mgr_daemon_stop(k, why, sizeof why), 0);
    CHECK_EQ_STR(k->status, "stopped");
    CHECK(s_running(plain));

    /* An argv like a server's, no identity: alive, never signalled. */
    k = s_put_running(&st, "noid", like, 8799);
    CHECK_EQ_INT(mgr_state_proc(k, why, sizeof why), MGR_PROC_UNPROVEN);
    CHECK(mgr_state_alive(k));
    CHECK_EQ_INT(mgr_daemon_stop(k, why, sizeof why), -1);
    CHECK(strstr(why, "records no identity") != NULL);
    CHECK_EQ_STR(k->status, "running");
    CHECK(s_running(like));

    /* An identity that is not the process's: another start time, another
     * executable. */
    k = s_put_running(&st, "other", plain, 0);
    k->proc = id;
    k->proc.start++;
    CHECK_EQ_INT(mgr_state_proc(k, why, sizeof why), MGR_PROC_GONE);
    CHECK(strstr(why, "start time differs") != NULL);
    k->proc = id;
    k->proc.ino++;
    CHECK_EQ_INT(mgr_state_proc(k, why, sizeof why), MGR_PROC_GONE);
    CHECK(strstr(why, "executable differs") != NULL);
    CHECK_EQ_INT(mgr_daemon_stop(k, why, sizeof why), 0);
    CHECK(s_running(plain));
    /* Its own identity but a port its argv lacks. */
    k = s_put_running(&st, "wrongport", plain, 8798);
    k->proc = id;
    CHECK_EQ_INT(mgr_state_proc(k, why, sizeof why), MGR_PROC_GONE);

    /* Proven: stopped, and only then. */
    k = s_put_running(&st, "proven", plain, 0);
    k->proc = id;
    CHECK_EQ_INT(mgr_state_proc(k, why, sizeof why), MGR_PROC_PROVEN);
    CHECK_EQ_INT(mgr_daemon_stop(k, why, sizeof why), 0);
    CHECK_EQ_STR(k->status, "stopped");
    CHECK(k->pid == 0 && k->proc.start == 0);
    CHECK(!s_running(plain));
    /* Gone now: its identity cannot be read. */
    CHECK_EQ_INT(mgr_proc_id(plain, &gone), -1);

    kill(-plain, SIGKILL); /* the sleep its shell left */
    kill(-like, SIGKILL);
    waitpid(like, NULL, 0);
    mgr_state_clear(&st);
}

static void test_the_identity_round_trips_and_is_checked(void)
{
    mgr_state_t st = s_empty();
    char err[256];
    mgr_kernel_t *k = s_put_running(&st, "py@p", 4242, 8720);
    k->proc = (mgr_proc_id_t){123456789ULL, 2049, 18446744073709551615ULL};
    char *t = mgr_state_text(&st, err, sizeof err);
    CHECK(t && strstr(t, "\n      proc_start: 123456789\n      proc_dev: 2049\n"
                         "      proc_ino: 18446744073709551615\n") != NULL);
    mgr_state_t back = s_empty();
    CHECK_EQ_INT(mgr_state_parse(&back, t, strlen(t), err, sizeof err), 0);
    mgr_kernel_t *b = mgr_state_kernel(&back, "py@p");
    CHECK(b && b->proc.start == 123456789ULL && b->proc.dev == 2049 && b->proc.ino == 18446744073709551615ULL);
    mgr_state_clear(&back);
    free(t);
    /* Marked stopped: the identity goes with the pid, and is not written. */
    mgr_state_mark_stopped(k);
    t = mgr_state_text(&st, err, sizeof err);
    CHECK(t && !strstr(t, "proc_"));
    free(t);
    mgr_state_clear(&st);
    /* A value that is not a 64-bit number: the item is dropped. */
    static const char *const bad[] = {"-1", "1.5", "18446744073709551616", "abc", "' 7'"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *y = xasprintf("kernels:\n    - name: a\n      port: 1\n      pid: 2\n      proc_start: %s\n", bad[i]);
        CHECK_EQ_INT(mgr_state_parse(&st, y, strlen(y), err, sizeof err), 0);
        CHECK_EQ_INT(st.nkernels, 0);
        mgr_state_clear(&st);
        free(y);
    }
}

/* Every value comes back as written: line breaks YAML knows beyond \n
 * (NEL U+0085, LS U+2028, PS U+2029), controls, a BOM, characters libyaml
 * refuses to read raw, and what a plain scalar cannot start or end with.
 * A double-quoted value is also JSON (vscode-rat reads it with
 * JSON.parse), so escapes are \uXXXX. */
static void test_every_value_round_trips(void)
{
    static const char *values[] = {
        "/w/a\u2028b", "/w/a\u2029b", "/w/a\xc2\x85" "b", "\u2028", "/w/\xc2\x85", "a\u2028\u2029\xc2\x85z",
        " lead", "trail ", "\ttab", "tab\t", "a\tb", "a: b", "a:", "a #b", "#x", "a#b", "a\x01z", "a\rb",
        "a\r\nb", "a\nb", "\xef\xbb\xbf" "bom", "a\xef\xbb\xbf" "b", "a\x7fz", "a\xc2\x80z", "a\xc2\x9fz",
        "a\xef\xbf\xbez", "a\xef\xbf\xbfz", "- x", "-", "---", "...", "a\\b", "'q'", "\"dq\"", "\xc2\xa0",
        "a\xc2\xa0", "? x", "[x]", "{x}", "*x", "&x", "!x", "|x", ">x", "%x", "@x", "`x", "8717", "yes", "~",
        "null", "", "0o17", "1e3", ".inf", "<<", "\xf0\x9f\x90\x80 rat", "a\xe2\x80\x8bz", NULL, NULL,
    };
    /* Keys past the 1024 characters a YAML reader takes for an implicit
     * key (also an env key here). */
    char *long1 = xmalloc(1101), *long2 = xmalloc(4001);
    memset(long1, 'k', 1100), long1[1100] = '\0';
    memset(long2, 'x', 4000), long2[4000] = '\0';
    memcpy(long2 + 100, ": #\u2028", 6);
    values[sizeof values / sizeof values[0] - 2] = long1;
    values[sizeof values / sizeof values[0] - 1] = long2;
    char err[256];
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        const char *v = values[i];
        mgr_state_t st = s_empty();
        mgr_kernel_t *k = mgr_state_put_kernel(&st, "k");
        k->cwd = xstrdup(v);
        k->status = xstrdup("stopped");
        mgr_runtime_t *r = mgr_state_put_runtime(&st, "r");
        r->cwd = xstrdup(*v ? v : "/");
        r->env = xcalloc(1, sizeof *r->env);
        r->env[0] = (mgr_kv_t){xstrdup(*v ? v : "K"), xstrdup(v)};
        r->nenv = 1;
        char *t = mgr_state_text(&st, err, sizeof err);
        CHECK(t != NULL);
        mgr_state_t back = s_empty();
        int rc = t ? mgr_state_parse(&back, t, strlen(t), err, sizeof err) : -1;
        mgr_kernel_t *bk = mgr_state_kernel(&back, "k");
        mgr_runtime_t *br = mgr_state_runtime(&back, "r");
        bool same = rc == 0 && bk && br && !strcmp(bk->cwd, v) && !strcmp(br->cwd, *v ? v : "/") && br->nenv == 1 &&
                    !strcmp(br->env[0].key, *v ? v : "K") && !strcmp(br->env[0].value, v);
        if (!same)
            fprintf(stderr, "value %zu does not round-trip (rc %d, %s):\n%s\n", i, rc, rc ? err : "changed", t ? t : "");
        CHECK(same);
        /* The cwd line, as vscode-rat reads it: a double-quoted value is JSON. */
        const char *line = t ? strstr(t, "\n      cwd: ") : NULL;
        if (line && line[12] == '"') {
            const char *q = line + 12, *end = strchr(q, '\n');
            char *js = xstrndup(q, (size_t)(end - q));
            json_object *o = json_tokener_parse(js);
            CHECK(o && json_object_is_type(o, json_type_string) && !strcmp(json_object_get_string(o), v));
            json_object_put(o);
            free(js);
        }
        mgr_state_clear(&back);
        mgr_state_clear(&st);
        free(t);
    }
    free(long1);
    free(long2);
}

/* mgr_client reads curl's header lines by their length: curl does not
 * terminate them, and what follows a line in its buffer is not that line
 * (here the next header, which a strstr on the line used to find). */
static void test_client_header_lines_are_read_by_length(void)
{
    static const char lines[] = "Content-Type: application/json\r\nX-Other: text/event-stream\r\n";
    size_t first = strlen("Content-Type: application/json\r\n");
    /* Exactly the line's bytes in their own allocation (ASan sees a read
     * past it), and in the buffer with the next line after it. */
    char *own = xmalloc(first);
    memcpy(own, lines, first);
    CHECK_EQ_INT(mgr_client_header_sse(own, first), 0);
    free(own);
    CHECK_EQ_INT(mgr_client_header_sse(lines, first), 0);
    CHECK_EQ_INT(mgr_client_header_sse("content-type: text/event-stream\r\n", 33), 1);
    CHECK_EQ_INT(mgr_client_header_sse("Content-Type: text/event-stream", 20), 0);
    CHECK_EQ_INT(mgr_client_header_sse(lines + first, sizeof lines - 1 - first), -1);
    CHECK_EQ_INT(mgr_client_header_sse("Content-Type:", 13), -1);
}

static void test_names(void)
{
    CHECK(mgr_names_valid("py@proj"));
    CHECK(mgr_names_valid("py-nb-notes-1a2b3c"));
    CHECK(mgr_names_valid("py@rat.2"));
    CHECK(!mgr_names_valid("-x"));
    CHECK(!mgr_names_valid("a/b"));
    CHECK(!mgr_names_valid(""));
    char *s = mgr_names_slug("  my app (v2)  ");
    CHECK_EQ_STR(s, "my-app-v2");
    free(s);
    s = mgr_names_slug("--..");
    CHECK_EQ_STR(s, "project");
    free(s);
    s = mgr_names_slug("café");
    CHECK_EQ_STR(s, "caf");
    free(s);
    CHECK_EQ_STR(mgr_names_lang("python"), "py");
    CHECK_EQ_STR(mgr_names_lang("ju"), "jl");
    CHECK_EQ_STR(mgr_names_infer_lang("py-ml"), "py");
    CHECK_EQ_STR(mgr_names_infer_lang("py@proj"), "py");
    CHECK_EQ_STR(mgr_names_infer_lang("r-stats"), "r");
    CHECK(mgr_names_infer_lang("zzz") == NULL);
    char err[512];
    CHECK(mgr_names_prog("pi", err, sizeof err) == NULL && strstr(err, "Go rat"));
    CHECK_EQ_STR(mgr_names_prog("jl", err, sizeof err), "rat-ju");
}

static void test_resolution(void)
{
    char tmpl[] = "/tmp/rat-test-names-XXXXXX";
    char *root = mkdtemp(tmpl);
    CHECK(root != NULL);
    char *proj = xasprintf("%s/My Proj", root), *sub = xasprintf("%s/My Proj/src", root);
    char *git = xasprintf("%s/My Proj/.git", root), *venv = xasprintf("%s/My Proj/.venv/bin", root);
    char *other = xasprintf("%s/other/My Proj", root), *otherpar = xasprintf("%s/other", root);
    mkdir(proj, 0700);
    mkdir(sub, 0700);
    mkdir(git, 0700);
    char *v1 = xasprintf("%s/My Proj/.venv", root);
    mkdir(v1, 0700);
    mkdir(venv, 0700);
    char *py = xasprintf("%s/python", venv);
    fclose(fopen(py, "w"));
    mkdir(otherpar, 0700);
    mkdir(other, 0700);
    char *omark = xasprintf("%s/Makefile", other);
    fclose(fopen(omark, "w"));

    mgr_state_t st = s_empty();
    mgr_resolved_t r;
    /* A language from a subfolder: the project's name, slugged; new; venv. */
    CHECK_EQ_INT(mgr_names_resolve(&st, "python", sub, &r, err_buf(), 512), 0);
    CHECK_EQ_STR(r.name, "py@My-Proj");
    CHECK_EQ_STR(r.cwd, proj);
    CHECK_EQ_STR(r.venv, v1);
    CHECK(r.is_new);
    mgr_resolved_free(&r);
    /* Taken by another folder: qualified with the parent. */
    mgr_kernel_t *k = mgr_state_put_kernel(&st, "py@My-Proj");
    k->lang = xstrdup("py");
    k->cwd = xstrdup(proj);
    k->status = xstrdup("stopped");
    CHECK_EQ_INT(mgr_names_resolve(&st, "py", other, &r, err_buf(), 512), 0);
    CHECK_EQ_STR(r.name, "py@other-My-Proj");
    mgr_resolved_free(&r);
    /* The same folder: the existing entry. */
    CHECK_EQ_INT(mgr_names_resolve(&st, "py", proj, &r, err_buf(), 512), 0);
    CHECK_EQ_STR(r.name, "py@My-Proj");
    CHECK(!r.is_new);
    mgr_resolved_free(&r);
    /* Exact, saved runtime (empty cwd: the caller's), instance, prefix. */
    mgr_runtime_t *rt = mgr_state_put_runtime(&st, "py-global");
    rt->lang = xstrdup("py");
    CHECK_EQ_INT(mgr_names_resolve(&st, "py-global", "/tmp", &r, err_buf(), 512), 0);
    CHECK_EQ_STR(r.cwd, "/tmp");
    mgr_resolved_free(&r);
    CHECK_EQ_INT(mgr_names_resolve(&st, "py-global.2", "/tmp", &r, err_buf(), 512), 0);
    CHECK_EQ_STR(r.name, "py-global.2");
    CHECK(r.is_new);
    mgr_resolved_free(&r);
    CHECK_EQ_INT(mgr_names_resolve(&st, "py-g", "/tmp", &r, err_buf(), 512), 0);
    CHECK_EQ_STR(r.name, "py-global");
    mgr_resolved_free(&r);
    mgr_runtime_t *rt2 = mgr_state_put_runtime(&st, "py@My-Other");
    rt2->lang = xstrdup("py");
    CHECK_EQ_INT(mgr_names_resolve(&st, "py@My", "/tmp", &r, err_buf(), 512), -1);
    CHECK(strstr(err_buf(), "multiple runtimes match") != NULL);
    CHECK_EQ_INT(mgr_names_resolve(&st, "nothing", "/tmp", &r, err_buf(), 512), -1);
    CHECK(strstr(err_buf(), "no runtime matching") != NULL);
    mgr_state_clear(&st);
    char *cmd = xasprintf("rm -rf '%s'", root);
    CHECK_EQ_INT(system(cmd), 0);
    free(cmd);
    free(proj), free(sub), free(git), free(venv), free(other), free(otherpar), free(v1), free(py), free(omark);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        s_fixtures = argv[1];
    test_reads_what_go_wrote_and_writes_it_back_the_same();
    test_an_empty_state_and_a_new_entry_in_the_go_layout();
    test_hostile_files();
    test_stale_entries_are_marked_stopped();
    test_only_a_proven_server_is_signalled();
    test_the_identity_round_trips_and_is_checked();
    test_every_value_round_trips();
    test_client_header_lines_are_read_by_length();
    test_names();
    test_resolution();
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}
