/* Unit tests: output cleaning, bounding and rendering; footer and duration
 * formatting; UTF-8 boundaries. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "check.h"
#include "mem.h"
#include "output.h"
#include "textfmt.h"
#include "utf8.h"

static char *s_render(output_t *o)
{
    buf_t b;
    buf_init(&b, 0);
    output_render(o, &b);
    return buf_take(&b);
}

static char *s_clean(const char *in)
{
    output_t *o = output_new(NULL);
    output_write(o, in, strlen(in), NULL);
    char *r = s_render(o);
    output_destroy(&o);
    return r;
}

static void test_plain_lines(void)
{
    char *r = s_clean("a\nb\nc\n");
    CHECK_EQ_STR(r, "a\nb\nc");
    free(r);
    r = s_clean("no newline");
    CHECK_EQ_STR(r, "no newline");
    free(r);
    r = s_clean("");
    CHECK_EQ_STR(r, "");
    free(r);
}

static void test_ansi_stripped(void)
{
    char *r = s_clean("\x1b[0;31mred\x1b[0m plain \x1b]0;title\x07x\x1b(B\n");
    CHECK_EQ_STR(r, "red plain x");
    free(r);
}

static void test_ansi_split_across_chunks(void)
{
    output_t *o = output_new(NULL);
    output_write(o, "a\x1b[3", 4, NULL);
    output_write(o, "1mb\x1b", 4, NULL);
    output_write(o, "[0mc\n", 5, NULL);
    char *r = s_render(o);
    CHECK_EQ_STR(r, "abc");
    free(r);
    output_destroy(&o);
}

static void test_cr_folds_to_last_frame(void)
{
    char *r = s_clean("10%\r50%\r100%\ndone\n");
    CHECK_EQ_STR(r, "100%\ndone");
    free(r);
    r = s_clean("line\r\nnext\r\n");
    CHECK_EQ_STR(r, "line\nnext");
    free(r);
}

static void test_crlf_split_across_chunks(void)
{
    output_t *o = output_new(NULL);
    output_write(o, "a\r", 2, NULL);
    output_write(o, "\nb\r", 3, NULL);
    output_write(o, "c\n", 2, NULL);
    char *r = s_render(o);
    CHECK_EQ_STR(r, "a\nc");
    free(r);
    output_destroy(&o);
}

static void test_control_chars_dropped(void)
{
    char *r = s_clean("a\x07" "b\x08" "\tc\x7f\n");
    CHECK_EQ_STR(r, "ab\tc");
    free(r);
}

static void test_clean_chunk_for_streaming(void)
{
    output_t *o = output_new(NULL);
    buf_t clean;
    buf_init(&clean, 0);
    output_write(o, "\x1b[1mhi\x1b[0m\r\n", 13, &clean);
    CHECK_EQ_STR(buf_str(&clean), "hi\r\n");
    buf_free(&clean);
    output_destroy(&o);
}

static void test_truncation_head_tail(void)
{
    char dir[] = "/tmp/rat-unit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    output_t *o = output_new(dir);
    for (int i = 0; i < 250; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "line %d\n", i);
        output_write(o, line, (size_t)n, NULL);
    }
    CHECK_EQ_INT(output_line_count(o), 250);
    char *r = s_render(o);
    CHECK(strncmp(r, "line 0\nline 1\n", 14) == 0);
    CHECK(strstr(r, "line 49\n… [150 lines truncated] …\nline 200\n") != NULL);
    CHECK(strstr(r, "line 249\n[full output: ") != NULL);
    const char *path = output_spill_path(o);
    CHECK(path != NULL);
    size_t len = 0;
    FILE *f = path ? fopen(path, "r") : NULL;
    char *full = NULL;
    if (f) {
        full = xmalloc(1 << 16);
        len = fread(full, 1, (1 << 16) - 1, f);
        full[len] = '\0';
        fclose(f);
    }
    CHECK(full && strncmp(full, "line 0\n", 7) == 0);
    CHECK(full && strstr(full, "\nline 100\nline 101\n") != NULL);
    CHECK(full && strstr(full, "\nline 249\n") != NULL);
    if (path)
        unlink(path);
    free(full);
    free(r);
    output_destroy(&o);
    rmdir(dir);
}

static void test_exactly_100_lines_not_truncated(void)
{
    output_t *o = output_new(NULL);
    for (int i = 0; i < 100; i++)
        output_write(o, "x\n", 2, NULL);
    char *r = s_render(o);
    CHECK(strstr(r, "truncated") == NULL);
    CHECK(output_spill_path(o) == NULL);
    free(r);
    output_destroy(&o);
}

static size_t s_count_lines(const char *s)
{
    size_t n = 1;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static char *s_slurp(const char *path)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return NULL;
    char *full = xmalloc(1 << 16);
    size_t len = fread(full, 1, (1 << 16) - 1, f);
    full[len] = '\0';
    fclose(f);
    return full;
}

/* output_render_max (vscode-rat): the text fits max_lines, the full-output
 * line last; a text that fits is output_render's. When all lines were still
 * in memory (100 and an unfinished one) the file starts at the render and
 * the unfinished line, going on after it, reaches the file whole. */
