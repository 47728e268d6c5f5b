/* output: cleaning and bounding the text of one execution. */
#define LOG_MODULE "output"
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "fileio.h"
#include "jpaths.h"
#include "log.h"
#include "mem.h"
#include "utf8.h"

typedef enum { ESC_NONE, ESC_START, ESC_CSI, ESC_OSC, ESC_OSC_ESC, ESC_INTER } s_esc_t;

typedef struct {
    char *text;      /* owned, cut at OUTPUT_LINE_MAX */
    size_t len;
    size_t cut;      /* bytes dropped from the end of this line */
} s_line_t;

struct output {
    char *spill_dir;                        /* owned, may be NULL */
    s_esc_t esc;                            /* ANSI parser state across chunks */
    bool pending_cr;                        /* saw \r, waiting to see if \n follows */
    buf_t cur;                              /* current (unterminated) line, capped */
    size_t cur_cut;                         /* bytes of the current line beyond the cap */
    bool cur_spilled;                       /* the current line's start is in the spill file
                                             * (output_render_max): its bytes stream there */
    size_t nhead;
    size_t tail_start, ntail;
    size_t lines;                           /* lines committed in this segment */
    bool truncated;                         /* some line fell out of head/tail or was cut */
    FILE *spill;                            /* full cleaned output, once something is cut */
    char *spill_path;                       /* owned */
    char *spill_error;                      /* owned: why the full output could not be kept */
    long spill_bytes;
    bool spill_capped;
    /* Last, and not zeroed by output_new (2.4 KB for every run): an entry
     * is read only below nhead / within ntail, after it was written. */
    s_line_t head[OUTPUT_KEEP_LINES];
    s_line_t tail[OUTPUT_KEEP_LINES];       /* ring */
};

output_t *output_new(const char *spill_dir)
{
    output_t *self = xmalloc(sizeof *self);
    memset(self, 0, offsetof(output_t, head));
    self->spill_dir = xstrdup(spill_dir);
    buf_init(&self->cur, 0); /* capped by hand at OUTPUT_LINE_MAX */
    return self;
}

static void s_free_lines(output_t *self)
{
    for (size_t i = 0; i < self->nhead; i++)
        free(self->head[i].text);
    for (size_t i = 0; i < self->ntail; i++)
        free(self->tail[(self->tail_start + i) % OUTPUT_KEEP_LINES].text);
    self->nhead = self->ntail = self->tail_start = 0;
}

static void s_close_spill(output_t *self)
{
    if (self->spill)
        fclose(self->spill);
    self->spill = NULL;
}

void output_destroy(output_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    output_t *self = *self_p;
    s_free_lines(self);
    s_close_spill(self);
    buf_free(&self->cur);
    free(self->spill_path);
    free(self->spill_error);
    free(self->spill_dir);
    free(self);
    *self_p = NULL;
}

/* The full output cannot be kept (no dir, disk full, ...): remember why for
 * the rendered text and drop the partial file, which would otherwise look
 * complete. Called with errno's value; only the first reason is kept. */
static void s_spill_fail(output_t *self, const char *what, int err)
{
    if (!self->spill_error) {
        self->spill_error = xasprintf("%s: %s", what, strerror(err));
        log_warn("full output not saved: %s", self->spill_error);
    }
    if (self->spill) {
        fclose(self->spill);
        self->spill = NULL;
    }
    if (self->spill_path) {
        unlink(self->spill_path);
        FREE_AND_NULL(self->spill_path);
    }
}

static void s_spill_write(output_t *self, const char *p, size_t n)
{
    if (!self->spill || self->spill_capped)
        return;
    if (self->spill_bytes + (long)n > OUTPUT_SPILL_MAX) {
        fputs("\n[rat-py: output file capped here]\n", self->spill);
        self->spill_capped = true;
        if (fflush(self->spill) != 0)
            s_spill_fail(self, self->spill_path, errno);
        return;
    }
    /* stdio reports a failed flush of its buffer (ENOSPC, EIO) as a short
     * write here, or at the latest at the flush in output_render. */
    if (fwrite(p, 1, n, self->spill) != n) {
        s_spill_fail(self, self->spill_path, errno);
        return;
    }
    self->spill_bytes += (long)n;
}

static void s_spill_line(output_t *self, const s_line_t *l)
{
    s_spill_write(self, l->text, l->len);
    s_spill_write(self, "\n", 1);
}

/* Opens the spill file and writes what is kept so far, in order. Called the
 * first time something is about to be lost from memory. */
