/* main: rat-py's entry point: parse the command line, dispatch. No logic here
 * beyond choosing what to run and the exit status. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "config.h"
#include "doctor.h"
#include "family.h"
#include "gateway.h"
#include "install.h"
#include "kernelspec.h"
#include "log.h"
#include "mem.h"
#include "mgr.h"
#include "rat/rat.h"
#include "sigs.h"

static int s_list_kernels(void)
{
    kernelspec_t **list = NULL;
    size_t n = kernelspec_list(&list);
    if (n == 0) {
        printf("No kernelspecs found. Install one, e.g. apt install python3-ipykernel.\n");
        return 1;
    }
    size_t wn = 4, wl = 8, wd = 12;
    for (size_t i = 0; i < n; i++) {
        if (strlen(list[i]->name) > wn)
            wn = strlen(list[i]->name);
        if (strlen(list[i]->language) > wl)
            wl = strlen(list[i]->language);
        if (strlen(list[i]->display_name) > wd)
            wd = strlen(list[i]->display_name);
    }
    printf("%-*s  %-*s  %-*s  %s\n", (int)wn, "NAME", (int)wl, "LANGUAGE", (int)wd, "DISPLAY NAME", "PATH");
    for (size_t i = 0; i < n; i++)
        printf("%-*s  %-*s  %-*s  %s\n", (int)wn, list[i]->name, (int)wl, list[i]->language, (int)wd,
               list[i]->display_name, list[i]->dir);
    kernelspec_free_list(list, n);
    return 0;
}

/* rat-py kernels --gateway URL: GET /api/kernelspecs, in the same columns
 * (the last one says where: the gateway, and its default). */
static int s_list_gateway_kernels(const rat_options_t *o)
{
    gateway_opts_t go = {.url = o->gateway, .token = o->gateway_token, .ca_file = o->gateway_ca,
                         .insecure = o->gateway_insecure};
    char err[1024];
    gateway_t *gw = gateway_new(NULL, &go, err, sizeof err);
    if (!gw) {
        fprintf(stderr, "rat-py: %s\n", err);
        return 1;
    }
    long status = 0;
    char *body = NULL;
    int rc = 1;
    json_object *j = NULL, *specs = NULL;
    if (gateway_request_sync(gw, "GET", "/api/kernelspecs", NULL, GATEWAY_REQUEST_TIMEOUT_MS, &status, &body, err,
                             sizeof err) < 0) {
        fprintf(stderr, "rat-py: cannot list the kernelspecs: %s\n", err);
        goto out;
    }
    if (status != 200) {
        char *e = gateway_http_error(gw, "cannot list the kernelspecs", status, body);
        fprintf(stderr, "rat-py: %s\n", e);
        free(e);
        goto out;
    }
    j = json_tokener_parse(body);
    if (!j || !json_object_object_get_ex(j, "kernelspecs", &specs) || !json_object_is_type(specs, json_type_object)) {
        fprintf(stderr, "rat-py: the gateway at %s answered GET /api/kernelspecs without a kernelspecs object\n",
                gateway_url(gw));
        goto out;
    }
    json_object *def = NULL;
    const char *dname = json_object_object_get_ex(j, "default", &def) ? json_object_get_string(def) : NULL;
    printf("%-16s  %-10s  %-28s  %s\n", "NAME", "LANGUAGE", "DISPLAY NAME", "WHERE");
    json_object_object_foreach(specs, name, v)
    {
        json_object *spec = NULL, *x = NULL;
        const char *lang = "", *disp = "";
        if (json_object_object_get_ex(v, "spec", &spec)) {
            if (json_object_object_get_ex(spec, "language", &x) && json_object_is_type(x, json_type_string))
                lang = json_object_get_string(x);
            if (json_object_object_get_ex(spec, "display_name", &x) && json_object_is_type(x, json_type_string))
                disp = json_object_get_string(x);
        }
        printf("%-16.64s  %-10.32s  %-28.80s  %s%s\n", name, lang, disp, gateway_url(gw),
               dname && strcmp(dname, name) == 0 ? " (default)" : "");
    }
    rc = 0;
out:
    json_object_put(j);
    free(body);
    gateway_destroy(&gw);
    return rc;
}

