/* mgr_repl: the `rat NAME` REPL (see mgr_repl.h). */
#include "mgr_repl.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include <json-c/json.h>

#include "buf.h"
#include "edit_dl.h"
#include "mem.h"
#include "mgr_client.h"
#include "mgr_state.h"

#define HISTORY_MAX 1000
#define RUN_WAIT_S 3600.0     /* run's longest wait; past it, ctl wait follows */
#define COMPLETE_SHOW 60      /* candidates listed at most on TAB */

static volatile sig_atomic_t s_sigint;
static mgr_client_t *s_client;   /* for the completion key */
static char s_prompt[256];
static bool s_tty;

static void s_on_sigint(int sig)
{
    (void)sig;
    s_sigint = 1;
}

/* SIGINT without SA_RESTART: a read at the prompt returns EINTR. */
static void s_catch_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

static char *s_prompt_fn(EditLine *el)
{
    (void)el;
    return s_prompt;
}

/* ------------------------------------------------------------ output */

static void s_on_note(void *ud, const char *method, json_object *params)
{
    (void)ud;
    if (strcmp(method, "notifications/message") != 0)
        return;
    json_object *logger = NULL, *data = NULL;
    if (!json_object_object_get_ex(params, "data", &data) || !json_object_is_type(data, json_type_string))
        return;
    bool err = json_object_object_get_ex(params, "logger", &logger) &&
               !strcmp(json_object_get_string(logger), "stderr");
    FILE *f = err ? stderr : stdout;
    fputs(json_object_get_string(data), f);
    fflush(f);
}

static const char *s_str(json_object *o, const char *k)
{
    json_object *v = NULL;
    return o && json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

/* What the stream did not show: saved images and HTML, the error, the
 * footer (a value's or display's text/plain was streamed with the
 * output). */
static void s_show_result(json_object *res)
{
    json_object *sc = NULL, *outs = NULL, *err = NULL, *tb = NULL;
    if (!json_object_object_get_ex(res, "structuredContent", &sc)) {
        char *t = mgr_client_text(res);
        printf("%s\n", t);
        free(t);
        return;
    }
    if (json_object_object_get_ex(sc, "outputs", &outs) && json_object_is_type(outs, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(outs); i++) {
            json_object *it = json_object_array_get_idx(outs, i), *data = NULL, *assets = NULL;
            const char *type = s_str(it, "type");
            if (!type || !strcmp(type, "stream") || !strcmp(type, "clear_output"))
                continue;
            const char *plain = json_object_object_get_ex(it, "data", &data) ? s_str(data, "text/plain") : NULL;
            bool shown = false;
            if (json_object_object_get_ex(it, "assets", &assets))
                for (size_t k = 0; k < json_object_array_length(assets); k++) {
                    json_object *a = json_object_array_get_idx(assets, k);
                    const char *where = s_str(a, "url") ? s_str(a, "url") : s_str(a, "file");
                    printf("[%s: %s]\n", s_str(a, "mime") ? s_str(a, "mime") : "asset",
                           where ? where : (s_str(a, "error") ? s_str(a, "error") : "?"));
                    shown = true;
                }
            (void)plain; /* text/plain came with the stream (rat/output's batches carry it) */
            (void)shown;
        }
    }
    if (json_object_object_get_ex(sc, "error", &err) && json_object_is_type(err, json_type_object)) {
        if (json_object_object_get_ex(err, "traceback", &tb) && json_object_array_length(tb) > 0) {
            for (size_t i = 0; i < json_object_array_length(tb); i++)
                fprintf(stderr, "%s\n", json_object_get_string(json_object_array_get_idx(tb, i)));
        } else {
            fprintf(stderr, "%s: %s\n", s_str(err, "ename") ? s_str(err, "ename") : "Error",
                    s_str(err, "evalue") ? s_str(err, "evalue") : "");
        }
    } else if (s_str(sc, "failure")) {
        fprintf(stderr, "%s\n", s_str(sc, "failure"));
    }
    const char *footer = s_str(sc, "footer");
    if (footer && s_tty)
        fprintf(stderr, "\033[2m%s\033[0m\n", footer);
    fflush(stdout);
}

/* A line from the terminal without echo (password prompts). */
static char *s_read_secret(const char *prompt)
{
    struct termios old, quiet;
    bool tty = isatty(0) && tcgetattr(0, &old) == 0;
    fputs(prompt, stderr);
    fflush(stderr);
    if (tty) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(0, TCSAFLUSH, &quiet);
    }
    char buf[4096];
    char *r = fgets(buf, sizeof buf, stdin);
    if (tty) {
        tcsetattr(0, TCSAFLUSH, &old);
        fputc('\n', stderr);
    }
    if (!r)
        return NULL;
    buf[strcspn(buf, "\n")] = '\0';
    return xstrdup(buf);
}

