/* sigs: process signals as loop events (signalfd).
 *
 * SIGCHLD, SIGTERM, SIGINT and SIGHUP are blocked and read from a signalfd
 * in the loop; SIGPIPE is ignored (a closed stdout shows up as EPIPE). Must
 * be created before any thread (libzmq's included) so every thread inherits
 * the blocked mask and no signal is delivered behind the signalfd's back. */
#ifndef RAT_SIGS_H
#define RAT_SIGS_H

#include "loop.h"

typedef struct sigs sigs_t;
typedef void (sigs_fn)(void *ud, int signo);

/* Blocks the signals; watch starts when sigs_attach is called. NULL on error. */
sigs_t *sigs_new(void);
void sigs_attach(sigs_t *self, loop_t *loop, sigs_fn *fn, void *ud);
/* Restores the original mask and closes the descriptor. */
void sigs_destroy(sigs_t **self_p);

#endif
