/* mgr_names: runtime names and their resolution (see mgr_names.h).
 * A circle with mgr_state, kept: one concept, the named runtimes of one
 * state file. Names resolve against the state; the state accepts only
 * entries whose name is valid (mgr_names_valid: names become file names). */
#include "mgr_names.h"

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fileio.h"
#include "interp.h"
#include "mem.h"

static const struct {
    const char *alias, *lang;
} s_aliases[] = {
    {"py", "py"},       {"python", "py"}, {"r", "r"},         {"jl", "jl"},           {"ju", "jl"},
    {"julia", "jl"},    {"sh", "sh"},     {"bash", "sh"},     {"js", "js"},           {"node", "js"},
    {"javascript", "js"}, {"pi", "pi"},   {"slack", "slack"}, {"jupyter", "jupyter"}, {"notebook", "jupyter"},
    {"ipynb", "jupyter"},
};

/* The project markers (the Go CLI's list). */
static const char *const s_markers[] = {
    ".git",          "pyproject.toml", "setup.py",     "setup.cfg",     "requirements.txt", "Pipfile",
    "tox.ini",       "DESCRIPTION",    "renv.lock",    "Project.toml",  "JuliaProject.toml", "package.json",
    "deno.json",     "deno.jsonc",     "Cargo.toml",   "go.mod",        "Gemfile",          "composer.json",
    "pom.xml",       "build.gradle",   "build.gradle.kts", "stack.yaml", "cabal.project",   "mix.exs",
    "pubspec.yaml",  "Package.swift",  "build.zig",    "CMakeLists.txt", "meson.build",     "Makefile",
    ".editorconfig",
};

bool mgr_names_valid(const char *name)
{
    if (!name || !*name || strlen(name) > 200)
        return false;
    char c = name[0];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
        return false;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.@-") == strlen(name);
}

const char *mgr_names_lang(const char *alias)
{
    for (size_t i = 0; alias && i < sizeof s_aliases / sizeof s_aliases[0]; i++)
        if (strcmp(alias, s_aliases[i].alias) == 0)
            return s_aliases[i].lang;
    return NULL;
}

const char *mgr_names_infer_lang(const char *name)
{
    const char *l = mgr_names_lang(name);
    if (l)
        return l;
    /* The part before the first -, _ or @ (py-ml, py_x, py@proj). */
    size_t n = strcspn(name, "-_@");
    if (n && name[n]) {
        char head[32];
        if (n < sizeof head) {
            memcpy(head, name, n);
            head[n] = '\0';
            if ((l = mgr_names_lang(head)))
                return l;
        }
    }
    static const char *const prefixes[] = {"javascript", "jupyter", "notebook", "python", "julia", "bash", "node",
                                           "ipynb",      "py",      "sh",       "js",     "jl",    "ju"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t pl = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], pl) == 0 && strlen(name) > pl)
            return mgr_names_lang(prefixes[i]);
    }
    return NULL;
}

const char *mgr_names_prog(const char *lang, char *err, size_t errlen)
{
    static const char *const map[][2] = {{"py", "rat-py"}, {"r", "rat-r"}, {"jl", "rat-ju"}, {"sh", "rat-sh"},
                                         {"js", "rat-js"}};
    for (size_t i = 0; lang && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(lang, map[i][0]) == 0)
            return map[i][1];
    snprintf(err, errlen,
             "rat-py serves Jupyter kernels for py, r, jl, sh and js; `%s` is a runtime of the Go rat CLI, not one "
             "rat-py can run",
             lang && *lang ? lang : "(no language)");
    return NULL;
}

static bool s_slug_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

char *mgr_names_slug(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
        n--;
    buf_t b;
    buf_init(&b, 0);
    bool dash = false;
    for (size_t i = 0; i < n;) {
        if (s_slug_char(s[i])) {
            buf_putc(&b, s[i]);
            dash = false;
            i++;
            continue;
        }
        /* One character (a UTF-8 sequence is one rune, as in Go). */
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
        if (!dash)
            buf_putc(&b, '-');
        dash = true;
    }
    char *out = buf_take(&b);
    size_t start = strspn(out, ".-_"), len = strlen(out);
    while (len > start && strchr(".-_", out[len - 1]))
        len--;
    char *r = len > start ? xstrndup(out + start, len - start) : xstrdup("project");
    free(out);
    return r;
}

static bool s_has_marker(const char *dir)
{
    for (size_t i = 0; i < sizeof s_markers / sizeof s_markers[0]; i++) {
        char *p = xasprintf("%s/%s", dir, s_markers[i]);
        bool ok = access(p, F_OK) == 0;
        free(p);
        if (ok)
            return true;
    }
    static const char *const globs[] = {"*.sln", "*.csproj"};
    for (size_t i = 0; i < 2; i++) {
        char *pat = xasprintf("%s/%s", dir, globs[i]);
        glob_t g;
        memset(&g, 0, sizeof g);
        int grc = glob(pat, GLOB_NOSORT, NULL, &g);
        bool ok = grc == 0 && g.gl_pathc > 0;
        globfree(&g);
        free(pat);
        if (ok)
            return true;
    }
    return false;
}

