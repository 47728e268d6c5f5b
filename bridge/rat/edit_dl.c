/* edit_dl: libedit, loaded on first use (see edit_dl.h for why). */
#include "edit_dl.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>

#ifndef RAT_EDIT_SONAME
#define RAT_EDIT_SONAME "libedit.so.2"
#endif
/* The Debian package that has it (CMakeLists.txt asks dpkg at build time). */
#ifndef RAT_EDIT_PACKAGE
#define RAT_EDIT_PACKAGE "libedit2"
#endif

edit_dl_t edit_dl;
static bool s_loaded;

int edit_dl_load(char *err, size_t errlen)
{
    if (s_loaded)
        return 0;
    void *h = dlopen(RAT_EDIT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(err, errlen, "line editing needs %s (%s); install it (Debian/Ubuntu: apt install " RAT_EDIT_PACKAGE ")",
                 RAT_EDIT_SONAME, why ? why : "not found");
        return -1;
    }
    edit_dl_t t;
    static const struct {
        const char *name;
        size_t off;
    } syms[] = {
        {"el_init", offsetof(edit_dl_t, el_init)},           {"el_end", offsetof(edit_dl_t, el_end)},
        {"el_gets", offsetof(edit_dl_t, el_gets)},           {"el_set", offsetof(edit_dl_t, el_set)},
        {"el_get", offsetof(edit_dl_t, el_get)},             {"el_line", offsetof(edit_dl_t, el_line)},
        {"el_insertstr", offsetof(edit_dl_t, el_insertstr)}, {"el_deletestr", offsetof(edit_dl_t, el_deletestr)},
        {"el_reset", offsetof(edit_dl_t, el_reset)},         {"history_init", offsetof(edit_dl_t, history_init)},
        {"history_end", offsetof(edit_dl_t, history_end)},   {"history", offsetof(edit_dl_t, history)},
        {"el_wset", offsetof(edit_dl_t, el_wset)},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            snprintf(err, errlen, "%s has no %s (too old a version?)", RAT_EDIT_SONAME, syms[i].name);
            dlclose(h);
            return -1;
        }
        *(void **)((char *)&t + syms[i].off) = p; /* POSIX: a function pointer round-trips through void * */
    }
    edit_dl = t;
    s_loaded = true;
    return 0;
}