static void s_start_spill(output_t *self)
{
    if (self->spill || self->spill_path || self->spill_error || !self->spill_dir)
        return;
    if (jpaths_ensure_dir(self->spill_dir) < 0) {
        int e = errno;
        char *what = xasprintf("cannot create %s", self->spill_dir);
        s_spill_fail(self, what, e);
        free(what);
        return;
    }
    unsigned char r[8];
    char hex[17];
    randombytes_buf(r, sizeof r);
    sodium_bin2hex(hex, sizeof hex, r, sizeof r);
    self->spill_path = xasprintf("%s/output-%s.txt", self->spill_dir, hex);
    /* 0600 like everything rat-py writes (output may hold secrets the code
     * printed, and the assets dir may be shared); O_EXCL never follows a
     * symlink someone planted under the name. */
    int fd = open(self->spill_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    self->spill = fd < 0 ? NULL : fdopen(fd, "w");
    if (!self->spill) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        char *what = xasprintf("cannot write %s", self->spill_path);
        FREE_AND_NULL(self->spill_path); /* nothing to remove */
        s_spill_fail(self, what, e);
        free(what);
        return;
    }
    for (size_t i = 0; i < self->nhead; i++)
        s_spill_line(self, &self->head[i]);
    for (size_t i = 0; i < self->ntail; i++)
        s_spill_line(self, &self->tail[(self->tail_start + i) % OUTPUT_KEEP_LINES]);
}

static void s_commit_line(output_t *self)
{
    s_line_t l = {.len = self->cur.len, .cut = self->cur_cut};
    l.text = xstrndup(buf_str(&self->cur), self->cur.len);
    if (self->spill && !self->cur_cut && !self->cur_spilled)
        s_spill_line(self, &l);
    else if (self->spill)
        s_spill_write(self, "\n", 1); /* the line streamed into the file already */
    buf_reset(&self->cur);
    self->cur_cut = 0;
    self->cur_spilled = false;
    self->lines++;
    if (self->nhead < OUTPUT_KEEP_LINES) {
        self->head[self->nhead++] = l;
        return;
    }
    if (self->ntail < OUTPUT_KEEP_LINES) {
        self->tail[(self->tail_start + self->ntail++) % OUTPUT_KEEP_LINES] = l;
        return;
    }
    /* The oldest tail line falls into the truncated middle. */
    if (!self->spill) {
        s_start_spill(self); /* writes head and tail, not l */
        if (self->spill)
            s_spill_line(self, &l);
    }
    self->truncated = true;
    free(self->tail[self->tail_start].text);
    self->tail[self->tail_start] = l;
    self->tail_start = (self->tail_start + 1) % OUTPUT_KEEP_LINES;
}

/* Adds printable bytes to the current line, keeping at most OUTPUT_LINE_MAX. */
static void s_put(output_t *self, const char *p, size_t n)
{
    if (self->cur_cut) {
        s_spill_write(self, p, n);
        self->cur_cut += n;
        return;
    }
    if (self->cur_spilled)
        s_spill_write(self, p, n); /* the line's start is in the file already */
    size_t room = OUTPUT_LINE_MAX - self->cur.len;
    if (n <= room) {
        buf_append(&self->cur, p, n);
        return;
    }
    /* The line is too long: keep a prefix that ends on a character boundary
     * in memory, and stream the whole line into the spill file. */
    if (!self->spill)
        s_start_spill(self);
    if (!self->cur_spilled) {
        s_spill_write(self, buf_str(&self->cur), self->cur.len);
        s_spill_write(self, p, n);
    }
    /* The cut point is found in the line as a whole, not in this chunk: a
     * character may have begun in an earlier chunk (writes may split text
     * anywhere), and then the kept prefix ends before it. A character is at
     * most 4 bytes, so 3 bytes past the limit decide it. */
    size_t old_len = self->cur.len;
    size_t look = n < room + 3 ? n : room + 3;
    buf_append(&self->cur, p, look);
    size_t keep = utf8_floor(self->cur.data, self->cur.len, OUTPUT_LINE_MAX);
    self->cur.len = keep;
    self->cur.data[keep] = '\0';
    self->cur_cut = old_len + n - keep;
    self->truncated = true;
}

static void s_fold_cr(output_t *self)
{
    /* A carriage return not followed by a newline rewinds the line: keep only
     * the last frame of a progress bar. */
    buf_reset(&self->cur);
    if ((self->cur_cut || self->cur_spilled) && self->spill)
        s_spill_write(self, "\r", 1); /* cur_spilled stays: the file's line goes on */
    self->cur_cut = 0;
}

