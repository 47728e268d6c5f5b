/* sigs: process signals as loop events (signalfd).
 *
 * SIGCHLD, SIGTERM, SIGINT and SIGHUP are blocked and read from a signalfd
 * in the loop; SIGPIPE is ignored (a closed stdout shows up as EPIPE). Must
 * be created before any thread (libzmq's included) so every thread inherits
 * the blocked mask and no signal is delivered behind the signalfd's back.
 *
 * In the rat-py program (sigs_end_process_until_attached), until
 * sigs_attach (while rat-py starts: reading its files, asking a venv's
 * Python about ipykernel), a thread waits for SIGTERM, SIGINT or SIGHUP and
 * ends the process with it, so a start-up that blocks never makes rat-py
 * deaf to them; nothing needs cleaning up before the loop is attached (no
 * kernel is started yet). Not in a library host, whose process is not
 * rat-py's to end. From sigs_attach on they are the loop's: read from the
 * signalfd, and rat-py shuts down cleanly. */
#ifndef RAT_SIGS_H
#define RAT_SIGS_H

#include "loop.h"

typedef struct sigs sigs_t;
typedef void (sigs_fn)(void *ud, int signo);

/* For the rat-py program only, before the first sigs_new: a termination
 * signal before sigs_attach ends the process (above). */
void sigs_end_process_until_attached(void);
/* Blocks the signals; watch starts when sigs_attach is called. NULL on error. */
sigs_t *sigs_new(void);
void sigs_attach(sigs_t *self, loop_t *loop, sigs_fn *fn, void *ud);
/* Restores the original mask and closes the descriptor. */
void sigs_destroy(sigs_t **self_p);

#endif