/* Absolute and clean (no symlink resolution: Go's filepath.Abs). */
static char *s_abs(const char *dir)
{
    char cwd[PATH_MAX];
    char *joined = dir[0] == '/' ? xstrdup(dir) : xasprintf("%s/%s", getcwd(cwd, sizeof cwd) ? cwd : "/", dir);
    /* Clean: drop ".", "", resolve "..". */
    char **parts = xcalloc(strlen(joined) + 2, sizeof *parts);
    size_t np = 0;
    for (char *save = NULL, *t = strtok_r(joined, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, ".") || !*t)
            continue;
        if (!strcmp(t, "..")) {
            if (np)
                np--;
            continue;
        }
        parts[np++] = t;
    }
    buf_t b;
    buf_init(&b, 0);
    for (size_t i = 0; i < np; i++)
        buf_printf(&b, "/%s", parts[i]);
    if (!np)
        buf_putc(&b, '/');
    free(parts);
    free(joined);
    return buf_take(&b);
}

static char *s_parent(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s != p ? xstrndup(p, (size_t)(s - p)) : xstrdup("/");
}

char *mgr_names_project_root(const char *dir)
{
    char *start = s_abs(dir);
    char *cur = xstrdup(start);
    for (;;) {
        if (s_has_marker(cur)) {
            free(start);
            return cur;
        }
        if (!strcmp(cur, "/")) {
            free(cur);
            return start;
        }
        char *up = s_parent(cur);
        free(cur);
        cur = up;
    }
}

/* The folder's name for a project: "home" for $HOME. */
static char *s_project_name(const char *root)
{
    const char *home = getenv("HOME");
    if (home && *home) {
        char *h = s_abs(home);
        bool same = strcmp(h, root) == 0;
        free(h);
        if (same)
            return xstrdup("home");
    }
    const char *s = strrchr(root, '/');
    return xstrdup(s && s[1] ? s + 1 : root);
}

char *mgr_names_find_venv(const char *dir)
{
    char *cur = s_abs(dir);
    char *root = mgr_names_project_root(cur);
    char *found = NULL;
    for (;;) {
        static const char *const names[] = {".venv", "venv"};
        for (int i = 0; i < 2 && !found; i++) {
            char *py = xasprintf("%s/%s/bin/python", cur, names[i]);
            if (access(py, F_OK) == 0)
                found = xasprintf("%s/%s", cur, names[i]);
            free(py);
        }
        if (found) {
            /* interp.h's rule, as rat-py applies it to a venv it finds: rat
             * passes the venv as --venv, which rat-py would not question. */
            char *why = interp_venv_distrust(dir, found);
            if (why) {
                fprintf(stderr,
                        "rat: the venv %s was found but not used: %s; to use it anyway: rat add NAME --venv %s\n",
                        found, why, found);
                free(why);
                FREE_AND_NULL(found);
            }
            break;
        }
        if (!strcmp(cur, root) || !strcmp(cur, "/"))
            break;
        char *up = s_parent(cur);
        free(cur);
        cur = up;
    }
    free(cur);
    free(root);
    return found;
}

void mgr_resolved_free(mgr_resolved_t *r)
{
    free(r->name);
    free(r->lang);
    free(r->cwd);
    free(r->venv);
    free(r->runtime_path);
    memset(r, 0, sizeof *r);
}

static char *s_dup(const char *s)
{
    return s && *s ? xstrdup(s) : NULL;
}

static void s_from_kernel(mgr_state_t *st, const mgr_kernel_t *k, mgr_resolved_t *out)
{
    out->name = xstrdup(k->name);
    out->lang = xstrdup(k->lang ? k->lang : "");
    out->cwd = xstrdup(k->cwd ? k->cwd : "");
    out->venv = s_dup(k->venv);
    mgr_runtime_t *r = mgr_state_runtime(st, k->name);
    if (r) {
        out->runtime_path = s_dup(r->runtime_path);
        out->env = r->env;
        out->nenv = r->nenv;
    }
}

static void s_from_runtime(const mgr_runtime_t *r, const char *cwd, mgr_resolved_t *out)
{
    out->name = xstrdup(r->name);
    out->lang = xstrdup(r->lang ? r->lang : "");
    out->cwd = xstrdup(r->cwd && *r->cwd ? r->cwd : cwd);
    out->venv = s_dup(r->venv);
    out->runtime_path = s_dup(r->runtime_path);
    out->env = r->env;
    out->nenv = r->nenv;
}

/* "X.N" with N >= 2: *base gets X (caller owns), *n gets N. */
static bool s_instance(const char *input, char **base, long *n)
{
    const char *dot = strrchr(input, '.');
    if (!dot || dot == input || !dot[1])
        return false;
    char *end = NULL;
    errno = 0;
    long v = strtol(dot + 1, &end, 10);
    if (*end || errno || v < 2)
        return false;
    *base = xstrndup(input, (size_t)(dot - input));
    *n = v;
    return true;
}