/* Advances the ANSI parser by one byte. Returns true when the byte belongs to
 * the escape sequence (and is dropped), false when the sequence is malformed
 * and ends before this byte, which is then ordinary text. Only ECMA-48 bytes
 * continue a sequence, so a malformed one never swallows a newline or a part
 * of a multi-byte character; OSC strings (titles, hyperlinks) run to BEL or
 * ST, whatever they contain. */
static bool s_esc_step(s_esc_t *st, unsigned char c)
{
    switch (*st) {
    case ESC_START:
        if (c == '[') {
            *st = ESC_CSI;
        } else if (c == ']') {
            *st = ESC_OSC;
        } else if (c >= 0x20 && c <= 0x2F) {
            *st = ESC_INTER;
        } else if (c >= 0x30 && c <= 0x7E) {
            *st = ESC_NONE; /* a two-byte escape: ESC 7, ESC c, ESC M ... */
        } else {
            *st = ESC_NONE;
            return false;
        }
        return true;
    case ESC_CSI:
        if (c >= 0x40 && c <= 0x7E)
            *st = ESC_NONE; /* final byte */
        else if (c < 0x20 || c > 0x3F) {
            *st = ESC_NONE;
            return false;
        }
        return true;
    case ESC_INTER:
        if (c >= 0x30 && c <= 0x7E)
            *st = ESC_NONE;
        else if (c < 0x20 || c > 0x2F) {
            *st = ESC_NONE;
            return false;
        }
        return true;
    case ESC_OSC:
        if (c == 0x07)
            *st = ESC_NONE;
        else if (c == 0x1B)
            *st = ESC_OSC_ESC;
        return true;
    case ESC_OSC_ESC:
        *st = c == '\\' ? ESC_NONE : ESC_OSC;
        return true;
    case ESC_NONE:
        break;
    }
    return false;
}

void output_write(output_t *self, const char *text, size_t len, buf_t *clean)
{
    size_t run = 0; /* start of a run of plain bytes */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (self->esc != ESC_NONE) {
            if (s_esc_step(&self->esc, c)) {
                run = i + 1;
                continue;
            }
            /* Not part of an escape sequence after all: the ESC is dropped
             * and this byte is text (it may start a UTF-8 character). */
            run = i;
        }
        bool special = c == 0x1B || c == '\r' || c == '\n' || (c < 0x20 && c != '\t') || c == 0x7F;
        if (!special && !self->pending_cr)
            continue;
        /* Flush the plain run before this byte. */
        if (i > run) {
            s_put(self, text + run, i - run);
            if (clean)
                buf_append(clean, text + run, i - run);
        }
        run = i + 1;
        if (self->pending_cr) {
            self->pending_cr = false;
            if (c != '\n')
                s_fold_cr(self);
        }
        if (!special) {
            run = i; /* re-examine this byte as plain text */
            continue;
        }
        if (c == 0x1B) {
            self->esc = ESC_START;
        } else if (c == '\n') {
            s_commit_line(self);
            if (clean)
                buf_putc(clean, '\n');
        } else if (c == '\r') {
            self->pending_cr = true;
            if (clean)
                buf_putc(clean, '\r');
        }
        /* Other control characters are dropped. */
    }
    if (len > run && self->esc == ESC_NONE) {
        if (self->pending_cr) {
            self->pending_cr = false;
            s_fold_cr(self);
        }
        s_put(self, text + run, len - run);
        if (clean)
            buf_append(clean, text + run, len - run);
    }
}

void output_write_block(output_t *self, const char *text, size_t len)
{
    if (self->cur.len || self->cur_cut)
        s_commit_line(self);
    self->pending_cr = false;
    self->esc = ESC_NONE;
    output_write(self, text, len, NULL);
    if (len && text[len - 1] != '\n')
        s_commit_line(self);
}

void output_clear(output_t *self)
{
    s_free_lines(self);
    s_close_spill(self);
    FREE_AND_NULL(self->spill_path);
    FREE_AND_NULL(self->spill_error);
    buf_reset(&self->cur);
    self->cur_cut = 0;
    self->cur_spilled = false;
    self->lines = 0;
    self->truncated = false;
    self->pending_cr = false;
    self->spill_bytes = 0;
    self->spill_capped = false;
}

void output_reset(output_t *self)
{
    output_clear(self);
}

bool output_empty(const output_t *self)
{
    return self->lines == 0 && self->cur.len == 0 && self->cur_cut == 0;
}

size_t output_line_count(const output_t *self)
{
    return self->lines + ((self->cur.len || self->cur_cut) ? 1 : 0);
}

const char *output_spill_path(const output_t *self)
{
    return self->spill_path;
}

