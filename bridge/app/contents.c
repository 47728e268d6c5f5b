/* contents: Jupyter's Contents API over the files under --cwd (contents.h,
 * doc/contents.md). */
#define LOG_MODULE "contents"
#include "contents.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include <sodium.h>

#include "buf.h"
#include "fsroot.h"
#include "jsontok.h"
#include "nbjson.h"
#include "log.h"
#include "mem.h"

#define PREFIX "/api/contents"
#define CP_DIR ".ipynb_checkpoints"
#define CP_ID "checkpoint"
#define JSON_DEPTH NBJSON_DEPTH
/* A body other than a save's (a rename, a new untitled name) is a few
 * hundred bytes: more is refused before json-c builds a tree of it. */
#define SMALL_BODY_MAX (64u << 10)
#define TRIM_AFTER (1u << 20) /* give memory back after a request this large */

struct contents {
    fsroot_t *root;
};

/* One request being answered. */
typedef struct {
    contents_t *self;
    const http_request_t *req;
    http_reply_t *out;
    char path[FSROOT_PATH_MAX + 1]; /* normalized: no leading, trailing or doubled "/" */
} s_req_t;

/* ---- replies ---------------------------------------------------------- */

static void s_reply_json(s_req_t *r, int status, json_object *o)
{
    r->out->status = status;
    r->out->content_type = "application/json";
    r->out->body = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    r->out->len = strlen(r->out->body);
    json_object_put(o);
}

/* Jupyter's error body: {"message", "reason"}. */
static void s_error(s_req_t *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void s_error(s_req_t *r, int status, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "message", json_object_new_string(msg));
    json_object_object_add(o, "reason", NULL);
    s_reply_json(r, status, o);
}

/* What errno e means for path, as a status and a sentence that says what
 * to do. what: the action ("read", "save", ...). */
static void s_errno(s_req_t *r, int e, const char *what, const char *path)
{
    const char *p = *path ? path : "(the root)";
    switch (e) {
    case ENOENT:
        s_error(r, 404, "No such file or directory: %s", p);
        break;
    case ELOOP:
        s_error(r, 403, "%s: a symbolic link is on the way; the file API never follows links (it stays inside "
                        "--cwd)", p);
        break;
    case EPERM:
        /* fsroot's refusal of a hidden name, or the system's own EPERM (an
         * immutable file, a sticky directory): say which. */
        if (fsroot_check(path, 0) < 0 && errno == EPERM)
            s_error(r, 403, "%s: hidden names (starting with \".\") are not served", p);
        else
            s_error(r, 403, "Could not %s %s: operation not permitted (%s)", what, p, strerror(EPERM));
        break;
    case EINVAL:
        s_error(r, 400, "%s: not a path the file API takes (\".\" and \"..\" are not allowed; special files "
                        "such as FIFOs and devices are not served)", p);
        break;
    case ENAMETOOLONG:
        s_error(r, 400, "%s: the path is too long (at most %d bytes, %d per name)", p, FSROOT_PATH_MAX,
                FSROOT_NAME_MAX);
        break;
    case ENOTDIR:
        s_error(r, 404, "%s: a part of the path is not a directory", p);
        break;
    case EISDIR:
        s_error(r, 400, "%s is a directory", p);
        break;
    case EEXIST:
        s_error(r, 409, "%s already exists", p);
        break;
    case EACCES:
        s_error(r, 403, "%s: permission denied", p);
        break;
    case EROFS:
        s_error(r, 403, "%s: read-only file system", p);
        break;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        s_error(r, 507, "Could not %s %s: %s. Nothing was changed on disk: the file is as it was before. Free "
                        "some space (or download the notebook) and save again.",
                what, p, strerror(e));
        break;
    default:
        s_error(r, 500, "Could not %s %s: %s", what, p, strerror(e));
        break;
    }
}

/* ---- models ----------------------------------------------------------- */

static void s_iso(char *out, size_t n, const struct timespec *ts)
{
    struct tm tm;
    gmtime_r(&ts->tv_sec, &tm);
    size_t k = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + k, n - k, ".%06dZ", (int)((ts->tv_nsec / 1000) % 1000000));
}

static bool s_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

static const char *s_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static const char *s_type_of(const char *path, const struct stat *st)
{
    if (S_ISDIR(st->st_mode))
        return "directory";
    return s_ends_with(path, ".ipynb") ? "notebook" : "file";
}

static bool s_writable(const struct stat *st)
{
    uid_t me = geteuid();
    return me == 0 || (st->st_uid == me ? (st->st_mode & S_IWUSR) != 0 : (st->st_mode & S_IWOTH) != 0);
}

