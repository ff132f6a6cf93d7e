/* libFuzzer harness for formats/zip: open, then read every entry through every API.
 * Anything but a clean error code (a crash, a sanitizer report, a leak) is a bug. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "formats/zip.h"
#include "libconvert/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t buf[4096];
    lc_zip *z;
    lc_error err = {0};
    if (lc_zip_open_mem(data, size, &z, &err) != LC_OK)
        return 0;
    for (size_t i = 0; i < lc_zip_count(z); i++) {
        const lc_zip_entry *e = lc_zip_entry_at(z, i);
        if (lc_zip_find(z, e->name) != e)
            __builtin_trap(); /* names are unique, so find must return this entry */
        /* Bombs are refused by the ratio cap at open; this only keeps runs fast. */
        if (e->size > (8u << 20))
            continue;
        uint8_t *all = NULL;
        size_t len = 0;
        lc_error e1 = {0};
        lc_code rc = lc_zip_entry_read_all(z, e, 8u << 20, &all, &len, &e1);
        if (rc == LC_OK && len != e->size)
            __builtin_trap();
        lc_error e2 = {0};
        if (lc_zip_entry_verify_crc(z, e, &e2) != rc)
            __builtin_trap(); /* both read the whole entry: same verdict */
        lc_zip_reader *rd;
        lc_error e3 = {0};
        if (lc_zip_reader_open(z, e, &rd, &e3) == LC_OK) {
            size_t got;
            uint64_t total = 0;
            while (lc_zip_reader_read(rd, buf, 777, &got, &e3) == LC_OK && got > 0) {
                if (all && memcmp(buf, all + total, got) != 0)
                    __builtin_trap();
                total += got;
            }
            lc_zip_reader_close(rd);
        }
        const uint8_t *v = lc_zip_entry_view(z, e);
        if (v && rc == LC_OK && memcmp(v, all, len) != 0)
            __builtin_trap();
        lc_error e4 = {0};
        uint64_t off = e->size / 3;
        size_t n = e->size - off > sizeof buf ? sizeof buf : (size_t)(e->size - off);
        if (lc_zip_entry_pread(z, e, off, buf, n, &e4) == LC_OK && all &&
            memcmp(buf, all + off, n) != 0)
            __builtin_trap();
        lc_free(all);
    }
    lc_zip_close(z);
    return 0;
}