/* Everything after the command line is parsed. */
static int s_main(config_t *cfg, const family_t *fam)
{
    rat_options_t *o = &cfg->opts;
    if (o->log_level)
        log_set_level((log_level_t)log_level_parse(o->log_level));
    else if (getenv("RAT_LOG"))
        log_set_level(log_level_parse(getenv("RAT_LOG")) >= 0 ? (log_level_t)log_level_parse(getenv("RAT_LOG"))
                                                               : LOG_LEVEL_WARN);
    switch (cfg->cmd) {
    case CONFIG_CMD_HELP:
        config_usage(stdout);
        return 0;
    case CONFIG_CMD_VERSION:
        printf("rat-py %s\n", RAT_VERSION);
        return 0;
    case CONFIG_CMD_KERNELS:
        return o->gateway ? s_list_gateway_kernels(o) : s_list_kernels();
    case CONFIG_CMD_SERVE:
        break;
    }
    char *family_kernel_name = NULL;
    if (fam->language && !o->kernel && !o->existing) {
        char err[1024];
        if (o->python || o->venv || o->kernelspec_dir) {
            fprintf(stderr, "%s: --python, --venv and --kernelspec-dir choose the Python kernel; %s runs %s\n",
                    fam->prog, fam->prog, fam->what);
            return 2;
        }
        family_kernel_name = family_kernel(fam, err, sizeof err);
        if (!family_kernel_name) {
            fprintf(stderr, "%s: %s\n", fam->prog, err);
            return 1;
        }
        o->kernel = family_kernel_name;
    }
    /* The server itself is the library's (include/rat/rat.h); the options
     * were checked by config_parse with the library's own check. */
    char err[1024];
    sigs_end_process_until_attached(); /* this process is rat-py's: SIGTERM during start-up ends it */
    rat_server_t *srv = rat_server_new(o, err, sizeof err);
    free(family_kernel_name);
    if (!srv) {
        fprintf(stderr, "rat-py: %s\n", err);
        return 2;
    }
    int status = cfg->http ? rat_server_run_http(srv) : rat_server_run_stdio(srv);
    rat_server_destroy(&srv);
    return status;
}

/* install, uninstall and doctor parse their own options; -1 for anything
 * else (the server, and `kernels`, which config_parse reads). */
static int s_subcommand(int argc, char **argv, const family_t *fam)
{
    if (argc > 1 && strcmp(argv[1], "install") == 0)
        return install_main(argc - 1, argv + 1, argv[0], fam);
    if (argc > 1 && strcmp(argv[1], "uninstall") == 0)
        return install_uninstall_main(argc - 1, argv + 1, argv[0], fam);
    if (argc > 1 && strcmp(argv[1], "doctor") == 0)
        return doctor_main(argc - 1, argv + 1, argv[0], fam);
    return -1;
}

int main(int argc, char **argv)
{
    /* A fixed mmap threshold: every block over 128 KiB (a kernel's stream
     * message of megabytes, its decoded pieces) is its own mapping, given
     * back to the system when freed. glibc's default raises the threshold
     * to the largest block freed so far, after which a flood's megabyte
     * messages come from the heap and stay resident as fragments after
     * the flood (issue 14: 11 MB idle after a print flood). */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    /* One malloc arena for every thread: libzmq's I/O thread allocates the
     * messages the main thread frees, and its own arena kept 100-140 KB of
     * an idle rat-py's RSS (issue 14) for no gain with two busy threads. */
    mallopt(M_ARENA_MAX, 1);
    /* `rat`: the runtime manager (named runtimes, each a rat-py --http). */
    if (mgr_is_manager(argv[0]))
        return mgr_main(argc, argv);
    /* The name we run under picks the language (rat-r, rat-ju, ...). */
    const family_t *fam = family_from_argv0(argv[0]);
    int status = s_subcommand(argc, argv, fam);
    if (status >= 0)
        return status;
    config_t cfg;
    if (config_parse(&cfg, argc, argv) < 0) {
        config_free(&cfg);
        return 2;
    }
    if (cfg.sub_at > 0) {
        /* A subcommand after options, as in `git -C dir status`:
         * `rat-py --gateway URL doctor` is `rat-py doctor --gateway URL`. */
        char **av = xcalloc((size_t)argc + 1, sizeof *av);
        int n = 0;
        av[n++] = argv[0];
        av[n++] = argv[cfg.sub_at];
        for (int i = 1; i < argc; i++)
            if (i != cfg.sub_at)
                av[n++] = argv[i];
        config_free(&cfg);
        status = s_subcommand(n, av, fam);
        if (status < 0) { /* kernels: the server's own parse */
            if (config_parse(&cfg, n, av) < 0)
                status = 2;
            else
                status = s_main(&cfg, fam);
            config_free(&cfg);
        }
        free(av);
        return status;
    }
    status = s_main(&cfg, fam);
    config_free(&cfg);
    return status;
}