static const char *s_mimetype(const char *name)
{
    static const struct {
        const char *ext, *mime;
    } types[] = {{".txt", "text/plain"},      {".py", "text/x-python"},  {".md", "text/markdown"},
                 {".csv", "text/csv"},        {".json", "application/json"}, {".html", "text/html"},
                 {".png", "image/png"},       {".jpg", "image/jpeg"},    {".jpeg", "image/jpeg"},
                 {".svg", "image/svg+xml"},   {".r", "text/x-r"},        {".pdf", "application/pdf"}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (s_ends_with(name, types[i].ext))
            return types[i].mime;
    return NULL;
}

static void s_hash_hex(const void *data, size_t len, char hex[crypto_hash_sha256_BYTES * 2 + 1])
{
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, data, len);
    sodium_bin2hex(hex, crypto_hash_sha256_BYTES * 2 + 1, h, sizeof h);
}

/* The model of path without its content (content and format null). */
static json_object *s_model(const char *path, const struct stat *st)
{
    json_object *m = json_object_new_object();
    char t[48];
    const char *type = s_type_of(path, st);
    json_object_object_add(m, "name", json_object_new_string(s_basename(path)));
    json_object_object_add(m, "path", json_object_new_string(path));
    json_object_object_add(m, "type", json_object_new_string(type));
    json_object_object_add(m, "writable", json_object_new_boolean(s_writable(st)));
    s_iso(t, sizeof t, &st->st_ctim);
    json_object_object_add(m, "created", json_object_new_string(t));
    s_iso(t, sizeof t, &st->st_mtim);
    json_object_object_add(m, "last_modified", json_object_new_string(t));
    json_object_object_add(m, "size", S_ISDIR(st->st_mode) ? NULL : json_object_new_int64((int64_t)st->st_size));
    const char *mime = strcmp(type, "file") == 0 ? s_mimetype(path) : NULL;
    json_object_object_add(m, "mimetype", mime ? json_object_new_string(mime) : NULL);
    json_object_object_add(m, "content", NULL);
    json_object_object_add(m, "format", NULL);
    return m;
}

static void s_add_hash(json_object *m, const void *data, size_t len)
{
    char hex[crypto_hash_sha256_BYTES * 2 + 1];
    s_hash_hex(data, len, hex);
    json_object_object_add(m, "hash", json_object_new_string(hex));
    json_object_object_add(m, "hash_algorithm", json_object_new_string("sha256"));
}

/* Replies with model m (consumed) whose "content" is raw JSON text (len
 * bytes, already valid JSON): spliced in, not parsed and printed again. */
static void s_reply_raw_content(s_req_t *r, int status, json_object *m, const char *raw, size_t len)
{
    json_object_object_del(m, "content");
    const char *head = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t hl = strlen(head); /* "{...}": the last byte is the closing brace */
    buf_t b;
    buf_init(&b, 0);
    buf_append(&b, head, hl - 1);
    buf_puts(&b, hl > 2 ? ",\"content\":" : "\"content\":");
    buf_append(&b, raw, len);
    buf_putc(&b, '}');
    json_object_put(m);
    r->out->status = status;
    r->out->content_type = "application/json";
    r->out->len = b.len;
    r->out->body = buf_take(&b);
}

/* Parses text strictly (valid UTF-8, bounded depth). NULL when it is not
 * JSON; *why then says where. */
static json_object *s_parse(const char *text, size_t len, char *why, size_t whylen)
{
    json_tokener *tok = jsontok_take(JSON_DEPTH);
    json_object *o = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error err = json_tokener_get_error(tok);
    if (o && (err != json_tokener_success || (size_t)json_tokener_get_parse_end(tok) != len)) {
        /* Something after the value: not one JSON document. */
        size_t end = json_tokener_get_parse_end(tok);
        while (end < len && strchr(" \t\r\n", text[end]))
            end++;
        if (end != len) {
            json_object_put(o);
            o = NULL;
            snprintf(why, whylen, "text after the JSON value at byte %zu", end);
        }
    } else if (!o) {
        snprintf(why, whylen, "%s at byte %zu", json_tokener_error_desc(err == json_tokener_continue
                                                                            ? json_tokener_error_parse_eof
                                                                            : err),
                 json_tokener_get_parse_end(tok));
    }
    jsontok_give(&tok, JSON_DEPTH, len);
    return o;
}

/* ---- paths ------------------------------------------------------------ */

/* Copies src into r->path without empty components. false when too long. */
static bool s_normalize(s_req_t *r, const char *src, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '/' && (o == 0 || r->path[o - 1] == '/'))
            continue;
        if (o >= FSROOT_PATH_MAX)
            return false;
        r->path[o++] = src[i];
    }
    while (o && r->path[o - 1] == '/')
        o--;
    r->path[o] = '\0';
    return true;
}

/* The checkpoint of path: dir/.ipynb_checkpoints/<stem>-checkpoint<ext>. */
static char *s_cp_path(const char *path)
{
    const char *name = s_basename(path);
    const char *dot = strrchr(name, '.');
    size_t stem = dot && dot != name ? (size_t)(dot - name) : strlen(name);
    return xasprintf("%.*s" CP_DIR "/%.*s-checkpoint%s", (int)(name - path), path, (int)stem, name,
                     dot && dot != name ? dot : "");
}

