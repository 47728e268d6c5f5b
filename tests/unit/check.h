/* check.h: a tiny test harness for the unit tests. Failed checks print both
 * operands with file and line; main() ends with "N passed, M failed". */
#ifndef RAT_CHECK_H
#define RAT_CHECK_H

#include <stdio.h>
#include <string.h>

/* The counters are the test program's: its main file defines them; a helper
 * source that several tests share (runtime_fake.c, ...) defines CHECK_HELPER
 * before it includes this header, so its checks count in the same totals. */
extern int check_passed, check_failed, check_case_failed;
#ifndef CHECK_HELPER
int check_passed, check_failed, check_case_failed;
#endif

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            check_passed++;                                                          \
        } else {                                                                     \
            check_failed++;                                                          \
            check_case_failed = 1;                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                            \
    do {                                                                                              \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                               \
        if (check_a_ == check_b_) {                                                                   \
            check_passed++;                                                                           \
        } else {                                                                                      \
            check_failed++;                                                                           \
            check_case_failed = 1;                                                                    \
            fprintf(stderr, "%s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, #b, check_a_, \
                    check_b_);                                                                        \
        }                                                                                             \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                                 \
    do {                                                                                                   \
        const char *check_a_ = (a), *check_b_ = (b);                                                       \
        if (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0) {                                     \
            check_passed++;                                                                                \
        } else {                                                                                           \
            check_failed++;                                                                                \
            check_case_failed = 1;                                                                         \
            fprintf(stderr, "%s:%d: %s == %s:\n  got:  \"%s\"\n  want: \"%s\"\n", __FILE__, __LINE__, #a, #b, \
                    check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");                       \
        }                                                                                                  \
    } while (0)

#define RUN_CASE(fn)                                                      \
    do {                                                                  \
        check_case_failed = 0;                                            \
        fn();                                                             \
        fprintf(stderr, "%s %s\n", check_case_failed ? "FAIL" : "ok  ", #fn); \
    } while (0)

static inline int check_report(const char *suite)
{
    fprintf(stderr, "%s: %d passed, %d failed\n", suite, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