static void test_render_max(void)
{
    char dir[] = "/tmp/rat-unit-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    output_t *o = output_new(dir);
    buf_t b;
    buf_init(&b, 0);
    for (int i = 1; i <= 3; i++)
        output_write(o, "x\n", 2, NULL);
    output_render_max(o, &b, 3);
    CHECK_EQ_STR(buf_str(&b), "x\nx\nx");
    CHECK(!output_truncated(o));
    for (int i = 4; i <= 1000; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "line %d\n", i);
        output_write(o, line, (size_t)n, NULL);
    }
    buf_reset(&b);
    output_render_max(o, &b, 100);
    CHECK_EQ_INT(s_count_lines(buf_str(&b)), 100);
    CHECK(strstr(buf_str(&b), "\nline 49\n… [902 lines truncated] …\nline 952\n") != NULL);
    CHECK(strstr(buf_str(&b), "\nline 1000\n[full output: ") != NULL);
    if (output_spill_path(o))
        unlink(output_spill_path(o));
    output_clear(o);

    for (int i = 1; i <= 100; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "row %d\n", i);
        output_write(o, line, (size_t)n, NULL);
    }
    output_write(o, "par", 3, NULL);
    CHECK(output_spill_path(o) == NULL);
    buf_reset(&b);
    output_render_max(o, &b, 100);
    CHECK_EQ_INT(s_count_lines(buf_str(&b)), 100);
    CHECK(strstr(buf_str(&b), "\nrow 49\n… [3 lines truncated] …\nrow 53\n") != NULL);
    CHECK(strstr(buf_str(&b), "\nrow 100\npar\n[full output: ") != NULL);
    CHECK(output_truncated(o));
    output_write(o, "tial\nrow 102\n", 13, NULL);
    buf_reset(&b);
    output_render(o, &b);
    CHECK(strstr(buf_str(&b), "\nrow 100\npartial\nrow 102\n[full output: ") != NULL);
    char *full = s_slurp(output_spill_path(o));
    CHECK(full && strncmp(full, "row 1\nrow 2\n", 12) == 0);
    CHECK(full && strstr(full, "\nrow 99\nrow 100\npartial\nrow 102\n") != NULL);
    CHECK(full && strlen(full) > 16 && strcmp(full + strlen(full) - 16, "partial\nrow 102\n") == 0);
    if (output_spill_path(o))
        unlink(output_spill_path(o));
    free(full);
    buf_free(&b);
    output_destroy(&o);
    rmdir(dir);
}