static char *s_read_answer(const char *prompt)
{
    /* Output before the prompt was streamed; the prompt itself is ours. */
    fputs(prompt, stdout);
    fflush(stdout);
    char buf[65536];
    if (!fgets(buf, sizeof buf, stdin))
        return NULL;
    buf[strcspn(buf, "\n")] = '\0';
    return xstrdup(buf);
}

/* Runs code to its end: streams, answers input(), follows past `wait`. */
static void s_run(const char *code)
{
    json_object *args = json_object_new_object();
    json_object_object_add(args, "code", json_object_new_string(code));
    json_object_object_add(args, "wait", json_object_new_double(RUN_WAIT_S));
    const char *tool = "run";
    s_sigint = 0;
    for (;;) {
        char err[1024];
        json_object *res = mgr_client_call(s_client, tool, args, 0, s_on_note, NULL, &s_sigint, err, sizeof err);
        json_object_put(args);
        args = NULL;
        if (!res) {
            fprintf(stderr, "rat: %s\n", err);
            return;
        }
        json_object *sc = NULL, *in = NULL, *pw = NULL;
        const char *status = json_object_object_get_ex(res, "structuredContent", &sc) ? s_str(sc, "status") : NULL;
        /* A run waiting for input() carries `input` {prompt, password}. */
        if (sc && json_object_object_get_ex(sc, "input", &in) && json_object_is_type(in, json_type_object)) {
            const char *prompt = s_str(in, "prompt");
            bool password = json_object_object_get_ex(in, "password", &pw) && json_object_get_boolean(pw);
            char *answer = password ? s_read_secret(prompt ? prompt : "") : s_read_answer(prompt ? prompt : "");
            json_object_put(res);
            args = json_object_new_object();
            if (!answer || s_sigint) {
                /* EOF or Ctrl-C at the prompt: stop the run. */
                free(answer);
                json_object_object_add(args, "op", json_object_new_string("cancel"));
                json_object *c = mgr_client_call(s_client, "ctl", args, 10000, NULL, NULL, NULL, err, sizeof err);
                json_object_put(c);
                json_object_put(args);
                args = json_object_new_object();
                s_sigint = 0;
                tool = "ctl";
                json_object_object_add(args, "op", json_object_new_string("wait"));
                continue;
            }
            json_object_object_add(args, "code", json_object_new_string(""));
            json_object_object_add(args, "input", json_object_new_string(answer));
            json_object_object_add(args, "wait", json_object_new_double(RUN_WAIT_S));
            free(answer);
            tool = "run";
            continue;
        }
        if (status && (!strcmp(status, "running") || !strcmp(status, "queued"))) {
            json_object_put(res);
            args = json_object_new_object();
            json_object_object_add(args, "op", json_object_new_string("wait"));
            tool = "ctl";
            continue;
        }
        s_show_result(res);
        json_object_put(res);
        return;
    }
}

/* ------------------------------------------------------------ completion */

static unsigned char s_complete(EditLine *el, int ch)
{
    (void)ch;
    const LineInfo *li = edit_dl.el_line(el);
    size_t upto = (size_t)(li->cursor - li->buffer);
    char *code = xstrndup(li->buffer, upto);
    json_object *args = json_object_new_object();
    json_object_object_add(args, "code", json_object_new_string(code));
    char err[256];
    json_object *res = mgr_client_call(s_client, "look", args, 5000, NULL, NULL, NULL, err, sizeof err);
    json_object_put(args);
    json_object *sc = NULL, *items = NULL, *rs = NULL;
    unsigned char rc = CC_REFRESH_BEEP;
    if (res && json_object_object_get_ex(res, "structuredContent", &sc) &&
        json_object_object_get_ex(sc, "items", &items) && json_object_object_get_ex(sc, "replace_start", &rs)) {
        size_t n = json_object_array_length(items);
        /* replace_start counts characters: the byte offset of that one. */
        long start_cp = (long)json_object_get_int64(rs);
        size_t start = 0;
        for (long cp = 0; start < upto && cp < start_cp; start++)
            if (((unsigned char)code[start] & 0xC0) != 0x80 && ++cp > start_cp)
                break;
        while (start < upto && ((unsigned char)code[start] & 0xC0) == 0x80)
            start++;
        const char *typed = code + start;
        size_t tl = upto - start;
        /* The common prefix of the labels. */
        char *common = NULL;
        for (size_t i = 0; i < n; i++) {
            const char *l = s_str(json_object_array_get_idx(items, i), "label");
            if (!l)
                continue;
            if (!common) {
                common = xstrdup(l);
            } else {
                size_t k = 0;
                while (common[k] && common[k] == l[k])
                    k++;
                common[k] = '\0';
            }
        }
        if (common && strlen(common) > tl && strncmp(common, typed, tl) == 0) {
            edit_dl.el_insertstr(el, common + tl);
            rc = CC_REFRESH;
        } else if (n > 1) {
            fputc('\n', stdout);
            for (size_t i = 0; i < n && i < COMPLETE_SHOW; i++) {
                const char *label = s_str(json_object_array_get_idx(items, i), "label");
                printf("%s%s", label ? label : "?", i + 1 < n ? "  " : ""); /* a kernel's item without one */
            }
            if (n > COMPLETE_SHOW)
                printf("… %zu more", n - COMPLETE_SHOW);
            fputc('\n', stdout);
            rc = CC_REDISPLAY;
        }
        free(common);
    }
    json_object_put(res);
    free(code);
    return rc;
}