static char *s_cp_dir(const char *path)
{
    const char *name = s_basename(path);
    return xasprintf("%.*s" CP_DIR, (int)(name - path), path);
}

/* ---- GET -------------------------------------------------------------- */

static bool s_arg_true(const http_request_t *req, const char *name, bool dflt)
{
    const char *v = transport_http_arg(req, name);
    if (!v)
        return dflt;
    return !(strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0);
}

static void s_get_dir(s_req_t *r, const struct stat *st, bool content)
{
    json_object *m = s_model(r->path, st);
    if (!content) {
        s_reply_json(r, 200, m);
        return;
    }
    fsroot_entry_t *ents = NULL;
    bool more = false;
    long n = fsroot_list(r->self->root, r->path, 0, CONTENTS_LIST_MAX, &ents, &more);
    if (n < 0) {
        json_object_put(m);
        s_errno(r, errno, "list", r->path);
        return;
    }
    json_object *list = json_object_new_array_ext((int)n);
    for (long i = 0; i < n; i++) {
        /* Links are neither followed nor listed (opening one is refused),
         * nor are sockets, FIFOs and devices. */
        if (!S_ISDIR(ents[i].st.st_mode) && !S_ISREG(ents[i].st.st_mode))
            continue;
        char *child = *r->path ? xasprintf("%s/%s", r->path, ents[i].name) : xstrdup(ents[i].name);
        json_object_array_add(list, s_model(child, &ents[i].st));
        free(child);
    }
    fsroot_entries_free(ents, n);
    json_object_object_add(m, "content", list);
    json_object_object_add(m, "format", json_object_new_string("json"));
    if (more) /* not Jupyter's: says the listing stopped at CONTENTS_LIST_MAX */
        json_object_object_add(m, "truncated", json_object_new_boolean(true));
    s_reply_json(r, 200, m);
}

static void s_get(s_req_t *r)
{
    const http_request_t *req = r->req;
    struct stat st;
    if (fsroot_stat(r->self->root, r->path, 0, &st) < 0) {
        s_errno(r, errno, "read", r->path);
        return;
    }
    if (S_ISLNK(st.st_mode)) {
        s_errno(r, ELOOP, "read", r->path);
        return;
    }
    const char *type = transport_http_arg(req, "type");
    const char *format = transport_http_arg(req, "format");
    bool content = s_arg_true(req, "content", true), hash = s_arg_true(req, "hash", false);
    if (type && strcmp(type, "directory") != 0 && strcmp(type, "notebook") != 0 && strcmp(type, "file") != 0) {
        s_error(r, 400, "type must be directory, notebook or file, not %.40s", type);
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        if (type && strcmp(type, "directory") != 0) {
            s_error(r, 400, "%s is a directory, not a %s", *r->path ? r->path : "(the root)", type);
            return;
        }
        s_get_dir(r, &st, content);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        s_errno(r, EINVAL, "read", r->path);
        return;
    }
    if (type && strcmp(type, "directory") == 0) {
        s_error(r, 400, "%s is not a directory", r->path);
        return;
    }
    bool notebook = type ? strcmp(type, "notebook") == 0 : s_ends_with(r->path, ".ipynb");
    if (notebook && format && strcmp(format, "json") != 0) {
        s_error(r, 400, "a notebook's format is json, not %.40s", format);
        return;
    }
    if (!notebook && format && strcmp(format, "text") != 0 && strcmp(format, "base64") != 0) {
        s_error(r, 400, "format must be text or base64, not %.40s", format);
        return;
    }
    if (!content && !hash) {
        json_object *m = s_model(r->path, &st);
        if (notebook)
            json_object_object_add(m, "type", json_object_new_string("notebook"));
        s_reply_json(r, 200, m);
        return;
    }
    size_t len = 0;
    char *data = fsroot_read(r->self->root, r->path, 0, CONTENTS_FILE_MAX, &len, &st);
    if (!data) {
        int e = errno;
        if (e == EFBIG)
            s_error(r, 413, "%s is larger than %u MiB, the file API's limit", r->path, CONTENTS_FILE_MAX >> 20);
        else
            s_errno(r, e, "read", r->path);
        return;
    }
    json_object *m = s_model(r->path, &st);
    if (hash)
        s_add_hash(m, data, len);
    if (!content) {
        s_reply_json(r, 200, m);
    } else if (notebook) {
        /* Only checked (it goes out as read): no tree is built. */
        char why[160];
        nbjson_type_t t = NBJSON_LITERAL;
        bool valid = nbjson_validate(data, len, &t, why, sizeof why);
        if (!valid || t != NBJSON_OBJECT) {
            json_object_put(m);
            s_error(r, 400, "Unreadable Notebook: %s is not a JSON object (%s)", r->path,
                    valid ? "another JSON value" : why);
        } else {
            json_object_object_add(m, "type", json_object_new_string("notebook"));
            json_object_object_add(m, "format", json_object_new_string("json"));
            json_object_object_add(m, "mimetype", NULL);
            s_reply_raw_content(r, 200, m, data, len);
        }
    } else {
        bool utf8 = !(format && strcmp(format, "base64") == 0);
        if (utf8) {
            buf_t chk;
            buf_init(&chk, 0);
            buf_append_utf8(&chk, data, len);
            utf8 = chk.len == len && memchr(data, '\0', len) == NULL;
            buf_free(&chk);
            if (!utf8 && format) {
                json_object_put(m);
                free(data);
                s_error(r, 400, "%s is not UTF-8 text: ask for format=base64", r->path);
                return;
            }
        }
        if (utf8) {
            json_object_object_add(m, "content", json_object_new_string_len(data, (int)len));
            json_object_object_add(m, "format", json_object_new_string("text"));
            if (!json_object_object_get(m, "mimetype"))
                json_object_object_add(m, "mimetype", json_object_new_string("text/plain"));
        } else {
            size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
            char *b64 = xmalloc(cap);
            sodium_bin2base64(b64, cap, (const unsigned char *)data, len, sodium_base64_VARIANT_ORIGINAL);
            json_object_object_add(m, "content", json_object_new_string(b64));
            free(b64);
            json_object_object_add(m, "format", json_object_new_string("base64"));
            if (!json_object_object_get(m, "mimetype"))
                json_object_object_add(m, "mimetype", json_object_new_string("application/octet-stream"));
        }
        s_reply_json(r, 200, m);
    }
    free(data);
}

