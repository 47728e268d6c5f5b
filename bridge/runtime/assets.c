/* assets: the store of rich outputs and full-output files. */
#define LOG_MODULE "assets"
#include "assets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "fileio.h"
#include "jpaths.h"
#include "log.h"
#include "mem.h"

struct assets {
    char *dir;                      /* owned */
    bool http;                      /* name assets by their HTTP path */
    size_t max_one;
    unsigned long long max_total;
};

static const struct {
    const char *mime, *ext;
} s_types[] = {
    {"image/png", "png"}, {"image/jpeg", "jpg"}, {"image/svg+xml", "svg"}, {"text/html", "html"},
    {"text/plain", "txt"},
};

const char *assets_ext(const char *mime)
{
    for (size_t i = 0; i < sizeof s_types / sizeof s_types[0]; i++)
        if (strcmp(mime, s_types[i].mime) == 0)
            return s_types[i].ext;
    return NULL;
}

static const char *s_mime_of_ext(const char *ext)
{
    for (size_t i = 0; i < sizeof s_types / sizeof s_types[0]; i++)
        if (strcmp(ext, s_types[i].ext) == 0)
            return s_types[i].mime;
    return NULL;
}

assets_t *assets_new(const char *dir, size_t max_one, unsigned long long max_total)
{
    assets_t *self = xcalloc(1, sizeof *self);
    self->dir = xstrdup(dir);
    self->max_one = max_one ? max_one : ASSETS_DEFAULT_MAX_ONE;
    self->max_total = max_total ? max_total : ASSETS_DEFAULT_MAX_TOTAL;
    return self;
}

void assets_destroy(assets_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->dir);
    free(*self_p);
    *self_p = NULL;
}

const char *assets_dir(const assets_t *self)
{
    return self->dir;
}

void assets_set_dir(assets_t *self, const char *dir)
{
    if (strcmp(self->dir, dir) == 0)
        return;
    free(self->dir);
    self->dir = xstrdup(dir);
}

void assets_serve_http(assets_t *self, bool on)
{
    self->http = on;
}

bool assets_http(const assets_t *self)
{
    return self->http;
}

char *assets_link(const assets_t *self, const char *id)
{
    if (self->http)
        return xasprintf("/assets/%s", id);
    return xasprintf("rat://assets/%s (file: %s/asset-%s)", id, self->dir, id);
}

