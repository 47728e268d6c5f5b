/* connfile: Jupyter connection files. */
#include "connfile.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>
#include <sodium.h>

#include "buf.h"
#include "fileio.h"
#include "jpaths.h"
#include "mem.h"

static const char *s_port_names[CONN_NPORTS] = {"shell_port", "iopub_port", "stdin_port", "control_port", "hb_port"};

int connfile_init_local(connfile_t *c, const char *kernel_name, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    snprintf(c->transport, sizeof c->transport, "tcp");
    snprintf(c->ip, sizeof c->ip, "127.0.0.1");
    snprintf(c->signature_scheme, sizeof c->signature_scheme, "hmac-sha256");
    snprintf(c->kernel_name, sizeof c->kernel_name, "%s", kernel_name ? kernel_name : "");
    unsigned char raw[32];
    randombytes_buf(raw, sizeof raw);
    c->key = xmalloc(sizeof raw * 2 + 1);
    sodium_bin2hex(c->key, sizeof raw * 2 + 1, raw, sizeof raw);
    sodium_memzero(raw, sizeof raw);
    /* Hold all five sockets open at once so the kernel gets five distinct ports. */
    int fds[CONN_NPORTS];
    int rc = 0;
    for (int i = 0; i < CONN_NPORTS; i++)
        fds[i] = -1;
    for (int i = 0; i < CONN_NPORTS && rc == 0; i++) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t sl = sizeof sa;
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sa, sizeof sa) < 0 ||
            getsockname(fds[i], (struct sockaddr *)&sa, &sl) < 0) {
            snprintf(err, errlen, "cannot reserve a local TCP port: %s", strerror(errno));
            rc = -1;
            break;
        }
        c->ports[i] = ntohs(sa.sin_port);
    }
    for (int i = 0; i < CONN_NPORTS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (rc < 0)
        connfile_free(c);
    return rc;
}

void connfile_free(connfile_t *c)
{
    if (c->key) {
        sodium_memzero(c->key, strlen(c->key));
        free(c->key);
    }
    c->key = NULL;
}

static int s_get_str(json_object *o, const char *key, char *out, size_t outlen, int required, char *err, size_t errlen)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string)) {
        if (required) {
            snprintf(err, errlen, "connection file: \"%s\" (string) is missing", key);
            return -1;
        }
        return 0;
    }
    const char *s = json_object_get_string(v);
    if (strlen(s) >= outlen) {
        snprintf(err, errlen, "connection file: \"%s\" is too long", key);
        return -1;
    }
    snprintf(out, outlen, "%s", s);
    return 0;
}

int connfile_read(const char *path, connfile_t *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    size_t len = 0;
    char *text = fileio_read(path, 1u << 20, &len);
    if (!text) {
        snprintf(err, errlen, "cannot read connection file %s: %s", path,
                 errno == EFBIG ? "larger than 1 MiB" : fileio_strerror(errno));
        return -1;
    }
    json_tokener *tok = json_tokener_new_ex(16);
    json_object *o = json_tokener_parse_ex(tok, text, (int)len);
    json_tokener_free(tok);
    free(text);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        snprintf(err, errlen, "connection file %s is not a JSON object", path);
        return -1;
    }
    int rc = -1;
    snprintf(c->transport, sizeof c->transport, "tcp");
    snprintf(c->signature_scheme, sizeof c->signature_scheme, "hmac-sha256");
    if (s_get_str(o, "transport", c->transport, sizeof c->transport, 0, err, errlen) < 0 ||
        s_get_str(o, "ip", c->ip, sizeof c->ip, 1, err, errlen) < 0 ||
        s_get_str(o, "signature_scheme", c->signature_scheme, sizeof c->signature_scheme, 0, err, errlen) < 0 ||
        s_get_str(o, "kernel_name", c->kernel_name, sizeof c->kernel_name, 0, err, errlen) < 0)
        goto out;
    if (strcmp(c->transport, "tcp") != 0 && strcmp(c->transport, "ipc") != 0) {
        snprintf(err, errlen, "connection file: transport \"%s\" is not supported (tcp or ipc)", c->transport);
        goto out;
    }
    if (strcmp(c->signature_scheme, "hmac-sha256") != 0) {
        snprintf(err, errlen, "connection file: signature_scheme \"%s\" is not supported (hmac-sha256)",
                 c->signature_scheme);
        goto out;
    }
    for (int i = 0; i < CONN_NPORTS; i++) {
        json_object *v = NULL;
        if (!json_object_object_get_ex(o, s_port_names[i], &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) <= 0 || json_object_get_int64(v) > 65535) {
            snprintf(err, errlen, "connection file: \"%s\" must be a port number (1-65535)", s_port_names[i]);
            goto out;
        }
        c->ports[i] = (int)json_object_get_int64(v);
    }
    json_object *k = NULL;
    if (!json_object_object_get_ex(o, "key", &k) || !json_object_is_type(k, json_type_string)) {
        snprintf(err, errlen, "connection file: \"key\" (string) is missing");
        goto out;
    }
    c->key = xstrdup(json_object_get_string(k));
    rc = 0;
