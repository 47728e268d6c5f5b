/* doctor_report: how every `rat-py doctor` check prints its line, and the
 * count of failed checks (doctor's exit status). Used by doctor.c and
 * doctor_clients.c, and by nothing else. */
#ifndef RAT_DOCTOR_REPORT_H
#define RAT_DOCTOR_REPORT_H

/* One line each: `✓ what` (passed), `✗ what` with `fix:` under it (failed:
 * doctor exits 1), `– what` (information). */
void doctor_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void doctor_bad(const char *fix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void doctor_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The doctor_bad lines since doctor_report_reset (doctor_main's start). */
int doctor_report_failures(void);
void doctor_report_reset(void);

#endif
