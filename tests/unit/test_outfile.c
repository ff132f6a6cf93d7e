/* Unit tests for atomic output files and the map. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "libconvert/map.h"
#include "libconvert/outfile.h"

static char dir[] = "/tmp/lc-outfile-XXXXXX";

Test(outfile, commit_renames_and_abort_cleans) {
    cr_assert_not_null(mkdtemp(dir));
    char path[256], tmp[256];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    snprintf(tmp, sizeof tmp, "%s/out.bin.tmp", dir);
    lc_outfile *f;
    lc_error err = {0};
    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK);
    static uint8_t big[3 << 20];
    memset(big, 0xab, sizeof big);
    cr_assert_eq(lc_outfile_write(f, "hdr", 3, &err), LC_OK);
    cr_assert_eq(lc_outfile_write(f, big, sizeof big, &err), LC_OK);
    cr_assert_eq(lc_outfile_pad(f, 5, &err), LC_OK);
    cr_assert_eq(lc_outfile_tell(f), 3 + sizeof big + 5);
    cr_assert_eq(access(path, F_OK), -1, "final file must not exist before commit");
    cr_assert_eq(access(tmp, F_OK), 0);
    cr_assert_eq(lc_outfile_commit(f, &err), LC_OK);
    cr_assert_eq(access(tmp, F_OK), -1);
    lc_map *m;
    cr_assert_eq(lc_map_open(path, &m, &err), LC_OK);
    cr_assert_eq(m->size, 3 + sizeof big + 5);
    cr_assert_eq(memcmp(m->data, "hdr", 3), 0);
    cr_assert_eq(m->data[3 + sizeof big - 1], 0xab);
    cr_assert_eq(m->data[m->size - 1], 0);
    lc_map_close(m);

    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK);
    cr_assert_eq(lc_outfile_write(f, "x", 1, &err), LC_OK);
    lc_outfile_abort(f);
    cr_assert_eq(access(tmp, F_OK), -1);
    cr_assert_eq(lc_map_open(path, &m, &err), LC_OK, "old file stays after abort");
    cr_assert_eq(m->size, 3 + sizeof big + 5);
    lc_map_close(m);
    unlink(path);
    rmdir(dir);
}

Test(outfile, unwritable_dir_is_io_error) {
    lc_outfile *f = (lc_outfile *)1;
    lc_error err = {0};
    cr_assert_eq(lc_outfile_open("/nonexistent-dir/x.bin", &f, &err), LC_E_IO);
    cr_assert_null(f);
    cr_assert_str_eq(err.path, "/nonexistent-dir/x.bin");
}

Test(map, missing_and_empty) {
    lc_map *m;
    lc_error err = {0};
    cr_assert_eq(lc_map_open("/nonexistent-file", &m, &err), LC_E_NOTFOUND);
    cr_assert_null(m);
    char path[] = "/tmp/lc-empty-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(lc_map_open(path, &m, NULL), LC_OK);
    cr_assert_eq(m->size, 0);
    cr_assert_null(m->data);
    lc_map_close(m);
    unlink(path);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_map_open("/tmp", &m, &err), LC_E_ARG);
}
