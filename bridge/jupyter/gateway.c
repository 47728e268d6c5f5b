/* gateway: the REST kernel API of a Jupyter Server over libcurl. */
#define LOG_MODULE "gateway"
#include "gateway.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>
#include <json-c/json.h>

#include "buf.h"
#include "fileio.h"
#include "gw_dl.h"
#include "log.h"
#include "mem.h"
#include "utf8.h"

struct gateway_req {
    gateway_t *gw;
    CURL *easy;
    struct curl_slist *headers;
    buf_t body;
    bool too_big;
    char errbuf[CURL_ERROR_SIZE];
    gateway_done_fn *done;
    void *ud;
    void (*free_ud)(void *);  /* or NULL; called when done is not (see gateway.h) */
    gateway_req_t *next;
};

struct gateway {
    loop_t *loop;          /* borrowed, may be NULL */
    char *url;             /* as given, without a trailing slash */
    char *token, *ca_file;
    bool insecure, tls;
    char *host, *base;
    int port;
    char *auth;            /* "Authorization: token T" or NULL */
    CURLM *multi;          /* created on the first asynchronous request */
    uint64_t timer;
    gateway_req_t *reqs;   /* in flight */
};

const char *gateway_url(const gateway_t *self) { return self->url; }
const char *gateway_token(const gateway_t *self) { return self->token; }
bool gateway_tls(const gateway_t *self) { return self->tls; }
const char *gateway_host(const gateway_t *self) { return self->host; }
int gateway_port(const gateway_t *self) { return self->port; }
const char *gateway_base(const gateway_t *self) { return self->base; }
const char *gateway_ca_file(const gateway_t *self) { return self->ca_file; }
bool gateway_insecure(const gateway_t *self) { return self->insecure; }

/* http(s)://host[:port][/base]; no user info, query or fragment. */
static int s_parse_url(gateway_t *self, const char *url, char *err, size_t errlen)
{
    const char *p;
    if (strncmp(url, "http://", 7) == 0) {
        p = url + 7;
    } else if (strncmp(url, "https://", 8) == 0) {
        p = url + 8;
        self->tls = true;
    } else {
        snprintf(err, errlen, "--gateway: '%.200s' is not an http:// or https:// URL", url);
        return -1;
    }
    const char *hend;
    const char *h = p;
    if (*p == '[') {
        hend = strchr(p, ']');
        if (!hend) {
            snprintf(err, errlen, "--gateway: unclosed '[' in '%.200s'", url);
            return -1;
        }
        h = p + 1;
        p = hend + 1;
    } else {
        hend = p + strcspn(p, ":/");
        p = hend;
    }
    if (hend == h) {
        snprintf(err, errlen, "--gateway: no host in '%.200s'", url);
        return -1;
    }
    for (const char *c = h; c < hend; c++)
        if (!(isalnum((unsigned char)*c) || *c == '.' || *c == '-' || *c == ':' || *c == '_')) {
            snprintf(err, errlen, "--gateway: bad host in '%.200s'", url);
            return -1;
        }
    self->host = xasprintf("%.*s", (int)(hend - h), h);
    self->port = self->tls ? 443 : 80;
    if (*p == ':') {
        char *end = NULL;
        long n = strtol(p + 1, &end, 10);
        if (end == p + 1 || n < 1 || n > 65535 || (*end && *end != '/')) {
            snprintf(err, errlen, "--gateway: bad port in '%.200s'", url);
            return -1;
        }
        self->port = (int)n;
        p = end;
    }
    if (*p && *p != '/') {
        snprintf(err, errlen, "--gateway: cannot read '%.200s' as a URL", url);
        return -1;
    }
    size_t blen = strlen(p);
    while (blen && p[blen - 1] == '/')
        blen--;
    for (size_t i = 0; i < blen; i++)
        if ((unsigned char)p[i] <= ' ' || p[i] == '?' || p[i] == '#' || p[i] == '"' || (unsigned char)p[i] >= 0x7f) {
            snprintf(err, errlen, "--gateway: the URL's path may not hold spaces, '?' or '#': '%.200s'", url);
            return -1;
        }
    self->base = xasprintf("%.*s", (int)blen, p);
    self->url = xasprintf("%s://%s%s%s:%d%s", self->tls ? "https" : "http", strchr(self->host, ':') ? "[" : "",
                          self->host, strchr(self->host, ':') ? "]" : "", self->port, self->base);
    return 0;
}