static void s_resolve_language(mgr_state_t *st, const char *lang, const char *cwd, mgr_resolved_t *out)
{
    char *root = mgr_names_project_root(cwd);
    char *pname = s_project_name(root);
    char *proj = mgr_names_slug(pname);
    char *name = xasprintf("%s@%s", lang, proj);
    /* The same name for another folder: qualify with the parent. */
    bool clash = false;
    for (size_t i = 0; i < st->nkernels && !clash; i++)
        clash = !strcmp(st->kernels[i].name, name) && strcmp(st->kernels[i].cwd ? st->kernels[i].cwd : "", root);
    for (size_t i = 0; i < st->nruntimes && !clash; i++)
        clash = !strcmp(st->runtimes[i].name, name) && st->runtimes[i].cwd && *st->runtimes[i].cwd &&
                strcmp(st->runtimes[i].cwd, root);
    if (clash) {
        char *par = s_parent(root);
        char *ppname = s_project_name(par);
        char *pslug = mgr_names_slug(ppname);
        free(name);
        if (!strcmp(pslug, proj) || !strcmp(pslug, ".") || !strcmp(par, "/"))
            name = xasprintf("%s@%s", lang, proj);
        else
            name = xasprintf("%s@%s-%s", lang, pslug, proj);
        free(par);
        free(ppname);
        free(pslug);
    }
    mgr_kernel_t *k = mgr_state_kernel(st, name);
    mgr_runtime_t *r = mgr_state_runtime(st, name);
    if (k) {
        out->name = xstrdup(k->name);
        out->lang = xstrdup(k->lang ? k->lang : lang);
        out->cwd = xstrdup(k->cwd ? k->cwd : root);
        out->venv = s_dup(k->venv);
    } else if (r) {
        s_from_runtime(r, root, out);
    } else {
        out->name = xstrdup(name);
        out->lang = xstrdup(lang);
        out->cwd = xstrdup(root);
        out->venv = !strcmp(lang, "py") ? mgr_names_find_venv(cwd) : NULL;
        out->is_new = true;
    }
    free(name);
    free(proj);
    free(pname);
    free(root);
}

int mgr_names_resolve(mgr_state_t *st, const char *input, const char *cwd, mgr_resolved_t *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!input || !*input) {
        snprintf(err, errlen, "no runtime name given");
        return -1;
    }
    mgr_kernel_t *k = mgr_state_kernel(st, input);
    if (k) {
        s_from_kernel(st, k, out);
        return 0;
    }
    mgr_runtime_t *r = mgr_state_runtime(st, input);
    if (r) {
        s_from_runtime(r, cwd, out);
        return 0;
    }
    char *base = NULL;
    long n = 0;
    if (s_instance(input, &base, &n)) {
        int rc = mgr_names_resolve(st, base, cwd, out, err, errlen);
        free(base);
        if (rc < 0)
            return rc;
        char *inst = xasprintf("%s.%ld", out->name, n);
        mgr_kernel_t *ik = mgr_state_kernel(st, inst);
        if (ik) {
            mgr_resolved_free(out);
            out->name = xstrdup(ik->name);
            out->lang = xstrdup(ik->lang ? ik->lang : "");
            out->cwd = xstrdup(ik->cwd ? ik->cwd : cwd);
            out->venv = s_dup(ik->venv);
        } else {
            free(out->name);
            out->name = xstrdup(inst);
            out->is_new = true;
        }
        free(inst);
        return 0;
    }
    const char *lang = mgr_names_lang(input);
    if (lang) {
        s_resolve_language(st, lang, cwd, out);
        return 0;
    }
    /* A unique prefix. */
    size_t nmatch = 0;
    buf_t names;
    buf_init(&names, 0);
    const char *first = NULL;
    for (size_t i = 0; i < st->nkernels; i++)
        if (!strncmp(st->kernels[i].name, input, strlen(input))) {
            nmatch++;
            first = first ? first : st->kernels[i].name;
            buf_printf(&names, "\n  %s", st->kernels[i].name);
        }
    for (size_t i = 0; i < st->nruntimes; i++)
        if (!strncmp(st->runtimes[i].name, input, strlen(input)) && !mgr_state_kernel(st, st->runtimes[i].name)) {
            nmatch++;
            first = first ? first : st->runtimes[i].name;
            buf_printf(&names, "\n  %s", st->runtimes[i].name);
        }
    if (nmatch == 1) {
        buf_free(&names);
        if ((k = mgr_state_kernel(st, first)))
            s_from_kernel(st, k, out);
        else
            s_from_runtime(mgr_state_runtime(st, first), cwd, out);
        return 0;
    }
    if (nmatch > 1)
        snprintf(err, errlen, "multiple runtimes match \"%s\":%s\nUse the full name, e.g.: rat start %s", input,
                 buf_str(&names), first);
    else
        snprintf(err, errlen,
                 "no runtime matching \"%s\". Use a language (py, sh, r, jl, js),\n"
                 "add one (rat add NAME --lang py --cwd DIR), or see `rat status`.",
                 input);
    buf_free(&names);
    return -1;
}