static void test_long_line_cut_on_utf8_boundary(void)
{
    output_t *o = output_new(NULL);
    buf_t in;
    buf_init(&in, 0);
    buf_putc(&in, 'a'); /* shift so the cap falls inside a 2-byte character */
    for (int i = 0; i < 3000; i++)
        buf_puts(&in, "é");
    output_write(o, in.data, in.len, NULL);
    char *r = s_render(o);
    const char *cut = strstr(r, " … [");
    CHECK(cut != NULL);
    size_t kept = cut ? (size_t)(cut - r) : 0;
    CHECK(kept <= OUTPUT_LINE_MAX);
    CHECK(kept >= OUTPUT_LINE_MAX - 3);
    /* Everything kept is valid UTF-8. */
    size_t i = 0;
    while (i < kept) {
        size_t c = utf8_valid_char(r + i, kept - i);
        CHECK(c > 0);
        if (!c)
            break;
        i += c;
    }
    CHECK_EQ_INT(i, kept);
    char want[64];
    snprintf(want, sizeof want, " … [%zu bytes cut]", in.len - kept);
    CHECK(cut && strcmp(cut, want) == 0);
    free(r);
    buf_free(&in);
    output_destroy(&o);
}

/* Found by fuzz_output: an ESC followed by a multi-byte character swallowed
 * the character's lead byte and left invalid UTF-8; a malformed CSI ate a
 * newline. Now only ECMA-48 bytes continue a sequence. */
static void test_malformed_escapes_keep_text(void)
{
    char *r = s_clean("a\x1b\xc3\xa9" "b\x1b[\xc3\xa9" "c\x1b[12\nd\x1b" "7e\x1b(Bf");
    CHECK_EQ_STR(r, "a\xc3\xa9" "b\xc3\xa9" "c\nd" "ef");
    free(r);
    buf_t b;
    buf_init(&b, 0);
    output_clean_text("x\x1b\xe6\x97\xa5" "y", 7, &b);
    CHECK_EQ_STR(buf_str(&b), "x\xe6\x97\xa5" "y");
    buf_free(&b);
}

/* Found by fuzz_output: a write boundary inside a character right at the
 * line limit kept the character's first byte and cut the rest. The cut
 * point is now found in the line as a whole, so any chunking gives the same
 * text as one write. */
static void test_line_cut_with_character_split_across_writes(void)
{
    buf_t in;
    buf_init(&in, 0);
    for (int i = 0; i < OUTPUT_LINE_MAX - 1; i++)
        buf_putc(&in, 'x');
    buf_puts(&in, "\xc3\xa9\xc3\xa9");
    output_t *whole = output_new(NULL), *split = output_new(NULL);
    output_write(whole, in.data, in.len, NULL);
    output_write(split, in.data, OUTPUT_LINE_MAX, NULL); /* ends after 0xc3 */
    output_write(split, in.data + OUTPUT_LINE_MAX, in.len - OUTPUT_LINE_MAX, NULL);
    char *a = s_render(whole), *b = s_render(split);
    CHECK_EQ_STR(b, a);
    CHECK(strstr(b, " … [4 bytes cut]") != NULL);
    CHECK_EQ_INT(utf8_valid_prefix(b, strlen(b)), strlen(b));
    free(a);
    free(b);
    output_destroy(&whole);
    output_destroy(&split);
    buf_free(&in);
}

/* The full output cannot be written (here: its dir cannot be created): the
 * render says so and why, instead of naming a file that does not exist. */
static void test_spill_failure_is_reported(void)
{
    char dir[] = "/tmp/rat-test-output-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *file = xasprintf("%s/a-file", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    char *spill = xasprintf("%s/assets", file);
    output_t *o = output_new(spill);
    for (int i = 0; i < 150; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "line %d\n", i);
        output_write(o, line, (size_t)n, NULL);
    }
    CHECK(output_spill_path(o) == NULL);
    char *r = s_render(o);
    char *want = xasprintf("\nline 149\n[full output not saved: cannot create %s: Not a directory]", spill);
    size_t rl = strlen(r), wl = strlen(want);
    CHECK(rl >= wl && strcmp(r + rl - wl, want) == 0);
    free(want);
    free(r);
    output_destroy(&o);
    unlink(file);
    rmdir(dir);
    free(spill);
    free(file);
}