/* ------------------------------------------------------------ input */

/* Whether code needs more lines: a last line ending in ':' or '\', or
 * brackets left open (strings and comments skipped, roughly). */
static bool s_incomplete(const char *code)
{
    int depth = 0;
    char quote = 0;
    for (const char *p = code; *p; p++) {
        if (quote) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == quote)
                quote = 0;
            continue;
        }
        if (*p == '#') {
            while (p[1] && p[1] != '\n')
                p++;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if (strchr("([{", *p)) {
            depth++;
        } else if (strchr(")]}", *p) && depth > 0) {
            depth--;
        }
    }
    size_t n = strlen(code);
    while (n && (code[n - 1] == ' ' || code[n - 1] == '\t' || code[n - 1] == '\n'))
        n--;
    return depth > 0 || (n && (code[n - 1] == ':' || code[n - 1] == '\\'));
}

typedef struct {
    EditLine *el;
    History *hist;
    HistEvent ev;
    char *histfile;
} s_editor_t;

/* A Ctrl-D typed while the terminal was cooked (during a run, when the
 * REPL reads nothing) waits as the tty's end-of-file: the terminal is
 * readable, yet holds no byte (FIONREAD leaves end-of-files out). Once
 * libedit makes the terminal raw, Linux hands it on as a NUL byte. */
static bool s_eof_waiting(void)
{
    struct pollfd p = {.fd = 0, .events = POLLIN};
    int n = -1;
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) && ioctl(0, FIONREAD, &n) == 0 && n == 0;
}

/* Bound to NUL while such an end-of-file waits (s_getline): on an empty
 * line it is the Ctrl-D it was, and the REPL leaves. Otherwise NUL keeps
 * libedit's em-set-mark (Ctrl-Space in many terminals): without this the
 * NUL went into the line unseen, and every later Ctrl-D beeped. */
static unsigned char s_nul(EditLine *el, int ch)
{
    (void)ch;
    const LineInfo *li = edit_dl.el_line(el);
    if (li->buffer == li->lastchar) {
        fputs("^D", stdout);
        return CC_EOF;
    }
    return CC_NORM;
}

/* One line (without its newline; caller owns), or NULL at EOF. *intr when
 * Ctrl-C was pressed at the prompt. */
static char *s_getline(s_editor_t *ed, const char *prompt, bool *intr)
{
    *intr = false;
    snprintf(s_prompt, sizeof s_prompt, "%s", prompt);
    s_sigint = 0;
    if (ed->el) {
        /* libedit writes the prompt, then makes the terminal raw: a Ctrl-D
         * typed before (or in between, a window of microseconds a person
         * cannot hit) is not one it would see. */
        edit_dl.el_set(ed->el, EL_BIND, "^@", s_eof_waiting() ? "rat-nul" : "em-set-mark", NULL);
        int count = 0;
        errno = 0;
        const char *l = edit_dl.el_gets(ed->el, &count);
        if (!l) {
            if (s_sigint || errno == EINTR) {
                *intr = true;
                edit_dl.el_reset(ed->el);
                fputc('\n', stdout);
                return xstrdup("");
            }
            return NULL;
        }
        char *s = xstrndup(l, (size_t)count);
        s[strcspn(s, "\n")] = '\0';
        return s;
    }
    if (s_tty) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    buf_t b;
    buf_init(&b, 1u << 24);
    int c;
    while ((c = fgetc(stdin)) != EOF && c != '\n')
        buf_putc(&b, (char)c);
    if (c == EOF && !b.len) {
        buf_free(&b);
        if (s_sigint) {
            clearerr(stdin);
            *intr = true;
            return xstrdup("");
        }
        return NULL;
    }
    return buf_take(&b);
}

