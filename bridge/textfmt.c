/* textfmt: durations, counts and the run footer. */
#include "textfmt.h"

#include <stdio.h>

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