gateway_t *gateway_new(loop_t *loop, const gateway_opts_t *o, char *err, size_t errlen)
{
    if (!o->url || !o->url[0]) {
        snprintf(err, errlen, "no gateway URL");
        return NULL;
    }
    gateway_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    if (s_parse_url(self, o->url, err, errlen) < 0 || gw_dl_load(err, errlen) < 0) {
        gateway_destroy(&self);
        return NULL;
    }
    if (o->token && o->token[0]) {
        for (const char *c = o->token; *c; c++)
            if ((unsigned char)*c < ' ' || (unsigned char)*c >= 0x7f) {
                snprintf(err, errlen, "the gateway token may hold printable ASCII only");
                gateway_destroy(&self);
                return NULL;
            }
        self->token = xstrdup(o->token);
        self->auth = xasprintf("Authorization: token %s", o->token);
    }
    if (o->ca_file) {
        /* curl (OpenSSL) opens the bundle by name with a blocking fopen at
         * each TLS handshake, on the loop: a FIFO there would hang it, and
         * a device would be read without end. Refused here, once. */
        int fd = fileio_open_regular(o->ca_file, O_RDONLY, 0, NULL);
        if (fd < 0) {
            snprintf(err, errlen, "--gateway-ca %s: %s", o->ca_file, fileio_strerror(errno));
            gateway_destroy(&self);
            return NULL;
        }
        close(fd);
    }
    self->ca_file = xstrdup(o->ca_file);
    self->insecure = o->insecure;
    return self;
}

static void s_req_free(gateway_req_t *r)
{
    if (r->easy) {
        if (r->gw->multi)
            gw_curl.multi_remove_handle(r->gw->multi, r->easy);
        gw_curl.easy_cleanup(r->easy);
    }
    gw_curl.slist_free_all(r->headers);
    buf_free(&r->body);
    free(r);
}

void gateway_destroy(gateway_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_t *self = *self_p;
    while (self->reqs) {
        gateway_req_t *r = self->reqs;
        self->reqs = r->next;
        if (r->free_ud)
            r->free_ud(r->ud);
        s_req_free(r);
    }
    if (self->loop) {
        loop_timer_cancel(self->loop, self->timer);
    }
    if (self->multi)
        gw_curl.multi_cleanup(self->multi); /* its socket callback unwatches the fds */
    free(self->url);
    free(self->token);
    free(self->ca_file);
    free(self->host);
    free(self->base);
    free(self->auth);
    free(self);
    *self_p = NULL;
}

static size_t s_write(char *ptr, size_t size, size_t n, void *ud)
{
    gateway_req_t *r = ud;
    size_t len = size * n;
    if (r->body.len + len > GATEWAY_MAX_BODY) {
        r->too_big = true;
        return 0; /* aborts the transfer */
    }
    buf_append(&r->body, ptr, len);
    return len;
}

static gateway_req_t *s_req_new(gateway_t *self, const char *method, const char *path, const char *body,
                                int timeout_ms)
{
    gateway_req_t *r = xcalloc(1, sizeof *r);
    r->gw = self;
    buf_init(&r->body, 0);
    r->easy = gw_curl.easy_init();
    if (!r->easy) {
        free(r);
        return NULL;
    }
    char *url = xasprintf("%s%s", self->url, path);
    CURL *e = r->easy;
    gw_curl.easy_setopt(e, CURLOPT_URL, url);
    free(url);
    gw_curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    gw_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    gw_curl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    gw_curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)GATEWAY_CONNECT_TIMEOUT_MS);
    gw_curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : GATEWAY_REQUEST_TIMEOUT_MS));
    gw_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, s_write);
    gw_curl.easy_setopt(e, CURLOPT_WRITEDATA, r);
    gw_curl.easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    gw_curl.easy_setopt(e, CURLOPT_PRIVATE, r);
    if (self->ca_file)
        gw_curl.easy_setopt(e, CURLOPT_CAINFO, self->ca_file);
    if (self->insecure) {
        gw_curl.easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        gw_curl.easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    r->headers = gw_curl.slist_append(r->headers, "Accept: application/json");
    if (self->auth)
        r->headers = gw_curl.slist_append(r->headers, self->auth);
    if (body) {
        r->headers = gw_curl.slist_append(r->headers, "Content-Type: application/json");
        gw_curl.easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body);
    }
    gw_curl.easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    return r;
}

/* A sentence for a transfer that failed before a response. */
static char *s_curl_error(const gateway_t *self, gateway_req_t *r, CURLcode rc)
{
    if (r->too_big)
        return xasprintf("the gateway at %s sent a response larger than %u MB", self->url, GATEWAY_MAX_BODY >> 20);
    const char *detail = r->errbuf[0] ? r->errbuf : gw_curl.easy_strerror(rc);
    const char *what = rc == CURLE_OPERATION_TIMEDOUT   ? "timed out"
                       : rc == CURLE_COULDNT_CONNECT     ? "refused the connection (is it running?)"
                       : rc == CURLE_COULDNT_RESOLVE_HOST ? "cannot be resolved"
                       : rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE
                           ? "failed TLS verification (give its CA with --gateway-ca)"
                           : "cannot be reached";
    return xasprintf("the gateway at %s %s: %s", self->url, what, detail);
}

