/* replay_main: runs a fuzz harness over files, without libFuzzer.
 *
 * Linked with each harness in the normal (gcc, ASan, valgrind) builds so the
 * committed corpus, including every input that once crashed, is replayed by
 * ctest as a regression test. Arguments are files or directories (their
 * regular files, in name order). Exits 0 when every input ran; a harness
 * invariant failure aborts, which fails the test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int s_run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *data = malloc(cap);
    size_t n;
    while (data && (n = fread(data + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            cap *= 2;
            data = realloc(data, cap);
        }
    }
    fclose(f);
    if (!data)
        return -1;
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

static int s_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0) {
            perror(argv[i]);
            failed = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failed |= s_run_file(argv[i]) < 0;
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        size_t nn = 0, capn = 0;
        struct dirent *e;
        char **files = NULL;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            if (nn == capn) {
                capn = capn ? capn * 2 : 64;
                files = realloc(files, capn * sizeof *files);
            }
            size_t plen = strlen(argv[i]) + strlen(e->d_name) + 2;
            files[nn] = malloc(plen);
            snprintf(files[nn], plen, "%s/%s", argv[i], e->d_name);
            nn++;
        }
        if (d)
            closedir(d);
        if (nn)
            qsort(files, nn, sizeof *files, s_cmp);
        for (size_t k = 0; k < nn; k++) {
            struct stat fs;
            if (stat(files[k], &fs) == 0 && S_ISREG(fs.st_mode)) {
                failed |= s_run_file(files[k]) < 0;
                count++;
            }
            free(files[k]);
        }
        free(files);
    }
    fprintf(stderr, "replayed %zu inputs%s\n", count, failed ? " (some could not be read)" : "");
    return failed || count == 0;
}
