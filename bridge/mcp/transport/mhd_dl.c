/* mhd_dl: libmicrohttpd, loaded on first use (see mhd_dl.h for why). */
#define MHD_DL_IMPL
#include "mhd_dl.h"

#include <dlfcn.h>
#include <stdio.h>

#ifndef RAT_MHD_SONAME
#define RAT_MHD_SONAME "libmicrohttpd.so.12"
#endif
/* The Debian package that has it (CMakeLists.txt asks dpkg at build time). */
#ifndef RAT_MHD_PACKAGE
#define RAT_MHD_PACKAGE "libmicrohttpd12"
#endif

mhd_dl_t mhd_dl;
static void *s_handle;

/* Resolves one symbol into the table; returns false (with err) if missing. */
static bool s_sym(void *h, const char *name, void *slot, char *err, size_t errlen)
{
    void *p = dlsym(h, name);
    if (!p) {
        snprintf(err, errlen, "%s has no %s (too old a libmicrohttpd?)", RAT_MHD_SONAME, name);
        return false;
    }
    /* POSIX guarantees a function pointer round-trips through void *. */
    *(void **)slot = p;
    return true;
}

int mhd_dl_load(char *err, size_t errlen)
{
    if (s_handle)
        return 0;
    void *h = dlopen(RAT_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, errlen,
                 "the HTTP transport needs libmicrohttpd, which cannot be loaded (%s); install it "
                 "(Debian/Ubuntu: apt install " RAT_MHD_PACKAGE ")",
                 why ? why : RAT_MHD_SONAME);
        return -1;
    }
    mhd_dl_t t;
    bool ok = s_sym(h, "MHD_start_daemon", &t.start_daemon, err, errlen) &&
              s_sym(h, "MHD_stop_daemon", &t.stop_daemon, err, errlen) &&
              s_sym(h, "MHD_get_daemon_info", &t.get_daemon_info, err, errlen) &&
              s_sym(h, "MHD_run", &t.run, err, errlen) &&
              s_sym(h, "MHD_get_timeout", &t.get_timeout, err, errlen) &&
              s_sym(h, "MHD_create_response_from_buffer", &t.create_response_from_buffer, err, errlen) &&
              s_sym(h, "MHD_create_response_from_callback", &t.create_response_from_callback, err, errlen) &&
              s_sym(h, "MHD_create_response_from_fd", &t.create_response_from_fd, err, errlen) &&
              s_sym(h, "MHD_add_response_header", &t.add_response_header, err, errlen) &&
              s_sym(h, "MHD_destroy_response", &t.destroy_response, err, errlen) &&
              s_sym(h, "MHD_queue_response", &t.queue_response, err, errlen) &&
              s_sym(h, "MHD_lookup_connection_value", &t.lookup_connection_value, err, errlen) &&
              s_sym(h, "MHD_suspend_connection", &t.suspend_connection, err, errlen) &&
              s_sym(h, "MHD_resume_connection", &t.resume_connection, err, errlen) &&
              s_sym(h, "MHD_add_connection", &t.add_connection, err, errlen) &&
              s_sym(h, "MHD_is_feature_supported", &t.is_feature_supported, err, errlen) &&
              s_sym(h, "MHD_get_connection_info", &t.get_connection_info, err, errlen);
    if (!ok) {
        dlclose(h);
        return -1;
    }
    mhd_dl = t;
    /* Kept open for the life of the process: responses and daemons may
     * outlive any one transport, and unloading GnuTLS is not worth the risk. */
    s_handle = h;
    return 0;
}

bool mhd_dl_available(char *what, size_t whatlen)
{
    char err[512];
    if (mhd_dl_load(err, sizeof err) < 0) {
        snprintf(what, whatlen, "%s", err);
        return false;
    }
    const char *(*version)(void) = NULL;
    *(void **)&version = dlsym(s_handle, "MHD_get_version");
    snprintf(what, whatlen, "%s %s", RAT_MHD_SONAME, version ? version() : "");
    return true;
}