int gateway_request_sync(gateway_t *self, const char *method, const char *path, const char *body, int timeout_ms,
                         long *status, char **body_out, char *err, size_t errlen)
{
    gateway_req_t *r = s_req_new(self, method, path, body, timeout_ms);
    if (!r) {
        snprintf(err, errlen, "libcurl cannot make a request");
        return -1;
    }
    CURLcode rc = gw_curl.easy_perform(r->easy);
    if (rc != CURLE_OK) {
        char *why = s_curl_error(self, r, rc);
        snprintf(err, errlen, "%s", why);
        free(why);
        s_req_free(r);
        return -1;
    }
    gw_curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, status);
    *body_out = xstrndup(r->body.data ? r->body.data : "", r->body.len);
    s_req_free(r);
    return 0;
}

/* Enterprise Gateway says why it refuses in "reason" (a user it will not
 * start kernels for: "User 'root' is not authorized to start kernel ...
 * Ensure KERNEL_USERNAME is set ..."); a token it refuses has the bare
 * status phrase there, and Jupyter Server's has null. */
static bool s_specific_reason(const char *r)
{
    return r && *r && strcmp(r, "Forbidden") != 0 && strcmp(r, "Unauthorized") != 0;
}

static const char *s_json_str(json_object *j, const char *key)
{
    json_object *m = NULL;
    if (j && json_object_object_get_ex(j, key, &m) && json_object_is_type(m, json_type_string))
        return json_object_get_string(m);
    return NULL;
}

char *gateway_http_error(const gateway_t *self, const char *what, long status, const char *body)
{
    json_object *j = body ? json_tokener_parse(body) : NULL;
    const char *msg = s_json_str(j, "message"), *reason = s_json_str(j, "reason");
    const char *at = self ? " at " : "", *url = self ? self->url : "";
    char *out;
    if (status == 403 && s_specific_reason(reason))
        out = xasprintf("%s: the gateway%s%s refused (HTTP 403 Forbidden): %.300s", what, at, url, reason);
    else if (status == 401 || status == 403)
        out = xasprintf("%s: the gateway%s%s refused the token (HTTP %ld %s): give the right one with "
                        "--gateway-token or JUPYTER_GATEWAY_AUTH_TOKEN",
                        what, at, url, status, status == 401 ? "Unauthorized" : "Forbidden");
    else
        out = xasprintf("%s: the gateway%s%s answered HTTP %ld%s%.300s", what, at, url, status, msg ? ": " : "",
                        msg ? msg : "");
    json_object_put(j);
    return out;
}

/* Is name=value one the start request carries: KERNEL_*, or a name listed
 * in allowed (comma separated)? */
static bool s_env_sent(const char *entry, size_t name_len, const char *allowed)
{
    if (name_len > 7 && strncmp(entry, "KERNEL_", 7) == 0)
        return true;
    for (const char *a = allowed; a && *a;) {
        const char *end = strchr(a, ',');
        size_t n = end ? (size_t)(end - a) : strlen(a);
        if (n == name_len && strncmp(a, entry, n) == 0)
            return true;
        a = end ? end + 1 : a + n;
    }
    return false;
}

char *gateway_kernel_start_body(const char *name, char *const *envp)
{
    json_object *b = json_object_new_object(), *env = json_object_new_object();
    json_object_object_add(b, "name", json_object_new_string(name));
    const char *allowed = NULL;
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, "JUPYTER_GATEWAY_ALLOWED_ENVS=", 29) == 0)
            allowed = *e + 29;
    size_t total = 0, n = 0;
    for (char *const *e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e || !s_env_sent(*e, (size_t)(eq - *e), allowed))
            continue;
        size_t len = strlen(*e);
        int nl = eq - *e > 100 ? 100 : (int)(eq - *e); /* the name, in a warning */
        if (utf8_valid_prefix(*e, len) != len) {
            log_warn("not sent to the gateway: the environment variable %.*s (not UTF-8)", nl, *e);
            continue;
        }
        if (n >= GATEWAY_ENV_MAX || total + len > GATEWAY_ENV_MAX_BYTES) {
            log_warn("not sent to the gateway: the environment variable %.*s (past %d variables or %d bytes)",
                     nl, *e, GATEWAY_ENV_MAX, GATEWAY_ENV_MAX_BYTES);
            continue;
        }
        char *key = xstrndup(*e, (size_t)(eq - *e));
        json_object_object_add(env, key, json_object_new_string(eq + 1));
        free(key);
        total += len;
        n++;
    }
    json_object_object_add(b, "env", env);
    char *out = xstrdup(json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN));
    json_object_put(b);
    return out;
}