out:
    json_object_put(o);
    return rc;
}

int connfile_write(const char *path, const connfile_t *c, char *err, size_t errlen)
{
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, "{\n");
    for (int i = 0; i < CONN_NPORTS; i++)
        buf_printf(&b, "  \"%s\": %d,\n", s_port_names[i], c->ports[i]);
    buf_puts(&b, "  \"ip\": ");
    buf_put_json_str(&b, c->ip, strlen(c->ip));
    buf_puts(&b, ",\n  \"key\": ");
    buf_put_json_str(&b, c->key, strlen(c->key));
    buf_printf(&b, ",\n  \"transport\": \"%s\",\n  \"signature_scheme\": \"%s\",\n  \"kernel_name\": ",
               c->transport, c->signature_scheme);
    buf_put_json_str(&b, c->kernel_name, strlen(c->kernel_name));
    buf_puts(&b, "\n}\n");
    int rc = fileio_write_atomic(path, b.data, b.len, 0600);
    if (rc < 0)
        snprintf(err, errlen, "cannot write connection file %s: %s", path, strerror(errno));
    sodium_memzero(b.data, b.len);
    buf_free(&b);
    return rc;
}

void connfile_endpoint(const connfile_t *c, int which, char *out, size_t outlen)
{
    if (strcmp(c->transport, "ipc") == 0)
        snprintf(out, outlen, "ipc://%s-%d", c->ip, c->ports[which]);
    else if (strchr(c->ip, ':'))
        snprintf(out, outlen, "tcp://[%s]:%d", c->ip, c->ports[which]);
    else
        snprintf(out, outlen, "tcp://%s:%d", c->ip, c->ports[which]);
}

/* Newest (by mtime) file in dir whose name matches pattern. */
static char *s_newest(const char *dir, const char *pattern, time_t *best_time, char *best)
{
    DIR *d = opendir(dir);
    if (!d)
        return best;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (fnmatch(pattern, e->d_name, 0) != 0)
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && (!best || st.st_mtime > *best_time)) {
            free(best);
            best = p;
            *best_time = st.st_mtime;
        } else {
            free(p);
        }
    }
    closedir(d);
    return best;
}

char *connfile_find(const char *name, char *err, size_t errlen)
{
    if (!name || !*name) {
        snprintf(err, errlen, "no connection file name given");
        return NULL;
    }
    if (fileio_is_file(name))
        return xstrdup(name);
    char *rt = jpaths_runtime_dir();
    const char *dirs[2] = {".", rt};
    char *found = NULL;
    if (!strchr(name, '/')) {
        char *pats[3];
        pats[0] = xstrdup(name);
        pats[1] = xasprintf("kernel-%s.json", name);
        pats[2] = xasprintf("*%s*", name);
        for (int p = 0; p < 3 && !found; p++) {
            time_t t = 0;
            for (int d = 0; d < 2; d++)
                found = s_newest(dirs[d], pats[p], &t, found);
        }
        for (int p = 0; p < 3; p++)
            free(pats[p]);
    }
    if (!found)
        snprintf(err, errlen, "no connection file matching '%s' in . or %s (start a kernel, or give the file's path)",
                 name, rt);
    free(rt);
    return found;
}
