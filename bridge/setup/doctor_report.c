/* doctor_report: the lines doctor's checks print (doctor_report.h). */
#include "doctor_report.h"

#include <stdarg.h>
#include <stdio.h>

static int s_failures; /* doctor_bad's since doctor_report_reset */

void doctor_ok(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("✓ ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
}

void doctor_bad(const char *fix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("✗ ", stdout);
    vprintf(fmt, ap);
    if (fix)
        printf("\n    fix: %s", fix);
    fputc('\n', stdout);
    va_end(ap);
    s_failures++;
}

void doctor_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("– ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
}

int doctor_report_failures(void)
{
    return s_failures;
}

void doctor_report_reset(void)
{
    s_failures = 0;
}