/* ------------------------------------------------------- on the loop */

static void s_check_done(gateway_t *self)
{
    CURLMsg *m;
    int left;
    while ((m = gw_curl.multi_info_read(self->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        gateway_req_t *r = NULL;
        gw_curl.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode rc = m->data.result;
        for (gateway_req_t **pp = &self->reqs; *pp; pp = &(*pp)->next)
            if (*pp == r) {
                *pp = r->next;
                break;
            }
        long status = 0;
        char *why = NULL;
        if (rc == CURLE_OK)
            gw_curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        else
            why = s_curl_error(self, r, rc);
        buf_append(&r->body, "", 1); /* NUL-terminated for the callback */
        gateway_done_fn *done = r->done;
        void *ud = r->ud;
        /* The request is unlinked: done may cancel or start others. */
        done(ud, status, r->body.data, r->body.len - 1, why);
        free(why);
        s_req_free(r);
    }
}

static void s_on_io(loop_t *loop, void *ud, int revents);

static void s_act(gateway_t *self, curl_socket_t fd, int ev)
{
    int running = 0;
    gw_curl.multi_socket_action(self->multi, fd, ev, &running);
    s_check_done(self);
}

typedef struct {
    gateway_t *gw;
    curl_socket_t fd;
    int watch;
} s_sock_t;

static void s_on_io(loop_t *loop, void *ud, int revents)
{
    s_sock_t *s = ud;
    int ev = (revents & ZMQ_POLLIN ? CURL_CSELECT_IN : 0) | (revents & ZMQ_POLLOUT ? CURL_CSELECT_OUT : 0) |
             (revents & ZMQ_POLLERR ? CURL_CSELECT_ERR : 0);
    s_act(s->gw, s->fd, ev);
}

static int s_sock_cb(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
    gateway_t *self = userp;
    s_sock_t *s = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            loop_unwatch(self->loop, s->watch);
            free(s);
        }
        return 0;
    }
    int events = (what & CURL_POLL_IN ? ZMQ_POLLIN : 0) | (what & CURL_POLL_OUT ? ZMQ_POLLOUT : 0);
    if (!s) {
        s = xcalloc(1, sizeof *s);
        s->gw = self;
        s->fd = fd;
        s->watch = loop_watch_fd(self->loop, fd, events, s_on_io, s);
        gw_curl.multi_assign(self->multi, fd, s); /* comes back as socketp */
    } else {
        loop_watch_set(self->loop, s->watch, events);
    }
    return 0;
}

static void s_on_timer(loop_t *loop, void *ud)
{
    gateway_t *self = ud;
    self->timer = 0;
    s_act(self, CURL_SOCKET_TIMEOUT, 0);
}

static int s_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    gateway_t *self = userp;
    loop_timer_cancel(self->loop, self->timer);
    self->timer = timeout_ms >= 0 ? loop_timer(self->loop, timeout_ms, s_on_timer, self) : 0;
    return 0;
}

gateway_req_t *gateway_request(gateway_t *self, const char *method, const char *path, const char *body,
                               int timeout_ms, gateway_done_fn *done, void *ud)
{
    if (!self->loop)
        return NULL;
    if (!self->multi) {
        self->multi = gw_curl.multi_init();
        if (!self->multi)
            return NULL;
        gw_curl.multi_setopt(self->multi, CURLMOPT_SOCKETFUNCTION, s_sock_cb);
        gw_curl.multi_setopt(self->multi, CURLMOPT_SOCKETDATA, self);
        gw_curl.multi_setopt(self->multi, CURLMOPT_TIMERFUNCTION, s_timer_cb);
        gw_curl.multi_setopt(self->multi, CURLMOPT_TIMERDATA, self);
    }
    gateway_req_t *r = s_req_new(self, method, path, body, timeout_ms);
    if (!r)
        return NULL;
    r->done = done;
    r->ud = ud;
    r->next = self->reqs;
    self->reqs = r;
    /* curl arms its timer from here (a 0 ms loop timer): the transfer, and
     * done, start from the loop, never inside this call. */
    if (gw_curl.multi_add_handle(self->multi, r->easy) != CURLM_OK) {
        self->reqs = r->next;
        s_req_free(r);
        return NULL;
    }
    log_debug("%s %s%s", method, self->url, path);
    return r;
}

void gateway_cancel(gateway_t *self, gateway_req_t **req_p)
{
    if (!req_p || !*req_p)
        return;
    gateway_req_t *r = *req_p;
    *req_p = NULL;
    for (gateway_req_t **pp = &self->reqs; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            if (r->free_ud)
                r->free_ud(r->ud);
            s_req_free(r);
            return;
        }
}

void gateway_request_free_ud(gateway_req_t *req, void (*free_ud)(void *ud))
{
    if (req)
        req->free_ud = free_ud;
}
