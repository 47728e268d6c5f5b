/* mhd_dl: libmicrohttpd, loaded on first use.
 *
 * Only `--http` needs libmicrohttpd, and linking it pulls GnuTLS and its
 * chain (p11-kit, nettle, gmp, libtasn1, …) into every process: 2.6 MB of
 * RSS and 100 KB of heap that a stdio server (most users) never uses. So the
 * library is not linked: mhd_dl_load() dlopen()s it by its soname the first
 * time an HTTP transport is created, and the MHD_* calls in transport_http.c
 * go through the table below (the macros keep the call sites unchanged).
 * Include this instead of <microhttpd.h>, after every other header that
 * might declare the same names. */
#ifndef RAT_MHD_DL_H
#define RAT_MHD_DL_H

#include <stdbool.h>
#include <stddef.h>
#include <microhttpd.h>

typedef struct {
    struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                       MHD_AccessHandlerCallback, void *, ...);
    void (*stop_daemon)(struct MHD_Daemon *);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
    enum MHD_Result (*run)(struct MHD_Daemon *);
    enum MHD_Result (*get_timeout)(struct MHD_Daemon *, MHD_UNSIGNED_LONG_LONG *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
    struct MHD_Response *(*create_response_from_callback)(uint64_t, size_t, MHD_ContentReaderCallback, void *,
                                                          MHD_ContentReaderFreeCallback);
    struct MHD_Response *(*create_response_from_fd)(uint64_t, int);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    void (*destroy_response)(struct MHD_Response *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
    void (*suspend_connection)(struct MHD_Connection *);
    enum MHD_Result (*resume_connection)(struct MHD_Connection *);
    enum MHD_Result (*add_connection)(struct MHD_Daemon *, int, const struct sockaddr *, socklen_t);
    enum MHD_Result (*is_feature_supported)(enum MHD_FEATURE);
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *, enum MHD_ConnectionInfoType, ...);
} mhd_dl_t;

/* The table; valid once mhd_dl_load() returned 0. */
extern mhd_dl_t mhd_dl;

/* Loads libmicrohttpd (once; later calls return at once). Returns 0, or -1
 * with err saying what is missing and how to install it. Not thread-safe:
 * call it from the loop's thread. */
int mhd_dl_load(char *err, size_t errlen);

/* Whether libmicrohttpd can be loaded (for `rat-py doctor`); fills what with
 * the soname and version, or the reason it cannot. */
bool mhd_dl_available(char *what, size_t whatlen);

#ifndef MHD_DL_IMPL
#define MHD_start_daemon mhd_dl.start_daemon
#define MHD_stop_daemon mhd_dl.stop_daemon
#define MHD_get_daemon_info mhd_dl.get_daemon_info
#define MHD_run mhd_dl.run
#define MHD_get_timeout mhd_dl.get_timeout
#define MHD_create_response_from_buffer mhd_dl.create_response_from_buffer
#define MHD_create_response_from_callback mhd_dl.create_response_from_callback
#define MHD_create_response_from_fd mhd_dl.create_response_from_fd
#define MHD_add_response_header mhd_dl.add_response_header
#define MHD_destroy_response mhd_dl.destroy_response
#define MHD_queue_response mhd_dl.queue_response
#define MHD_lookup_connection_value mhd_dl.lookup_connection_value
#define MHD_suspend_connection mhd_dl.suspend_connection
#define MHD_resume_connection mhd_dl.resume_connection
#define MHD_add_connection mhd_dl.add_connection
#define MHD_is_feature_supported mhd_dl.is_feature_supported
#define MHD_get_connection_info mhd_dl.get_connection_info
#endif

#endif
