/* kernelspec: finding and reading Jupyter kernelspecs. */
#include "kernelspec.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <json-c/json.h>

#include "buf.h"
#include "fileio.h"
#include "jpaths.h"
#include "mem.h"

#define KERNELSPEC_MAX_FILE (1u << 20)
#define KERNELSPEC_MAX_ARGS 256

void kernelspec_destroy(kernelspec_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    kernelspec_t *ks = *self_p;
    free(ks->name);
    free(ks->dir);
    free(ks->display_name);
    free(ks->language);
    for (size_t i = 0; i < ks->argc; i++)
        free(ks->argv[i]);
    free(ks->argv);
    for (size_t i = 0; i < ks->nenv; i++)
        free(ks->env[i]);
    free(ks->env);
    free(ks);
    *self_p = NULL;
}

static char *s_lower(const char *s)
{
    char *p = xstrdup(s);
    for (char *q = p; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    return p;
}

kernelspec_t *kernelspec_load(const char *dir, const char *name, char *err, size_t errlen)
{
    char *path = xasprintf("%s/kernel.json", dir);
    size_t len = 0;
    char *text = fileio_read(path, KERNELSPEC_MAX_FILE, &len);
    kernelspec_t *ks = NULL;
    if (!text)
        snprintf(err, errlen, "cannot read %s: %s", path,
                 errno == EFBIG ? "larger than 1 MiB" : fileio_strerror(errno));
    else
        ks = kernelspec_parse(text, len, dir, name, path, err, errlen);
    free(text);
    free(path);
    return ks;
}

kernelspec_t *kernelspec_parse(const char *text, size_t len, const char *dir, const char *name, const char *path,
                               char *err, size_t errlen)
{
    kernelspec_t *ks = NULL;
    json_object *o = NULL, *argv = NULL, *v = NULL;
    if (len > KERNELSPEC_MAX_FILE) {
        snprintf(err, errlen, "%s: larger than 1 MiB", path);
        return NULL;
    }
    json_tokener *tok = json_tokener_new_ex(32);
    o = json_tokener_parse_ex(tok, text, (int)len);
    json_tokener_free(tok);
    if (!o || !json_object_is_type(o, json_type_object)) {
        snprintf(err, errlen, "%s is not a JSON object", path);
        goto out;
    }
    if (!json_object_object_get_ex(o, "argv", &argv) || !json_object_is_type(argv, json_type_array) ||
        json_object_array_length(argv) == 0 || json_object_array_length(argv) > KERNELSPEC_MAX_ARGS) {
        snprintf(err, errlen, "%s: \"argv\" must be a non-empty list of strings", path);
        goto out;
    }
    ks = xcalloc(1, sizeof *ks);
    ks->name = s_lower(name);
    ks->dir = xstrdup(dir);
    ks->argc = json_object_array_length(argv);
    ks->argv = xcalloc(ks->argc + 1, sizeof *ks->argv);
    for (size_t i = 0; i < ks->argc; i++) {
        json_object *a = json_object_array_get_idx(argv, i);
        if (!json_object_is_type(a, json_type_string)) {
            snprintf(err, errlen, "%s: \"argv\" must be a non-empty list of strings", path);
            kernelspec_destroy(&ks);
            goto out;
        }
        ks->argv[i] = xstrdup(json_object_get_string(a));
    }
    ks->display_name = xstrdup(json_object_object_get_ex(o, "display_name", &v) && json_object_is_type(v, json_type_string)
                                   ? json_object_get_string(v) : name);
    ks->language = xstrdup(json_object_object_get_ex(o, "language", &v) && json_object_is_type(v, json_type_string)
                               ? json_object_get_string(v) : "");
    ks->interrupt_message = json_object_object_get_ex(o, "interrupt_mode", &v) &&
                            json_object_is_type(v, json_type_string) &&
                            strcmp(json_object_get_string(v), "message") == 0;
    json_object *env = NULL;
    if (json_object_object_get_ex(o, "env", &env) && json_object_is_type(env, json_type_object)) {
        size_t n = (size_t)json_object_object_length(env);
        ks->env = xcalloc(n + 1, sizeof *ks->env);
        json_object_object_foreach(env, key, val) {
            if (!json_object_is_type(val, json_type_string) || !*key || strchr(key, '='))
                continue;
            ks->env[ks->nenv++] = xasprintf("%s=%s", key, json_object_get_string(val));
        }
    }
out:
    json_object_put(o);
    return ks;
}

kernelspec_t *kernelspec_find(const char *name, char *err, size_t errlen)
{
    size_t n = 0;
    char **dirs = jpaths_kernel_dirs(&n);
    kernelspec_t *found = NULL;
    char lasterr[512] = "";
    for (size_t i = 0; i < n && !found; i++) {
        DIR *d = opendir(dirs[i]);
        if (!d)
            continue;
        struct dirent *e;
        char *match = NULL;
        while ((e = readdir(d))) {
            if (e->d_name[0] != '.' && strcasecmp(e->d_name, name) == 0) {
                match = xstrdup(e->d_name);
                break;
            }
        }
        closedir(d);
        if (!match)
            continue;
        char *kdir = xasprintf("%s/%s", dirs[i], match);
        if (fileio_is_file(kdir) || !fileio_is_dir(kdir)) {
            free(kdir);
            free(match);
            continue;
        }
        char *kjson = xasprintf("%s/kernel.json", kdir);
        if (fileio_is_file(kjson))
            found = kernelspec_load(kdir, match, lasterr, sizeof lasterr);
        free(kjson);
        free(kdir);
        free(match);
        if (!found && lasterr[0])
            break; /* the winning spec is broken: say so rather than use a shadowed one */
    }
    if (!found) {
        if (lasterr[0]) {
            snprintf(err, errlen, "kernelspec '%s' is broken: %s", name, lasterr);
        } else {
            buf_t b;
            buf_init(&b, 0);
            buf_printf(&b, "no kernelspec named '%s' (searched:", name);
            for (size_t i = 0; i < n; i++)
                buf_printf(&b, " %s", dirs[i]);
            buf_puts(&b, "); `rat-py kernels` lists what is installed");
            snprintf(err, errlen, "%s", buf_str(&b));
            buf_free(&b);
        }
    }
    jpaths_free_list(dirs, n);
    return found;
}

static int s_cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t kernelspec_list(kernelspec_t ***out)
{
    size_t n = 0, count = 0;
    char **dirs = jpaths_kernel_dirs(&n);
    kernelspec_t **list = NULL;
    for (size_t i = 0; i < n; i++) {
        DIR *d = opendir(dirs[i]);
        if (!d)
            continue;
        char **names = NULL;
        size_t nn = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            names = xrealloc(names, (nn + 1) * sizeof *names);
            names[nn++] = xstrdup(e->d_name);
        }
        closedir(d);
        qsort(names, nn, sizeof *names, s_cmp_name);
        for (size_t k = 0; k < nn; k++) {
            char *lower = s_lower(names[k]);
            bool shadowed = false;
            for (size_t j = 0; j < count && !shadowed; j++)
                shadowed = strcmp(list[j]->name, lower) == 0;
            free(lower);
            char *kdir = xasprintf("%s/%s", dirs[i], names[k]);
            char *kjson = xasprintf("%s/kernel.json", kdir);
            char err[256];
            kernelspec_t *ks = (!shadowed && fileio_is_file(kjson)) ? kernelspec_load(kdir, names[k], err, sizeof err) : NULL;
            if (ks) {
                list = xrealloc(list, (count + 1) * sizeof *list);
                list[count++] = ks;
            }
            free(kjson);
            free(kdir);
            free(names[k]);
        }
        free(names);
    }
    jpaths_free_list(dirs, n);
    *out = list;
    return count;
}

