/* A tiny program embedding rat-py through the installed library
 * (pkg-config rat): it serves MCP on stdin/stdout from the given directory.
 * Usage: example DIR */
#include <stdio.h>

#include <rat/rat.h>

int main(int argc, char **argv)
{
    rat_options_t o;
    rat_options_init(&o);
    o.cwd = argc > 1 ? argv[1] : ".";
    char err[512];
    rat_server_t *srv = rat_server_new(&o, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "example: %s\n", err);
        return 1;
    }
    fprintf(stderr, "example: librat %s\n", rat_version());
    int status = rat_server_run_stdio(srv);
    rat_server_destroy(&srv);
    return status;
}