static void test_block_starts_a_line(void)
{
    output_t *o = output_new(NULL);
    output_write(o, "partial", 7, NULL);
    output_write_block(o, "42", 2);
    output_write(o, "next\n", 5, NULL);
    char *r = s_render(o);
    CHECK_EQ_STR(r, "partial\n42\nnext");
    free(r);
    output_destroy(&o);
}

static void test_clear_and_reset(void)
{
    output_t *o = output_new(NULL);
    output_write(o, "old\n", 4, NULL);
    output_clear(o);
    output_write(o, "new\n", 4, NULL);
    char *r = s_render(o);
    CHECK_EQ_STR(r, "new");
    free(r);
    output_reset(o);
    CHECK(output_empty(o));
    output_destroy(&o);
}

static void test_clean_text(void)
{
    buf_t b;
    buf_init(&b, 0);
    output_clean_text("\x1b[0;31mNameError\x1b[0m: x\nsecond\r\n", 33, &b);
    CHECK_EQ_STR(buf_str(&b), "NameError: x\nsecond\n");
    /* A long line is cut as in a run's result, and says so. */
    buf_reset(&b);
    char *line = xmalloc(OUTPUT_LINE_MAX + 501);
    memset(line, 'y', OUTPUT_LINE_MAX + 500);
    line[OUTPUT_LINE_MAX + 500] = '\n';
    output_clean_text(line, OUTPUT_LINE_MAX + 501, &b);
    CHECK_EQ_INT(b.len, OUTPUT_LINE_MAX + strlen(" … [500 bytes cut]") + 1);
    CHECK(strstr(buf_str(&b), "y … [500 bytes cut]\n") != NULL);
    free(line);
    buf_free(&b);
}

static void test_durations(void)
{
    char d[32];
    textfmt_duration(d, sizeof d, 3);
    CHECK_EQ_STR(d, "3ms");
    textfmt_duration(d, sizeof d, 999);
    CHECK_EQ_STR(d, "999ms");
    textfmt_duration(d, sizeof d, 1000);
    CHECK_EQ_STR(d, "1.0s");
    textfmt_duration(d, sizeof d, 1249);
    CHECK_EQ_STR(d, "1.2s");
    textfmt_duration(d, sizeof d, 59999);
    CHECK_EQ_STR(d, "59.9s");
    textfmt_duration(d, sizeof d, 125000);
    CHECK_EQ_STR(d, "2m 5s");
    textfmt_duration(d, sizeof d, -5);
    CHECK_EQ_STR(d, "0ms");
}

static void test_footer(void)
{
    buf_t b;
    buf_init(&b, 0);
    textfmt_footer(&b, true, 3, 1, 0);
    CHECK_EQ_STR(buf_str(&b), "✓ 3ms | 1 var");
    buf_reset(&b);
    textfmt_footer(&b, true, 12, 2, 0);
    CHECK_EQ_STR(buf_str(&b), "✓ 12ms | 2 vars");
    buf_reset(&b);
    textfmt_footer(&b, false, 1200, 0, 0);
    CHECK_EQ_STR(buf_str(&b), "✗ 1.2s");
    buf_reset(&b);
    textfmt_footer(&b, true, 5, -1, 1);
    CHECK_EQ_STR(buf_str(&b), "✓ 5ms | 1 asset");
    buf_reset(&b);
    textfmt_footer(&b, false, 5, 3, 2);
    CHECK_EQ_STR(buf_str(&b), "✗ 5ms | 3 vars | 2 assets");
    buf_free(&b);
}

