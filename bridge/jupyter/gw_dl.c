/* gw_dl: libcurl and libwslay, loaded on first use (see gw_dl.h for why). */
#include "gw_dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef RAT_CURL_SONAME
#define RAT_CURL_SONAME "libcurl.so.4"
#endif
#ifndef RAT_WSLAY_SONAME
#define RAT_WSLAY_SONAME "libwslay.so.1"
#endif
/* The Debian packages that have them (CMakeLists.txt asks dpkg at build time). */
#ifndef RAT_CURL_PACKAGE
#define RAT_CURL_PACKAGE "libcurl4"
#endif
#ifndef RAT_WSLAY_PACKAGE
#define RAT_WSLAY_PACKAGE "libwslay1"
#endif

gw_curl_t gw_curl;
gw_wslay_t gw_wslay;
static bool s_loaded;

static bool s_sym(void *h, const char *lib, const char *name, void *slot, char *err, size_t errlen)
{
    void *p = dlsym(h, name);
    if (!p) {
        snprintf(err, errlen, "%s has no %s (too old a version?)", lib, name);
        return false;
    }
    *(void **)slot = p; /* POSIX: a function pointer round-trips through void * */
    return true;
}

static void *s_open(const char *soname, const char *pkg, const char *who, char *err, size_t errlen)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, errlen, "%s needs %s, which cannot be loaded (%s); install it (Debian/Ubuntu: apt install %s)",
                 who, soname, why ? why : soname, pkg);
    }
    return h;
}

static bool s_curl_loaded;

static int s_load_curl(const char *who, char *err, size_t errlen)
{
    if (s_curl_loaded)
        return 0;
    /* libcurl's NEEDED chain maps GnuTLS even in the OpenSSL flavour
     * (librtmp and libldap use it, for rtmpe:// and ldaps://, which rat-py
     * never asks for), and GnuTLS initializes itself in a load-time
     * constructor unless GNUTLS_NO_IMPLICIT_INIT=1: about 1 MB of RSS
     * (its code, p11-kit's) for a library this process may never use.
     * Every user of GnuTLS that can be in this process calls
     * gnutls_global_init itself before using it (libcurl-gnutls, librtmp,
     * libldap, libmicrohttpd for --http with TLS), so the deferred init is
     * still done by whoever needs it. The variable is set only for this
     * dlopen, and only when the user has not set it: children never see it.
     * (setenv with libzmq's threads running: they never read the
     * environment.) */
    bool set_no_init = getenv("GNUTLS_NO_IMPLICIT_INIT") == NULL;
    if (set_no_init)
        setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 1);
    void *c = s_open(RAT_CURL_SONAME, RAT_CURL_PACKAGE, who, err, errlen);
    if (set_no_init)
        unsetenv("GNUTLS_NO_IMPLICIT_INIT");
    if (!c)
        return -1;
    gw_curl_t t;
#define C(field, name) s_sym(c, RAT_CURL_SONAME, name, &t.field, err, errlen)
    bool ok = C(global_init, "curl_global_init") && C(easy_init, "curl_easy_init") &&
              C(easy_setopt, "curl_easy_setopt") && C(easy_getinfo, "curl_easy_getinfo") &&
              C(easy_perform, "curl_easy_perform") && C(easy_cleanup, "curl_easy_cleanup") &&
              C(easy_strerror, "curl_easy_strerror") && C(slist_append, "curl_slist_append") &&
              C(slist_free_all, "curl_slist_free_all") && C(multi_init, "curl_multi_init") &&
              C(multi_setopt, "curl_multi_setopt") && C(multi_add_handle, "curl_multi_add_handle") &&
              C(multi_remove_handle, "curl_multi_remove_handle") &&
              C(multi_socket_action, "curl_multi_socket_action") && C(multi_info_read, "curl_multi_info_read") &&
              C(multi_cleanup, "curl_multi_cleanup") && C(multi_assign, "curl_multi_assign") &&
              C(version, "curl_version") && C(easy_send, "curl_easy_send") && C(easy_recv, "curl_easy_recv") &&
              C(multi_perform, "curl_multi_perform") && C(multi_poll, "curl_multi_poll");
#undef C
    if (!ok || t.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        if (ok)
            snprintf(err, errlen, "libcurl failed to initialize");
        dlclose(c);
        return -1;
    }
    gw_curl = t;
    /* Kept open for the life of the process (OpenSSL is not safe to unload). */
    s_curl_loaded = true;
    return 0;
}

int gw_dl_load_curl(const char *who, char *err, size_t errlen)
{
    return s_load_curl(who, err, errlen);
}

int gw_dl_load(char *err, size_t errlen)
{
    if (s_loaded)
        return 0;
    if (s_load_curl("a gateway kernel", err, errlen) < 0)
        return -1;
    void *w = s_open(RAT_WSLAY_SONAME, RAT_WSLAY_PACKAGE, "a gateway kernel", err, errlen);
    if (!w)
        return -1;
    gw_wslay_t u;
#define W(field, name) s_sym(w, RAT_WSLAY_SONAME, name, &u.field, err, errlen)
    bool ok = W(client_init, "wslay_event_context_client_init") && W(context_free, "wslay_event_context_free") &&
              W(recv, "wslay_event_recv") && W(send, "wslay_event_send") && W(queue_msg, "wslay_event_queue_msg") &&
              W(queue_close, "wslay_event_queue_close") && W(want_read, "wslay_event_want_read") &&
              W(want_write, "wslay_event_want_write") && W(set_error, "wslay_event_set_error") &&
              W(set_max_recv_msg_length, "wslay_event_config_set_max_recv_msg_length") &&
              W(queued_count, "wslay_event_get_queued_msg_count") &&
              W(queued_length, "wslay_event_get_queued_msg_length");
#undef W
    if (!ok) {
        dlclose(w);
        return -1;
    }
    gw_wslay = u;
    s_loaded = true;
    return 0;
}
