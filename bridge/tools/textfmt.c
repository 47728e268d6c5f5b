/* textfmt: durations, counts and the run footer. */
#include "textfmt.h"

#include <stdio.h>
#include <string.h>

#include "utf8.h"

void textfmt_duration(char *out, size_t outlen, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    if (ms < 1000)
        snprintf(out, outlen, "%lldms", (long long)ms);
    else if (ms < 60000)
        snprintf(out, outlen, "%.1fs", (double)(ms / 100) / 10.0);
    else
        snprintf(out, outlen, "%lldm %llds", (long long)(ms / 60000), (long long)((ms % 60000) / 1000));
}

void textfmt_count(buf_t *b, long n, const char *singular, const char *plural)
{
    buf_printf(b, "%ld %s", n, n == 1 ? singular : plural);
}

void textfmt_footer(buf_t *b, bool ok, int64_t ms, long vars, long assets)
{
    char d[32];
    textfmt_duration(d, sizeof d, ms);
    buf_printf(b, "%s %s", ok ? "✓" : "✗", d);
    if (vars > 0) {
        buf_puts(b, " | ");
        textfmt_count(b, vars, "var", "vars");
    }
    if (assets > 0) {
        buf_puts(b, " | ");
        textfmt_count(b, assets, "asset", "assets");
    }
}

void textfmt_signature(buf_t *b, const char *label, const char *sig)
{
    if (!sig || !*sig)
        return;
    size_t ll = strlen(label);
    if (strncmp(sig, label, ll) == 0 && sig[ll] == '(')
        sig += ll;
    const char *open = strchr(sig, '(');
    if (!open) {
        buf_puts(b, sig);
        return;
    }
    buf_puts(b, label);
    int depth = 0;
    bool skipping = false; /* inside an annotation at depth 1 */
    bool eat_space = false; /* after "=" that followed an annotation */
    char quote = 0;
    for (const char *p = open; *p; p++) {
        char c = *p;
        if (eat_space && c == ' ')
            continue;
        eat_space = false;
        if (quote) {
            if (!skipping)
                buf_putc(b, c);
            if (c == '\\' && p[1]) {
                p++;
                if (!skipping)
                    buf_putc(b, *p);
            } else if (c == quote) {
                quote = 0;
            }
            continue;
        }
        if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
        } else if (c == ')' || c == ']' || c == '}') {
            depth--;
            if (depth == 0) {
                buf_putc(b, ')'); /* the return annotation after it is dropped */
                return;
            }
        }
        if (depth == 1 && !quote) {
            if (c == ':' ) {
                skipping = true;
                /* drop the space before the colon's annotation too */
                continue;
            }
            if (skipping && (c == ',' || c == '=')) {
                skipping = false;
                while (b->len && b->data[b->len - 1] == ' ')
                    b->len--;
                b->data[b->len] = '\0';
                eat_space = c == '=';
            }
        }
        if (!skipping)
            buf_putc(b, c);
    }
}

void textfmt_pad(buf_t *b, const char *s, size_t width)
{
    size_t w = utf8_width(s, strlen(s));
    buf_puts(b, s);
    for (; w < width; w++)
        buf_putc(b, ' ');
}
