/* fuzz_output: the output cleaner and its bounds.
 *
 * Input: a flags byte, a count n (at most 15) of split points, n 2-byte
 * offsets, then the raw text. The text is written once whole and once in
 * the chunks the split points give. Checked: chunking changes nothing (the
 * rendered text, the streamed clean text and the line count are the same);
 * valid UTF-8 in gives valid UTF-8 out, from output_render, the streamed
 * chunks and output_clean_text, however lines are cut; utf8_floor never cuts
 * inside a character. With flags bit 0 the text is written `reps` times into
 * an output that spills to a file, to reach truncation and the spill file;
 * the file is named in the render exactly when something was cut, and then
 * holds valid UTF-8 too (it is removed afterwards). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fuzz_check.h"
#include "mem.h"
#include "output.h"
#include "utf8.h"

static char s_dir[64];

static void s_remove_dir(void)
{
    rmdir(s_dir); /* the spill files are removed after each input */
}

/* A scratch dir for spill files, removed at exit. */
static const char *s_spill_dir(void)
{
    if (!s_dir[0]) {
        snprintf(s_dir, sizeof s_dir, "/tmp/rat-fuzz-output-%ld", (long)getpid());
        atexit(s_remove_dir);
    }
    return s_dir;
}

static void s_check_file(const char *path, bool want_utf8)
{
    FILE *f = fopen(path, "rb");
    FUZZ_ASSERT(f);
    buf_t b;
    buf_init(&b, 0);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    if (want_utf8)
        FUZZ_ASSERT(fuzz_utf8_ok(buf_str(&b), b.len));
    buf_free(&b);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint8_t flags = data[0];
    size_t nsplit = data[1] & 15;
    if (size < 2 + 2 * nsplit)
        return 0;
    size_t splits[16];
    for (size_t i = 0; i < nsplit; i++)
        splits[i] = (size_t)data[2 + 2 * i] << 8 | data[3 + 2 * i];
    const char *text = (const char *)data + 2 + 2 * nsplit;
    size_t len = size - 2 - 2 * nsplit;
    bool valid = fuzz_utf8_ok(text, len);

    /* Whole. */
    output_t *whole = output_new(NULL);
    buf_t clean1, r1;
    buf_init(&clean1, 0);
    buf_init(&r1, 0);
    output_write(whole, text, len, &clean1);
    output_render(whole, &r1);

    /* Chunked at the split points (sorted, clamped to the text). */
    for (size_t i = 1; i < nsplit; i++)
        for (size_t j = i; j > 0 && splits[j - 1] > splits[j]; j--) {
            size_t t = splits[j];
            splits[j] = splits[j - 1];
            splits[j - 1] = t;
        }
    output_t *chunked = output_new(NULL);
    buf_t clean2, r2;
    buf_init(&clean2, 0);
    buf_init(&r2, 0);
    size_t at = 0;
    for (size_t i = 0; i <= nsplit; i++) {
        size_t end = i < nsplit ? (splits[i] < len ? splits[i] : len) : len;
        if (end < at)
            end = at;
        output_write(chunked, text + at, end - at, &clean2);
        at = end;
    }
    output_render(chunked, &r2);

    FUZZ_ASSERT(r1.len == r2.len && memcmp(buf_str(&r1), buf_str(&r2), r1.len) == 0);
    FUZZ_ASSERT(clean1.len == clean2.len && memcmp(buf_str(&clean1), buf_str(&clean2), clean1.len) == 0);
    FUZZ_ASSERT(output_line_count(whole) == output_line_count(chunked));
    FUZZ_ASSERT(output_spill_path(whole) == NULL);
    if (valid) {
        FUZZ_ASSERT(fuzz_utf8_ok(buf_str(&r1), r1.len));
        FUZZ_ASSERT(fuzz_utf8_ok(buf_str(&clean1), clean1.len));
    }

    /* The stateless cleaner. */
    buf_t ct;
    buf_init(&ct, 0);
    output_clean_text(text, len, &ct);
    if (valid)
        FUZZ_ASSERT(fuzz_utf8_ok(buf_str(&ct), ct.len));

    /* utf8_floor at every split point. */
    for (size_t i = 0; i < nsplit; i++) {
        size_t cut = utf8_floor(text, len, splits[i]);
        FUZZ_ASSERT(cut <= splits[i] || (cut == len && splits[i] >= len));
        FUZZ_ASSERT(cut <= len);
        if (valid)
            FUZZ_ASSERT(fuzz_utf8_ok(text, cut));
    }

    /* Repeated into a spilling output: truncation and the full-output file. */
    if (flags & 1) {
        size_t reps = (size_t)(flags >> 1) + 1;
        output_t *big = output_new(s_spill_dir());
        for (size_t i = 0; i < reps; i++)
            output_write(big, text, len, NULL);
        if (flags & 0x80)
            output_write_block(big, text, len);
        buf_t r3;
        buf_init(&r3, 0);
        output_render(big, &r3);
        if (valid)
            FUZZ_ASSERT(fuzz_utf8_ok(buf_str(&r3), r3.len));
        /* More complete lines than are kept (the unfinished last line is
         * always shown) means the full text went to a file, and the render
         * names that file on its last line. */
        const char *spill = output_spill_path(big);
        if (output_line_count(big) > 2 * OUTPUT_KEEP_LINES + 1)
            FUZZ_ASSERT(spill != NULL);
        if (spill) {
            char *tail = xasprintf("\n[full output: %s]", spill);
            size_t tl = strlen(tail);
            FUZZ_ASSERT(r3.len >= tl && memcmp(buf_str(&r3) + r3.len - tl, tail, tl) == 0);
            free(tail);
            char *path = xstrdup(spill);
            output_destroy(&big);
            s_check_file(path, valid);
            free(path);
        }
        output_destroy(&big);
        buf_free(&r3);
    }

    buf_free(&ct);
    buf_free(&clean1);
    buf_free(&r1);
    buf_free(&clean2);
    buf_free(&r2);
    output_destroy(&whole);
    output_destroy(&chunked);
    return 0;
}
