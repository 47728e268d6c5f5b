/* lang_r: the IRkernel (R) adapter; the helper is kernelspec/rat_helper.R.
 *
 * IRkernel has no user_expressions and prints nothing for silent executes,
 * so helper calls are non-silent executes that print JSON (LANG_VIA_STDOUT).
 * The helper lives in an environment kept in options(rat.helper = ...):
 * not in .GlobalEnv (ls() and reset never see it) and not on the search path
 * (a user's own snap() or inspect() is never shadowed). */
#include "lang.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

extern const char rat_helper_r[];
extern const size_t rat_helper_r_len;

/* Appends s as an R string literal: ASCII only (non-ASCII characters become
 * \U{...} escapes, so the kernel's locale does not matter). */
static void s_put_r_str(buf_t *b, const char *s, size_t n)
{
    buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            buf_putc(b, '\\');
            buf_putc(b, (char)c);
            i++;
        } else if (c == '\n') {
            buf_puts(b, "\\n");
            i++;
        } else if (c == '\t') {
            buf_puts(b, "\\t");
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            buf_printf(b, "\\x%02x", c);
            i++;
        } else if (c < 0x80) {
            buf_putc(b, (char)c);
            i++;
        } else {
            /* Decode one UTF-8 sequence; an invalid byte becomes U+FFFD. */
            uint32_t cp = 0xFFFD;
            size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (len > 1 && i + len <= n) {
                cp = c & (0x3F >> (len - 1));
                for (size_t k = 1; k < len; k++) {
                    unsigned char cc = (unsigned char)s[i + k];
                    if ((cc & 0xC0) != 0x80) {
                        cp = 0xFFFD;
                        len = 1;
                        break;
                    }
                    cp = (cp << 6) | (cc & 0x3F);
                }
            } else {
                len = 1;
            }
            if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                cp = 0xFFFD;
            buf_printf(b, "\\U{%lx}", (unsigned long)cp);
            i += len;
        }
    }
    buf_putc(b, '"');
}

static void s_install(buf_t *b)
{
    buf_puts(b, "local({ e <- new.env(parent = baseenv()); eval(parse(text = ");
    s_put_r_str(b, rat_helper_r, rat_helper_r_len);
    buf_puts(b, ", keep.source = FALSE), envir = e); options(rat.helper = e) }); invisible(NULL)");
}

/* The call hands the user's .Last.value through, so that IRkernel (which
 * stores the value of every top-level expression there) keeps the user's. */
static void s_call(buf_t *b, const char *fn, const char *json_arg)
{
    buf_printf(b, "(function(v) { getOption(\"rat.helper\")$%s(", fn);
    if (json_arg)
        s_put_r_str(b, json_arg, strlen(json_arg));
    buf_puts(b, "); invisible(v) })(.Last.value)");
}

/* .Last.value is handed through as in s_call. */
static void s_chdir(buf_t *b, const char *dir)
{
    buf_puts(b, "(function(v, d) { setwd(d); Sys.setenv(PWD = d); invisible(v) })(.Last.value, ");
    s_put_r_str(b, dir, strlen(dir));
    buf_puts(b, ")");
}

/* IRkernel reports every error as ename "ERROR" with evalue the condition
 * as R prints it ("Error in f(x): msg\n"); a top-level error reads "Error in
 * eval(expr, envir, enclos): msg", which is the wrapper, not the user's
 * call. Show what the R console shows. */
static void s_clean_error(char **ename, char **evalue)
{
    if (!*ename || strcmp(*ename, "ERROR") != 0 || !*evalue)
        return;
    static const char wrapper[] = "Error in eval(expr, envir, enclos): ";
    char *v = *evalue;
    char *clean = strncmp(v, wrapper, sizeof wrapper - 1) == 0 ? xasprintf("Error: %s", v + sizeof wrapper - 1)
                                                                 : xstrdup(v);
    size_t n = strlen(clean);
    while (n && (clean[n - 1] == '\n' || clean[n - 1] == ' '))
        clean[--n] = '\0';
    free(*evalue);
    *evalue = clean;
    free(*ename);
    *ename = xstrdup("");
}

const lang_t lang_r = {
    .name = "R",
    .channel = LANG_VIA_STDOUT,
    .install = s_install,
    .call = s_call,
    .chdir = s_chdir,
    .reset_code = "rm(list = ls(envir = .GlobalEnv, all.names = TRUE), envir = .GlobalEnv)",
    .reset_all_code = NULL, /* IRkernel can reset neither its history nor its counter */
    .detach_code = "options(rat.helper = NULL)", /* the helper's environment, all it left */
    .clean_error = s_clean_error,
    .probe_code = "cat(file.path(R.home(\"bin\"), \"R\"), \"\\n\", sep = \"\")\n"
                  "cat(\"IRkernel\", format(utils::packageVersion(\"IRkernel\")), \"\\n\")",
    .noop_code = "invisible(NULL)",
    /* R removes its session directory (/tmp/RtmpXXXXXX, where tempfile()
     * writes) only when it quits by itself; a SIGKILL leaves it behind. (Its
     * SIGUSR1/SIGUSR2 would save the workspace to .RData first.) */
    .ask_on_replace = true,
};
