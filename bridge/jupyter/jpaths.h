/* jpaths: Jupyter's directories, resolved the way jupyter_core does on Linux.
 *
 * data dir:    $JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else ~/.local/share/jupyter
 * runtime dir: $JUPYTER_RUNTIME_DIR, else <data dir>/runtime
 * kernel search path (first match wins): each $JUPYTER_PATH entry, the user
 * data dir, the active environment's prefix ($VIRTUAL_ENV, $CONDA_PREFIX),
 * /usr/local/share/jupyter, /usr/share/jupyter, then ~/.ipython (legacy),
 * each followed by /kernels. */
#ifndef RAT_JPATHS_H
#define RAT_JPATHS_H

#include <stddef.h>

/* Caller owns the returned strings. */
char *jpaths_data_dir(void);
char *jpaths_runtime_dir(void);
/* Creates the runtime dir (mode 0700) if missing. Returns 0 or -1 (errno set). */
int jpaths_ensure_dir(const char *path);
/* Kernel directories in search order; *n receives the count. Caller frees
 * each string and the array (jpaths_free_list). */
char **jpaths_kernel_dirs(size_t *n);
void jpaths_free_list(char **list, size_t n);
/* $HOME, or the passwd entry's home, or "/". Borrowed. */
const char *jpaths_home(void);

#endif
