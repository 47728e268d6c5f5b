/* rat_api: the public C API (include/rat/rat.h) over the server. */
#include "rat/rat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "mem.h"
#include "server.h"

struct rat_server {
    config_t cfg;          /* points into the owned copies below */
    char *strings[16];     /* owned copies of the option strings */
    size_t nstrings;
};

const char *rat_version(void)
{
    return RAT_VERSION;
}

void rat_options_init(rat_options_t *o)
{
    memset(o, 0, sizeof *o);
    o->port = -1;
}

static const char *s_keep(rat_server_t *s, const char *v)
{
    if (!v)
        return NULL;
    char *c = xstrdup(v);
    if (s->nstrings < sizeof s->strings / sizeof s->strings[0])
        s->strings[s->nstrings++] = c;
    return c;
}

rat_server_t *rat_server_new(const rat_options_t *o, char *err, size_t errlen)
{
    if (o->log_level && log_level_parse(o->log_level) < 0) {
        snprintf(err, errlen, "log level must be debug, info, warn, error or off, not '%s'", o->log_level);
        return NULL;
    }
    if (o->existing && (o->kernel || o->python || o->venv)) {
        snprintf(err, errlen, "existing attaches to a running kernel; it cannot be combined with kernel, python or venv");
        return NULL;
    }
    if (o->python && o->venv) {
        snprintf(err, errlen, "give either python or venv, not both");
        return NULL;
    }
    if (o->port > 65535 || o->boot_timeout_s < 0 || o->assets_max_mb < 0) {
        snprintf(err, errlen, "port, boot timeout or assets limit out of range");
        return NULL;
    }
    rat_server_t *s = xcalloc(1, sizeof *s);
    config_t *c = &s->cfg;
    c->cmd = CONFIG_CMD_SERVE;
    c->cwd = s_keep(s, o->cwd);
    c->kernel = s_keep(s, o->kernel);
    c->python = s_keep(s, o->python);
    c->venv = s_keep(s, o->venv);
    c->existing = s_keep(s, o->existing);
    c->allow_restart = o->allow_restart;
    c->spare = o->spare;
    c->assets_dir = s_keep(s, o->assets_dir);
    c->assets_max_mb = o->assets_max_mb;
    c->boot_timeout_s = o->boot_timeout_s > 0 ? o->boot_timeout_s : 60;
    c->log_level = s_keep(s, o->log_level);
    c->host = s_keep(s, o->host);
    c->port = o->port;
    c->token = s_keep(s, o->token);
    c->insecure_no_token = o->insecure_no_token;
    for (size_t i = 0; o->allow_origins && o->allow_origins[i] && c->norigins < CONFIG_MAX_ORIGINS; i++) {
        char *v = xstrdup(o->allow_origins[i]);
        c->allow_origins[c->norigins++] = v;
    }
    if (c->log_level)
        log_set_level((log_level_t)log_level_parse(c->log_level));
    return s;
}

int rat_server_run_stdio(rat_server_t *s)
{
    s->cfg.http = false;
    return server_run(&s->cfg);
}

int rat_server_run_http(rat_server_t *s)
{
    s->cfg.http = true;
    return server_run(&s->cfg);
}

void rat_server_destroy(rat_server_t **s_p)
{
    if (!s_p || !*s_p)
        return;
    rat_server_t *s = *s_p;
    for (size_t i = 0; i < s->nstrings; i++)
        free(s->strings[i]);
    for (int i = 0; i < s->cfg.norigins; i++)
        free((char *)s->cfg.allow_origins[i]);
    free(s);
    *s_p = NULL;
}
