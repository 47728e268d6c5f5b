/* gw_dl: libcurl and libwslay, loaded on first use.
 *
 * Only a gateway kernel (--gateway) needs them: a stdio user who runs local
 * kernels should not pay for libcurl's chain (OpenSSL, nghttp2, ssh, ldap,
 * ...) in every process. So, as mhd_dl does for libmicrohttpd, neither is
 * linked: gw_dl_load() dlopen()s both by their sonames the first time a
 * gateway is used, and the calls go through the tables below. */
#ifndef RAT_GW_DL_H
#define RAT_GW_DL_H

#include <stdbool.h>
#include <stddef.h>
#include <curl/curl.h>
#include <wslay/wslay.h>

typedef struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    CURLcode (*easy_perform)(CURL *);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_assign)(CURLM *, curl_socket_t, void *);
    char *(*version)(void);
    CURLcode (*easy_send)(CURL *, const void *, size_t, size_t *);
    CURLcode (*easy_recv)(CURL *, void *, size_t, size_t *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd[], unsigned int, int, int *);
} gw_curl_t;

typedef struct {
    int (*client_init)(wslay_event_context_ptr *, const struct wslay_event_callbacks *, void *);
    void (*context_free)(wslay_event_context_ptr);
    int (*recv)(wslay_event_context_ptr);
    int (*send)(wslay_event_context_ptr);
    int (*queue_msg)(wslay_event_context_ptr, const struct wslay_event_msg *);
    int (*queue_close)(wslay_event_context_ptr, uint16_t, const uint8_t *, size_t);
    int (*want_read)(wslay_event_context_ptr);
    int (*want_write)(wslay_event_context_ptr);
    void (*set_error)(wslay_event_context_ptr, int);
    void (*set_max_recv_msg_length)(wslay_event_context_ptr, uint64_t);
    size_t (*queued_count)(wslay_event_context_ptr);  /* messages queued to send, PONGs included */
    size_t (*queued_length)(wslay_event_context_ptr); /* their payload bytes */
} gw_wslay_t;

/* The tables; valid once gw_dl_load() returned 0. */
extern gw_curl_t gw_curl;
extern gw_wslay_t gw_wslay;

/* Loads both libraries (once; later calls return 0 at once). Returns -1 with
 * a sentence naming the package to install in err. */
int gw_dl_load(char *err, size_t errlen);
/* Loads libcurl alone (gw_curl; the `rat` manager's MCP client needs no
 * WebSocket). who names the feature in the error ("rat start"). */
int gw_dl_load_curl(const char *who, char *err, size_t errlen);

#endif