static void s_editor_open(s_editor_t *ed, const char *name)
{
    memset(ed, 0, sizeof *ed);
    char err[256];
    if (!s_tty || edit_dl_load(err, sizeof err) < 0) {
        if (s_tty)
            fprintf(stderr, "rat: %s; reading plain lines\n", err);
        return;
    }
    ed->el = edit_dl.el_init("rat", stdin, stdout, stderr);
    ed->hist = edit_dl.history_init();
    if (!ed->el || !ed->hist) {
        if (ed->el)
            edit_dl.el_end(ed->el);
        if (ed->hist)
            edit_dl.history_end(ed->hist);
        ed->el = NULL;
        ed->hist = NULL;
        return;
    }
    edit_dl.history(ed->hist, &ed->ev, H_SETSIZE, HISTORY_MAX);
    edit_dl.history(ed->hist, &ed->ev, H_SETUNIQUE, 1);
    edit_dl.el_set(ed->el, EL_EDITOR, "emacs");
    edit_dl.el_set(ed->el, EL_PROMPT, s_prompt_fn);
    edit_dl.el_set(ed->el, EL_HIST, edit_dl.history, ed->hist);
    /* Wide and static: el_set(EL_ADDFN) stores wcsdup'ed copies of both
     * strings that el_end never frees (libedit says so: "XXX: The two
     * strdup's leak"); el_wset stores the pointers given. */
    edit_dl.el_wset(ed->el, EL_ADDFN, L"rat-complete", L"complete from the kernel", s_complete);
    edit_dl.el_set(ed->el, EL_BIND, "^I", "rat-complete", NULL);
    edit_dl.el_wset(ed->el, EL_ADDFN, L"rat-nul", L"a cooked Ctrl-D: leave on an empty line", s_nul);
    char *dir = mgr_state_dir();
    if (dir) {
        char *hd = xasprintf("%s/history", dir);
        mkdir(hd, 0700);
        ed->histfile = xasprintf("%s/%s", hd, name);
        /* libedit opens it with a blocking fopen, to load it here and to
         * save it at the end: a FIFO (or a device) there would hang the
         * REPL. Whatever is there and is not a regular file is left alone. */
        struct stat hs;
        if (stat(ed->histfile, &hs) == 0 && !S_ISREG(hs.st_mode)) {
            fprintf(stderr, "rat: %s is not a regular file: no history\n", ed->histfile);
            FREE_AND_NULL(ed->histfile);
        } else {
            edit_dl.history(ed->hist, &ed->ev, H_LOAD, ed->histfile);
        }
        free(hd);
        free(dir);
    }
}

static void s_editor_close(s_editor_t *ed)
{
    if (ed->hist && ed->histfile) {
        mode_t old = umask(077);
        edit_dl.history(ed->hist, &ed->ev, H_SAVE, ed->histfile);
        umask(old);
    }
    if (ed->el)
        edit_dl.el_end(ed->el);
    if (ed->hist)
        edit_dl.history_end(ed->hist);
    free(ed->histfile);
}

int mgr_repl_main(const char *name, long port)
{
    s_tty = isatty(0) && isatty(1);
    char err[1024];
    s_client = mgr_client_new(port, "rat", 10000, err, sizeof err);
    if (!s_client) {
        fprintf(stderr, "rat: cannot reach %s on port %ld: %s\n", name, port, err);
        return 1;
    }
    s_catch_sigint();
    s_editor_t ed;
    s_editor_open(&ed, name);
    if (s_tty)
        fprintf(stderr, "rat %s — http://127.0.0.1:%ld/mcp (the GUI's kernel too). Ctrl-C interrupts, Ctrl-D "
                        "leaves.\n", name, port);
    char *first = xasprintf("%s> ", name);
    buf_t code;
    buf_init(&code, 0);
    for (;;) {
        bool intr = false;
        char *line = s_getline(&ed, code.len ? "... " : first, &intr);
        if (!line)
            break;
        if (intr) {
            buf_reset(&code);
            free(line);
            continue;
        }
        bool blank = line[strspn(line, " \t")] == '\0';
        if (code.len && blank) {
            /* An empty line ends a block. */
        } else {
            if (code.len)
                buf_putc(&code, '\n');
            buf_puts(&code, line);
            if (s_incomplete(buf_str(&code)) || (code.len && strchr(buf_str(&code), '\n') && !blank &&
                                                 s_incomplete(line))) {
                free(line);
                continue;
            }
            if (strchr(buf_str(&code), '\n') && !blank && (line[0] == ' ' || line[0] == '\t')) {
                free(line);
                continue; /* inside an indented block: wait for the empty line */
            }
        }
        free(line);
        if (!code.len || buf_str(&code)[strspn(buf_str(&code), " \t\n")] == '\0') {
            buf_reset(&code);
            continue;
        }
        if (ed.hist)
            edit_dl.history(ed.hist, &ed.ev, H_ENTER, buf_str(&code));
        s_run(buf_str(&code));
        buf_reset(&code);
    }
    if (s_tty)
        fputc('\n', stdout);
    buf_free(&code);
    free(first);
    s_editor_close(&ed);
    mgr_client_destroy(&s_client);
    return 0;
}