/* "<32 hex>.<known ext>", nothing else. */
static const char *s_valid_id(const char *id)
{
    if (!id)
        return NULL;
    for (int i = 0; i < 32; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return NULL;
    if (id[32] != '.')
        return NULL;
    return s_mime_of_ext(id + 33);
}

static void s_human(char *out, size_t n, unsigned long long bytes)
{
    if (bytes >= (1ull << 20))
        snprintf(out, n, "%.1f MB", (double)bytes / (1 << 20));
    else
        snprintf(out, n, "%llu KB", (bytes + 1023) / 1024);
}

int assets_put(assets_t *self, const char *mime, const void *data, size_t len, char id_out[ASSETS_ID_MAX],
               char *err, size_t errlen)
{
    const char *ext = assets_ext(mime);
    if (!ext) {
        snprintf(err, errlen, "%s is not a stored type", mime);
        return -1;
    }
    if (len > self->max_one) {
        char a[32], b[32];
        s_human(a, sizeof a, len);
        s_human(b, sizeof b, self->max_one);
        snprintf(err, errlen, "%s of %s not saved: over the %s limit for one asset", mime, a, b);
        return -1;
    }
    if (jpaths_ensure_dir(self->dir) < 0) {
        snprintf(err, errlen, "%s not saved: cannot create %s (%s)", mime, self->dir, strerror(errno));
        return -1;
    }
    unsigned char raw[16];
    char hex[33];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(hex, sizeof hex, raw, sizeof raw);
    snprintf(id_out, ASSETS_ID_MAX, "%s.%s", hex, ext);
    char *path = xasprintf("%s/asset-%s", self->dir, id_out);
    int rc = fileio_write_atomic(path, data, len, 0600);
    if (rc < 0)
        snprintf(err, errlen, "%s not saved: %s (%s)", mime, strerror(errno), self->dir);
    free(path);
    if (rc == 0)
        assets_trim(self);
    return rc;
}

char *assets_path(const assets_t *self, const char *id, const char **mime)
{
    const char *m = s_valid_id(id);
    if (!m)
        return NULL;
    char *path = xasprintf("%s/asset-%s", self->dir, id);
    if (!fileio_is_file(path)) {
        free(path);
        return NULL;
    }
    if (mime)
        *mime = m;
    return path;
}

bool assets_output_ok(const char *name)
{
    if (!name || strncmp(name, "output-", 7) != 0)
        return false;
    for (int i = 7; i < 23; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return strcmp(name + 23, ".txt") == 0;
}

char *assets_output_path(const assets_t *self, const char *name)
{
    if (!assets_output_ok(name))
        return NULL;
    char *path = xasprintf("%s/%s", self->dir, name);
    if (!fileio_is_file(path)) {
        free(path);
        return NULL;
    }
    return path;
}

typedef struct {
    char *name;
    off_t size;
    time_t mtime;
    long nsec;
} s_file_t;

static bool s_ours(const char *name)
{
    return (strncmp(name, "asset-", 6) == 0 && s_valid_id(name + 6)) ||
           (strncmp(name, "output-", 7) == 0 && strstr(name, ".txt"));
}

static size_t s_scan(const assets_t *self, s_file_t **out)
{
    DIR *d = opendir(self->dir);
    *out = NULL;
    if (!d)
        return 0;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!s_ours(e->d_name))
            continue;
        char *p = xasprintf("%s/%s", self->dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            if (n == cap) {
                cap = cap ? cap * 2 : 32;
                *out = xrealloc(*out, cap * sizeof **out);
            }
            (*out)[n].name = xstrdup(e->d_name);
            (*out)[n].size = st.st_size;
            (*out)[n].mtime = st.st_mtim.tv_sec;
            (*out)[n].nsec = st.st_mtim.tv_nsec;
            n++;
        }
        free(p);
    }
    closedir(d);
    return n;
}

/* Newest first. */
static int s_by_mtime(const void *a, const void *b)
{
    const s_file_t *x = a, *y = b;
    if (x->mtime != y->mtime)
        return x->mtime < y->mtime ? 1 : -1;
    return x->nsec < y->nsec ? 1 : x->nsec > y->nsec ? -1 : 0;
}

void assets_trim(assets_t *self)
{
    s_file_t *files = NULL;
    size_t n = s_scan(self, &files);
    unsigned long long total = 0;
    for (size_t i = 0; i < n; i++)
        total += (unsigned long long)files[i].size;
    if (total > self->max_total) {
        if (n)
            qsort(files, n, sizeof *files, s_by_mtime);
        for (size_t i = n; i > 1 && total > self->max_total; i--) {
            char *p = xasprintf("%s/%s", self->dir, files[i - 1].name);
            if (unlink(p) == 0) {
                total -= (unsigned long long)files[i - 1].size;
                log_info("evicted %s (assets over %llu bytes)", files[i - 1].name, self->max_total);
            }
            free(p);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(files[i].name);
    free(files);
}

size_t assets_list(const assets_t *self, assets_entry_t **out)
{
    s_file_t *files = NULL;
    size_t n = s_scan(self, &files);
    if (n)
        qsort(files, n, sizeof *files, s_by_mtime);
    *out = n ? xcalloc(n, sizeof **out) : NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(files[i].name, "asset-", 6) == 0) {
            assets_entry_t *e = &(*out)[k++];
            snprintf(e->id, sizeof e->id, "%s", files[i].name + 6);
            e->mime = s_valid_id(e->id);
            e->size = (size_t)files[i].size;
            e->mtime = files[i].mtime;
        }
        free(files[i].name);
    }
    free(files);
    return k;
}

void assets_clear(assets_t *self)
{
    s_file_t *files = NULL;
    size_t n = s_scan(self, &files);
    for (size_t i = 0; i < n; i++) {
        char *p = xasprintf("%s/%s", self->dir, files[i].name);
        unlink(p);
        free(p);
        free(files[i].name);
    }
    free(files);
}
