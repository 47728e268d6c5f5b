/* kernelspec: finding and reading Jupyter kernelspecs (kernel.json).
 *
 * Lookup follows jupyter_client: directories in jpaths_kernel_dirs() order,
 * the first directory holding a matching kernel name wins, names compare
 * case-insensitively. kernel.json is untrusted: size-capped, fields checked. */
#ifndef RAT_KERNELSPEC_H
#define RAT_KERNELSPEC_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *name;           /* directory name, lowercased */
    char *dir;            /* resource dir holding kernel.json */
    char *display_name;
    char *language;       /* e.g. "python", "R"; "" if absent */
    char **argv;          /* NULL-terminated; {connection_file} etc. unsubstituted */
    size_t argc;
    char **env;           /* NULL-terminated "KEY=VALUE" templates, ${VAR} unsubstituted */
    size_t nenv;
    bool interrupt_message; /* interrupt_mode == "message" */
} kernelspec_t;

/* Loads <dir>/kernel.json. Returns NULL with err filled on failure. */
kernelspec_t *kernelspec_load(const char *dir, const char *name, char *err, size_t errlen);
/* The same from kernel.json's text (len bytes), for a kernelspec that is
 * not a file (rat-py's own, built in); dir is its resource dir ("" for
 * none) and path names it in errors. */
kernelspec_t *kernelspec_parse(const char *text, size_t len, const char *dir, const char *name, const char *path,
                               char *err, size_t errlen);
/* Finds a kernel by name. NULL with err filled (naming the directories that
 * were searched) when it does not exist. */
kernelspec_t *kernelspec_find(const char *name, char *err, size_t errlen);
/* Every kernelspec found, in search order, shadowed ones left out. Returns a
 * count; *out receives an array the caller frees with kernelspec_free_list. */
size_t kernelspec_list(kernelspec_t ***out);
void kernelspec_free_list(kernelspec_t **list, size_t n);
void kernelspec_destroy(kernelspec_t **self_p);

/* Builds the argv to execute: {connection_file}, {resource_dir} and {prefix}
 * are substituted (Jupyter's), and {python} when python is not NULL: the
 * interpreter rat-py chose for its own kernelspec (kernelspec/kernel.json;
 * jupyter_client has no {python}, so no other spec uses it). Other {x} are
 * left alone. Caller frees with kernelspec_free_argv. */
char **kernelspec_argv(const kernelspec_t *ks, const char *connection_file, const char *python);
void kernelspec_free_argv(char **argv);
/* Expands ${VAR} in an env template value from the current environment.
 * Caller owns the result. */
char *kernelspec_expand_env(const char *value);

#endif
