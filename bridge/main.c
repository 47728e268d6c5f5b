/* main: rat-py's entry point: parse the command line, dispatch. No logic here
 * beyond choosing what to run and the exit status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "kernelspec.h"
#include "log.h"
#include "server.h"

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

int main(int argc, char **argv)
{
    config_t cfg;
    if (config_parse(&cfg, argc, argv) < 0)
        return 2;
    if (cfg.log_level)
        log_set_level((log_level_t)log_level_parse(cfg.log_level));
    else if (getenv("RAT_LOG"))
        log_set_level(log_level_parse(getenv("RAT_LOG")) >= 0 ? (log_level_t)log_level_parse(getenv("RAT_LOG"))
                                                               : LOG_LEVEL_WARN);
    switch (cfg.cmd) {
    case CONFIG_CMD_HELP:
        config_usage(stdout);
        return 0;
    case CONFIG_CMD_VERSION:
        printf("rat-py %s\n", RAT_VERSION);
        return 0;
    case CONFIG_CMD_KERNELS:
        return s_list_kernels();
    case CONFIG_CMD_SERVE:
        break;
    }
    return server_run(&cfg);
}