/* ---- writes ----------------------------------------------------------- */

/* The body as a JSON object, or NULL (answered: 413, 415 or 400). */
static json_object *s_body(s_req_t *r)
{
    const http_request_t *req = r->req;
    if (req->too_big) {
        s_error(r, 413, "the request is larger than %u MiB, the file API's limit", CONTENTS_BODY_MAX >> 20);
        return NULL;
    }
    const char *ct = transport_http_header(req, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
        s_error(r, 415, "Content-Type must be application/json");
        return NULL;
    }
    if (req->len > SMALL_BODY_MAX) {
        s_error(r, 413, "the request is larger than %u KiB, the limit for anything but a save", SMALL_BODY_MAX >> 10);
        return NULL;
    }
    char why[160];
    json_object *o = s_parse(req->body, req->len, why, sizeof why);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        s_error(r, 400, "the body must be a JSON object (%s)", o ? "another JSON value" : why);
        return NULL;
    }
    return o;
}

/* The current content's sha256 (hex), or "" when the file does not exist.
 * false (answered) when it cannot be read. */
static bool s_current_hash(s_req_t *r, char hex[crypto_hash_sha256_BYTES * 2 + 1])
{
    size_t len = 0;
    char *data = fsroot_read(r->self->root, r->path, 0, CONTENTS_FILE_MAX, &len, NULL);
    if (!data) {
        if (errno == ENOENT) {
            hex[0] = '\0';
            return true;
        }
        s_errno(r, errno, "read", r->path);
        return false;
    }
    s_hash_hex(data, len, hex);
    free(data);
    return true;
}

/* If-Match / If-None-Match: whether the save may go on (else answered 412).
 * Checked right before the write, in the same turn of the loop: no other
 * request of this server can come between (another process still can, in
 * the microseconds between the read and the rename). */
static bool s_preconditions(s_req_t *r)
{
    const char *im = transport_http_header(r->req, "If-Match");
    const char *inm = transport_http_header(r->req, "If-None-Match");
    if (!im && !inm)
        return true;
    char cur[crypto_hash_sha256_BYTES * 2 + 1];
    if (!s_current_hash(r, cur))
        return false;
    if (inm && strcmp(inm, "*") == 0 && cur[0]) {
        s_error(r, 412, "%s already exists: not overwritten (If-None-Match: *)", r->path);
        return false;
    }
    if (im) {
        char want[80];
        size_t n = strlen(im);
        if (n >= 2 && im[0] == '"' && im[n - 1] == '"')
            snprintf(want, sizeof want, "%.*s", (int)(n - 2), im + 1);
        else
            snprintf(want, sizeof want, "%s", im);
        if (strcmp(want, "*") == 0 ? !cur[0] : strcmp(want, cur) != 0) {
            s_error(r, 412, cur[0] ? "%s changed on disk since it was last read or saved here: not overwritten. "
                                     "Reload it, or save again without If-Match to overwrite it."
                                   : "%s was deleted or moved on disk since it was last read here: not saved. "
                                     "Save again without If-Match to create it.",
                    r->path);
            return false;
        }
    }
    return true;
}

/* Writes data to r->path and answers with its model (201 when it is new).
 * flags: FSROOT_EXCL to create only (a name taken is 409, never replaced). */