bool output_truncated(const output_t *self)
{
    return self->truncated;
}

const char *output_spill_error(const output_t *self)
{
    return self->truncated ? self->spill_error : NULL;
}

static void s_render_line(buf_t *dst, const char *text, size_t len, size_t cut)
{
    buf_append(dst, text, len);
    if (cut)
        buf_printf(dst, " … [%zu bytes cut]", cut);
}

/* The i-th of the lines after the head: the tail's, then the unfinished
 * current line (when there is one) last. */
static void s_render_after_head(const output_t *self, size_t i, buf_t *dst)
{
    if (i < self->ntail) {
        const s_line_t *l = &self->tail[(self->tail_start + i) % OUTPUT_KEEP_LINES];
        s_render_line(dst, l->text, l->len, l->cut);
    } else {
        s_render_line(dst, buf_str(&self->cur), self->cur.len, self->cur_cut);
    }
}

/* Whether output_render ends with a line about the full-output file. */
static bool s_has_note(const output_t *self)
{
    return self->spill_path || (self->spill_error && self->truncated);
}

/* Cutting to max_lines needs the full-output file, which exists once a line
 * fell out of memory or was cut; not yet when all lines are in memory (at
 * most OUTPUT_KEEP_LINES at each end and an unfinished last one). Then it
 * starts here: head and tail go in, and the unfinished line's bytes so far,
 * which then streams there (cur_spilled) until it ends. */
static void s_spill_for_cut(output_t *self)
{
    self->truncated = true;
    if (self->spill || self->spill_path || self->spill_error || !self->spill_dir)
        return;
    s_start_spill(self);
    if (self->spill && (self->cur.len || self->cur_cut)) {
        s_spill_write(self, buf_str(&self->cur), self->cur.len);
        self->cur_spilled = true;
    }
}

void output_render_max(output_t *self, buf_t *dst, size_t max_lines)
{
    size_t after = self->ntail + ((self->cur.len || self->cur_cut) ? 1 : 0); /* lines after the head */
    size_t total = self->nhead + after + (self->lines > self->nhead + self->ntail ? 1 : 0);
    size_t show_head = self->nhead, show_after = after;
    if (max_lines && total + (s_has_note(self) ? 1 : 0) > max_lines) {
        s_spill_for_cut(self);
        /* Lines for text: all but the marker and the note; split evenly, an
         * odd one to the head. */
        size_t reserve = 1 + (s_has_note(self) ? 1 : 0);
        size_t room = max_lines > reserve ? max_lines - reserve : 0;
        show_after = after < room / 2 ? after : room / 2;
        show_head = self->nhead < room - show_after ? self->nhead : room - show_after;
        show_after = after < room - show_head ? after : room - show_head;
    }
    bool first = true;
    for (size_t i = 0; i < show_head; i++) {
        if (!first)
            buf_putc(dst, '\n');
        first = false;
        s_render_line(dst, self->head[i].text, self->head[i].len, self->head[i].cut);
    }
    size_t hidden = output_line_count(self) - show_head - show_after;
    if (hidden) {
        buf_printf(dst, "%s… [%zu lines truncated] …", first ? "" : "\n", hidden);
        first = false;
    }
    for (size_t i = after - show_after; i < after; i++) {
        if (!first)
            buf_putc(dst, '\n');
        first = false;
        s_render_after_head(self, i, dst);
    }
    if (self->spill && fflush(self->spill) != 0)
        s_spill_fail(self, self->spill_path, errno);
    if (self->spill_path)
        buf_printf(dst, "\n[full output: %s]", self->spill_path);
    else if (self->spill_error && self->truncated)
        buf_printf(dst, "\n[full output not saved: %s]", self->spill_error);
}

void output_render(output_t *self, buf_t *dst)
{
    output_render_max(self, dst, 0);
}

void output_clean_text(const char *text, size_t len, buf_t *dst)
{
    output_t tmp;
    memset(&tmp, 0, sizeof tmp);
    buf_init(&tmp.cur, 0);
    /* Reuse the streaming cleaner on a throwaway state without keeping lines:
     * feed line by line and copy each committed line out. */
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != '\n')
            continue;
        output_write(&tmp, text + start, i - start, NULL);
        if (tmp.pending_cr) {
            tmp.pending_cr = false;
        }
        s_render_line(dst, buf_str(&tmp.cur), tmp.cur.len, tmp.cur_cut);
        if (i < len)
            buf_putc(dst, '\n');
        buf_reset(&tmp.cur);
        tmp.cur_cut = 0;
        start = i + 1;
    }
    buf_free(&tmp.cur);
}