static void test_utf8(void)
{
    const char *s = "aé€😀";
    size_t n = strlen(s); /* 1 + 2 + 3 + 4 */
    CHECK_EQ_INT(n, 10);
    CHECK_EQ_INT(utf8_count(s, n), 4);
    CHECK_EQ_INT(utf8_offset(s, n, 2), 3);
    CHECK_EQ_INT(utf8_offset(s, n, 4), 10);
    CHECK_EQ_INT(utf8_utf16_count(s, n), 5);
    CHECK_EQ_INT(utf8_utf16_offset(s, n, 3), 6);
    CHECK_EQ_INT(utf8_utf16_offset(s, n, 4), 6); /* inside the surrogate pair */
    CHECK_EQ_INT(utf8_floor(s, n, 2), 1);
    CHECK_EQ_INT(utf8_floor(s, n, 5), 3);
    CHECK_EQ_INT(utf8_floor(s, n, 7), 6);
    CHECK_EQ_INT(utf8_valid_char("\xC0\x80", 2), 0); /* overlong */
    CHECK_EQ_INT(utf8_valid_char("\xED\xA0\x80", 3), 0); /* surrogate */
    CHECK_EQ_INT(utf8_valid_char("\xE2\x82", 2), 0); /* truncated */
}

static void test_utf8_trim_and_scrub(void)
{
    CHECK_EQ_INT(utf8_trim_tail("ab\xc3", 3), 2);
    CHECK_EQ_INT(utf8_trim_tail("ab\xe6\x97", 4), 2);
    CHECK_EQ_INT(utf8_trim_tail("ab\xe6\x97\xa5", 5), 5);
    CHECK_EQ_INT(utf8_trim_tail("abc", 3), 3);
    CHECK_EQ_INT(utf8_valid_prefix("ok\xffno", 5), 2);
    buf_t b;
    buf_init(&b, 0);
    buf_append_utf8(&b, "a\xff" "b\xc3", 4);
    CHECK_EQ_STR(buf_str(&b), "a\xef\xbf\xbd" "b\xef\xbf\xbd");
    buf_free(&b);
}

static void test_json_str_escaping(void)
{
    buf_t b;
    buf_init(&b, 0);
    buf_put_json_str(&b, "a\"b\\c\n\x01\xff é", 11);
    CHECK_EQ_STR(buf_str(&b), "\"a\\\"b\\\\c\\n\\u0001\xEF\xBF\xBD é\"");
    buf_free(&b);
}

static void test_buf_cap(void)
{
    buf_t b;
    buf_init(&b, 8);
    CHECK_EQ_INT(buf_puts(&b, "12345678"), 0);
    CHECK_EQ_INT(buf_puts(&b, "9"), -1);
    CHECK_EQ_INT(b.len, 8);
    buf_free(&b);
}

int main(void)
{
    RUN_CASE(test_plain_lines);
    RUN_CASE(test_ansi_stripped);
    RUN_CASE(test_ansi_split_across_chunks);
    RUN_CASE(test_cr_folds_to_last_frame);
    RUN_CASE(test_crlf_split_across_chunks);
    RUN_CASE(test_control_chars_dropped);
    RUN_CASE(test_clean_chunk_for_streaming);
    RUN_CASE(test_truncation_head_tail);
    RUN_CASE(test_exactly_100_lines_not_truncated);
    RUN_CASE(test_render_max);
    RUN_CASE(test_long_line_cut_on_utf8_boundary);
    RUN_CASE(test_malformed_escapes_keep_text);
    RUN_CASE(test_line_cut_with_character_split_across_writes);
    RUN_CASE(test_spill_failure_is_reported);
    RUN_CASE(test_block_starts_a_line);
    RUN_CASE(test_clear_and_reset);
    RUN_CASE(test_clean_text);
    RUN_CASE(test_durations);
    RUN_CASE(test_footer);
    RUN_CASE(test_utf8);
    RUN_CASE(test_utf8_trim_and_scrub);
    RUN_CASE(test_json_str_escaping);
    RUN_CASE(test_buf_cap);
    return check_report("test_output");
}