static void s_save(s_req_t *r, const char *data, size_t len, const char *type, int flags)
{
    struct stat st;
    bool existed = fsroot_stat(r->self->root, r->path, 0, &st) == 0;
    if (fsroot_write(r->self->root, r->path, flags, data, len, &st) < 0) {
        int e = errno;
        log_warn("could not save %s: %s", r->path, strerror(e));
        s_errno(r, e, "save", r->path);
        return;
    }
    json_object *m = s_model(r->path, &st);
    json_object_object_add(m, "type", json_object_new_string(type));
    s_add_hash(m, data, len);
    s_reply_json(r, existed ? 200 : 201, m);
}

/* A string member's value as a NUL-terminated copy of at most max bytes,
 * or NULL (absent, not a string, longer). */
static char *s_tape_str(const nbjson_t *j, int64_t v, size_t max)
{
    if (v < 0 || nbjson_type(j, (uint32_t)v) != NBJSON_STRING)
        return NULL;
    buf_t b;
    buf_init(&b, max + 1); /* room for the NUL */
    if (nbjson_string(j, (uint32_t)v, &b) < 0 || b.len > max || memchr(b.data ? b.data : "", '\0', b.len) ||
        buf_putc(&b, '\0') < 0) {
        buf_free(&b);
        return NULL;
    }
    return buf_take(&b);
}

/* A save. The body (up to CONTENTS_BODY_MAX) is read through nbjson's tape,
 * never a json-c tree: memory stays a small multiple of the body (the body,
 * at most 4 bytes of tape per byte, and the file written, at most
 * CONTENTS_FILE_MAX), and the nesting is at most NBJSON_DEPTH levels. */
static void s_put(s_req_t *r)
{
    const http_request_t *req = r->req;
    if (!*r->path) {
        s_error(r, 400, "PUT needs a path under /api/contents/");
        return;
    }
    if (req->too_big) {
        s_error(r, 413, "the request is larger than %u MiB, the file API's limit", CONTENTS_BODY_MAX >> 20);
        return;
    }
    const char *ct = transport_http_header(req, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
        s_error(r, 415, "Content-Type must be application/json");
        return;
    }
    char why[160];
    nbjson_t *j = nbjson_parse(req->body, req->len, why, sizeof why);
    if (!j || nbjson_type(j, 0) != NBJSON_OBJECT) {
        s_error(r, 400, "the body must be a JSON object (%s)", j ? "another JSON value" : why);
        nbjson_free(&j);
        return;
    }
    int64_t jcontent = nbjson_member(j, 0, "content");
    char *type = s_tape_str(j, nbjson_member(j, 0, "type"), 32);
    char *format = s_tape_str(j, nbjson_member(j, 0, "format"), 32);
    if (nbjson_member(j, 0, "copy_from") >= 0) {
        s_error(r, 400, "copy_from is not supported by this server: GET the file and PUT its content");
    } else if (!type || (strcmp(type, "notebook") != 0 && strcmp(type, "file") != 0 &&
                         strcmp(type, "directory") != 0)) {
        s_error(r, 400, "the body's type must be notebook, file or directory");
    } else if (strcmp(type, "directory") == 0) {
        struct stat st;
        if (fsroot_mkdir(r->self->root, r->path, 0) < 0 && errno != EEXIST)
            s_errno(r, errno, "create", r->path);
        else if (fsroot_stat(r->self->root, r->path, 0, &st) < 0)
            s_errno(r, errno, "create", r->path);
        else if (!S_ISDIR(st.st_mode))
            s_error(r, 409, "%s exists and is not a directory", r->path);
        else
            s_reply_json(r, 201, s_model(r->path, &st));
    } else if (jcontent < 0) {
        s_error(r, 400, "the body has no content (saving needs the whole file)");
    } else if (strcmp(type, "notebook") == 0) {
        int64_t cells = nbjson_member(j, (uint32_t)jcontent, "cells");
        int64_t nbf = nbjson_member(j, (uint32_t)jcontent, "nbformat");
        if (cells < 0 || nbjson_type(j, (uint32_t)cells) != NBJSON_ARRAY || nbf < 0 ||
            nbjson_type(j, (uint32_t)nbf) != NBJSON_NUMBER) {
            s_error(r, 400, "a notebook's content must be an nbformat object (with cells and nbformat)");
        } else if (s_preconditions(r)) {
            buf_t b; /* bounded: the writer stops at the cap, whatever the indentation costs */
            buf_init(&b, CONTENTS_FILE_MAX);
            int rc = nbjson_write_nb(j, (uint32_t)jcontent, &b);
            if (rc == 0)
                rc = buf_putc(&b, '\n');
            nbjson_free(&j); /* before the write: the peak is body + tape, or body + file */
            if (rc < 0)
                s_error(r, 413, "the notebook is larger than %u MiB, the file API's limit", CONTENTS_FILE_MAX >> 20);
            else
                s_save(r, b.data, b.len, "notebook", 0);
            buf_free(&b);
        }
    } else if (nbjson_type(j, (uint32_t)jcontent) != NBJSON_STRING) {
        s_error(r, 400, "a file's content must be a string (format text or base64)");
    } else if (format && strcmp(format, "base64") != 0 && strcmp(format, "text") != 0) {
        s_error(r, 400, "format must be text or base64");
    } else {
        bool b64 = format && strcmp(format, "base64") == 0;
        /* One cap both ways: what is saved can be read back. base64 takes
         * 4 bytes for 3 (and may carry line breaks). */
        buf_t text;
        buf_init(&text, b64 ? CONTENTS_BODY_MAX : CONTENTS_FILE_MAX);
        int rc = nbjson_string(j, (uint32_t)jcontent, &text);
        nbjson_free(&j);
        if (rc < 0) {
            s_error(r, 413, "the file is larger than %u MiB, the file API's limit", CONTENTS_FILE_MAX >> 20);
        } else if (b64) {
            size_t n = text.len, bl = 0;
            unsigned char *bin = xmalloc(n / 4 * 3 + 3);
            if (sodium_base642bin(bin, n / 4 * 3 + 3, text.data ? text.data : "", n, "\r\n", &bl, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) != 0)
                s_error(r, 400, "content is not valid base64");
            else if (bl > CONTENTS_FILE_MAX)
                s_error(r, 413, "the file is larger than %u MiB, the file API's limit", CONTENTS_FILE_MAX >> 20);
            else if (s_preconditions(r))
                s_save(r, (const char *)bin, bl, "file", 0);
            free(bin);
        } else if (s_preconditions(r)) {
            s_save(r, text.data ? text.data : "", text.len, "file", 0);
        }
        buf_free(&text);
    }
    nbjson_free(&j);
    free(type);
    free(format);
}