void kernelspec_free_list(kernelspec_t **list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        kernelspec_destroy(&list[i]);
    free(list);
}


char **kernelspec_argv(const kernelspec_t *ks, const char *connection_file, const char *python)
{
    /* {prefix}: the environment prefix the spec lives in, i.e. the part of
     * the resource dir before /share/jupyter/kernels/NAME. */
    char *prefix = xstrdup("");
    const char *share = strstr(ks->dir, "/share/jupyter/kernels/");
    if (share) {
        free(prefix);
        prefix = xstrndup(ks->dir, (size_t)(share - ks->dir));
    }
    /* {python} last: left as it is when there is no interpreter to put
     * there (any kernelspec but rat-py's own). */
    const char *keys[] = {"{connection_file}", "{resource_dir}", "{prefix}", "{python}"};
    const char *vals[] = {connection_file, ks->dir, prefix, python};
    const size_t nkeys = python ? 4 : 3;
    char **argv = xcalloc(ks->argc + 1, sizeof *argv);
    for (size_t i = 0; i < ks->argc; i++) {
        buf_t b;
        buf_init(&b, 0);
        const char *p = ks->argv[i];
        while (*p) {
            size_t k;
            for (k = 0; k < nkeys; k++) {
                size_t kl = strlen(keys[k]);
                if (strncmp(p, keys[k], kl) == 0) {
                    buf_puts(&b, vals[k]);
                    p += kl;
                    break;
                }
            }
            if (k == nkeys)
                buf_putc(&b, *p++);
        }
        argv[i] = buf_take(&b);
    }
    free(prefix);
    return argv;
}

void kernelspec_free_argv(char **argv)
{
    strv_free(argv);
}

char *kernelspec_expand_env(const char *value)
{
    buf_t b;
    buf_init(&b, 0);
    const char *p = value;
    while (*p) {
        if (p[0] == '$' && p[1] == '{') {
            const char *end = strchr(p + 2, '}');
            if (end) {
                char *var = xstrndup(p + 2, (size_t)(end - p - 2));
                const char *v = getenv(var);
                if (v)
                    buf_puts(&b, v);
                else
                    buf_append(&b, p, (size_t)(end - p + 1)); /* unknown: left as is, like jupyter_client */
                free(var);
                p = end + 1;
                continue;
            }
        }
        buf_putc(&b, *p++);
    }
    return buf_take(&b);
}