/* POST to a directory: a new untitled notebook, file or directory in it,
 * named as Jupyter names them (Untitled.ipynb, Untitled1.ipynb, ...). */
static void s_post_new(s_req_t *r)
{
    json_object *body = r->req->len || r->req->too_big ? s_body(r) : json_object_new_object();
    if (!body)
        return;
    json_object *jtype = NULL, *jext = NULL;
    json_object_object_get_ex(body, "type", &jtype);
    json_object_object_get_ex(body, "ext", &jext);
    const char *type = json_object_is_type(jtype, json_type_string) ? json_object_get_string(jtype) : "file";
    const char *ext = json_object_is_type(jext, json_type_string) ? json_object_get_string(jext) : NULL;
    struct stat st;
    if (json_object_object_get_ex(body, "copy_from", NULL)) {
        s_error(r, 400, "copy_from is not supported by this server: GET the file and PUT its content");
    } else if (fsroot_stat(r->self->root, r->path, 0, &st) < 0) {
        s_errno(r, errno, "create in", r->path);
    } else if (!S_ISDIR(st.st_mode)) {
        s_error(r, 400, "%s is not a directory: POST makes a new file in a directory", r->path);
    } else if (strcmp(type, "notebook") != 0 && strcmp(type, "file") != 0 && strcmp(type, "directory") != 0) {
        s_error(r, 400, "type must be notebook, file or directory");
    } else if (ext && (strchr(ext, '/') || strlen(ext) > 32)) {
        s_error(r, 400, "ext must be a short file extension such as .txt");
    } else {
        bool dir = strcmp(type, "directory") == 0, nb = strcmp(type, "notebook") == 0;
        const char *stem = dir ? "Untitled Folder" : nb ? "Untitled" : "untitled";
        const char *suffix = dir ? "" : nb ? ".ipynb" : ext ? ext : ".txt";
        static const char empty_nb[] = "{\n \"cells\": [],\n \"metadata\": {},\n \"nbformat\": 4,\n"
                                       " \"nbformat_minor\": 5\n}\n";
        for (int i = 0; i < 1000; i++) {
            char name[FSROOT_NAME_MAX + 1];
            if (i)
                snprintf(name, sizeof name, "%s%s%d%s", stem, dir ? " " : "", i, suffix);
            else
                snprintf(name, sizeof name, "%s%s", stem, suffix);
            char *path = *r->path ? xasprintf("%s/%s", r->path, name) : xstrdup(name);
            /* Free only when the name is known absent (ENOENT): a name too
             * long, or any other error, is said, never taken for free. */
            if (strlen(path) > FSROOT_PATH_MAX) {
                s_errno(r, ENAMETOOLONG, "create", path);
                free(path);
                json_object_put(body);
                return;
            }
            bool taken = fsroot_stat(r->self->root, path, 0, &st) == 0;
            int e = errno;
            if (!taken && e != ENOENT) {
                s_errno(r, e, "create", path);
                free(path);
                json_object_put(body);
                return;
            }
            if (!taken) {
                snprintf(r->path, sizeof r->path, "%s", path);
                free(path);
                /* Created exclusively: a name another process took since
                 * the stat is never overwritten (409, try again). */
                if (dir) {
                    if (fsroot_mkdir(r->self->root, r->path, 0) < 0 || fsroot_stat(r->self->root, r->path, 0, &st) < 0)
                        s_errno(r, errno, "create", r->path);
                    else
                        s_reply_json(r, 201, s_model(r->path, &st));
                } else {
                    s_save(r, nb ? empty_nb : "", nb ? sizeof empty_nb - 1 : 0, nb ? "notebook" : "file", FSROOT_EXCL);
                }
                json_object_put(body);
                return;
            }
            free(path);
        }
        s_error(r, 409, "no free untitled name in %s", *r->path ? r->path : "(the root)");
    }
    json_object_put(body);
}

/* PATCH {"path": new}: a rename (never over an existing file: 409). The
 * checkpoint moves with it. */
static void s_patch(s_req_t *r)
{
    json_object *body = s_body(r);
    if (!body)
        return;
    json_object *jp = NULL;
    s_req_t to = {.self = r->self, .req = r->req, .out = r->out};
    if (!json_object_object_get_ex(body, "path", &jp) || !json_object_is_type(jp, json_type_string)) {
        s_error(r, 400, "PATCH needs {\"path\": \"new/path\"}");
    } else if (!*r->path) {
        s_error(r, 400, "the root cannot be renamed");
    } else if (!s_normalize(&to, json_object_get_string(jp), (size_t)json_object_get_string_len(jp)) || !*to.path) {
        s_error(r, 400, "the new path is empty or too long");
    } else if (fsroot_check(to.path, 0) < 0) {
        s_errno(r, errno, "rename to", to.path);
    } else if (fsroot_rename(r->self->root, r->path, to.path, 0) < 0) {
        int e = errno;
        s_errno(r, e, "rename", e == EEXIST ? to.path : r->path);
    } else {
        char *cf = s_cp_path(r->path), *ct = s_cp_path(to.path), *cd = s_cp_dir(to.path);
        struct stat st;
        if (fsroot_stat(r->self->root, cf, FSROOT_HIDDEN, &st) == 0) {
            fsroot_mkdir(r->self->root, cd, FSROOT_HIDDEN);
            fsroot_unlink(r->self->root, ct, FSROOT_HIDDEN); /* a stale one from an earlier file of that name */
            if (fsroot_rename(r->self->root, cf, ct, FSROOT_HIDDEN) < 0)
                log_warn("the checkpoint of %s did not follow it to %s: %s", r->path, to.path, strerror(errno));
        }
        free(cf);
        free(ct);
        free(cd);
        if (fsroot_stat(r->self->root, to.path, 0, &st) < 0)
            s_errno(r, errno, "rename", to.path);
        else
            s_reply_json(r, 200, s_model(to.path, &st));
    }
    json_object_put(body);
}

/* DELETE: a file (and its checkpoint); directories are not deleted here. */
static void s_delete(s_req_t *r)
{
    struct stat st;
    if (fsroot_stat(r->self->root, r->path, 0, &st) < 0) {
        s_errno(r, errno, "delete", r->path);
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        s_error(r, 400, "%s is a directory: this server deletes files only", *r->path ? r->path : "(the root)");
        return;
    }
    if (fsroot_unlink(r->self->root, r->path, 0) < 0) {
        s_errno(r, errno, "delete", r->path);
        return;
    }
    char *cp = s_cp_path(r->path);
    fsroot_unlink(r->self->root, cp, FSROOT_HIDDEN);
    free(cp);
    r->out->status = 204;
    r->out->content_type = NULL;
    r->out->body = xstrdup("");
    r->out->len = 0;
}

/* ---- checkpoints ------------------------------------------------------ */

static json_object *s_cp_model(const struct stat *st)
{
    json_object *m = json_object_new_object();
    char t[48];
    s_iso(t, sizeof t, &st->st_mtim);
    json_object_object_add(m, "id", json_object_new_string(CP_ID));
    json_object_object_add(m, "last_modified", json_object_new_string(t));
    return m;
}

/* Copies from to to (both regular files), atomically. */
static int s_copy(contents_t *self, const char *from, int ff, const char *to, int tf, struct stat *st)
{
    size_t len = 0;
    char *data = fsroot_read(self->root, from, ff, CONTENTS_FILE_MAX, &len, NULL);
    if (!data)
        return -1;
    int rc = fsroot_write(self->root, to, tf, data, len, st);
    int e = errno;
    free(data);
    errno = e;
    return rc;
}

/* path/checkpoints[/id]: list (GET), create (POST), restore (POST id),
 * delete (DELETE id). One checkpoint per file, as Jupyter keeps it. */
static void s_checkpoints(s_req_t *r, const char *id)
{
    const char *m = r->req->method;
    struct stat st;
    if (fsroot_stat(r->self->root, r->path, 0, &st) < 0) {
        s_errno(r, errno, "checkpoint", r->path);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        s_error(r, 400, "%s: only files have checkpoints", *r->path ? r->path : "(the root)");
        return;
    }
    if (id && strcmp(id, CP_ID) != 0) {
        s_error(r, 404, "%s has no checkpoint %.40s (its one checkpoint is \"" CP_ID "\")", r->path, id);
        return;
    }
    char *cp = s_cp_path(r->path);
    struct stat cst;
    bool has = fsroot_stat(r->self->root, cp, FSROOT_HIDDEN, &cst) == 0 && S_ISREG(cst.st_mode);
    if (!id && (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)) {
        json_object *list = json_object_new_array();
        if (has)
            json_object_array_add(list, s_cp_model(&cst));
        s_reply_json(r, 200, list);
    } else if (!id && strcmp(m, "POST") == 0) {
        char *dir = s_cp_dir(r->path);
        if (fsroot_mkdir(r->self->root, dir, FSROOT_HIDDEN) < 0 && errno != EEXIST)
            s_errno(r, errno, "make a checkpoint of", r->path);
        else if (s_copy(r->self, r->path, 0, cp, FSROOT_HIDDEN, &cst) < 0)
            s_errno(r, errno, "make a checkpoint of", r->path);
        else
            s_reply_json(r, 201, s_cp_model(&cst));
        free(dir);
    } else if (id && !has) {
        s_error(r, 404, "%s has no checkpoint yet", r->path);
    } else if (id && strcmp(m, "POST") == 0) {
        if (s_copy(r->self, cp, FSROOT_HIDDEN, r->path, 0, NULL) < 0)
            s_errno(r, errno, "restore the checkpoint of", r->path);
        else {
            r->out->status = 204;
            r->out->content_type = NULL;
            r->out->body = xstrdup("");
        }
    } else if (id && strcmp(m, "DELETE") == 0) {
        if (fsroot_unlink(r->self->root, cp, FSROOT_HIDDEN) < 0)
            s_errno(r, errno, "delete the checkpoint of", r->path);
        else {
            r->out->status = 204;
            r->out->content_type = NULL;
            r->out->body = xstrdup("");
        }
    } else {
        s_error(r, 405, "%s is not a method for checkpoints (GET or POST .../checkpoints; POST or DELETE "
                        ".../checkpoints/" CP_ID ")", m);
    }
    free(cp);
}

/* ---- dispatch --------------------------------------------------------- */

static void s_handle(void *ud, const http_request_t *req, http_reply_t *out)
{
    contents_t *self = ud;
    const char *rest = req->path + strlen(PREFIX);
    if (*rest && *rest != '/')
        return; /* /api/contentsX: not ours */
    s_req_t r = {.self = self, .req = req, .out = out};
    size_t n = strlen(rest);
    /* .../checkpoints and .../checkpoints/<id> (as Jupyter routes them: a
     * file named "checkpoints" is reached only by PUT and PATCH). */
    const char *cp_id = NULL;
    bool cp = false;
    if (strcmp(req->method, "PUT") != 0 && strcmp(req->method, "PATCH") != 0) {
        const char *at = NULL;
        for (const char *p = rest; (p = strstr(p, "/checkpoints")); p++)
            at = p;
        if (at && (at[12] == '\0' || (at[12] == '/' && at[13] && !strchr(at + 13, '/')))) {
            cp = true;
            cp_id = at[12] ? at + 13 : NULL;
            n = (size_t)(at - rest);
        }
    }
    if (!s_normalize(&r, rest, n)) {
        s_errno(&r, ENAMETOOLONG, "read", "(path)");
        return;
    }
    if (fsroot_check(r.path, 0) < 0) {
        s_errno(&r, errno, "read", r.path);
        return;
    }
    const char *m = req->method;
    if (cp)
        s_checkpoints(&r, cp_id);
    else if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
        s_get(&r);
    else if (strcmp(m, "PUT") == 0)
        s_put(&r);
    else if (strcmp(m, "POST") == 0)
        s_post_new(&r);
    else if (strcmp(m, "PATCH") == 0)
        s_patch(&r);
    else if (strcmp(m, "DELETE") == 0)
        s_delete(&r);
    else
        s_error(&r, 405, "%s is not a method of /api/contents (GET, PUT, POST, PATCH, DELETE)", m);
    if (req->len > TRIM_AFTER || out->len > TRIM_AFTER)
        malloc_trim(0); /* a notebook of tens of MiB went through: give the memory back */
}

contents_t *contents_new(transport_http_t *http, const char *root)
{
    fsroot_t *fr = fsroot_new(root);
    if (!fr) {
        log_warn("the file API is off: cannot open %s: %s", root, strerror(errno));
        return NULL;
    }
    contents_t *self = xcalloc(1, sizeof *self);
    self->root = fr;
    transport_http_handler(http, PREFIX, CONTENTS_BODY_MAX, s_handle, self);
    return self;
}

void contents_destroy(contents_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fsroot_destroy(&(*self_p)->root);
    free(*self_p);
    *self_p = NULL;
}
