/* hf/json.c: reading the small JSON files of an HF folder (see json.h). */
#include "hf/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "libconvert/alloc.h"
#include "libconvert/map.h"

lc_code lc_hf_json_parse(const char *buf, size_t len, cJSON **out, lc_error *err) {
    *out = NULL;
    if (len > LC_HF_MAX_JSON)
        return lc_fail(err, LC_E_OVERFLOW, 0, "%zu-byte JSON file passes the %u-byte limit", len,
                       LC_HF_MAX_JSON);
    const char *end = NULL;
    /* The length-bounded parse never reads past buf + len, NUL or not. */
    cJSON *j = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (!j) {
        uint64_t at = end && end >= buf && end <= buf + len ? (uint64_t)(end - buf) : 0;
        return lc_fail(err, LC_E_MALFORMED, at, "invalid JSON");
    }
    *out = j;
    return LC_OK;
}

lc_code lc_hf_json_path(char *buf, size_t cap, const char *dir, const char *name, lc_error *err) {
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return lc_fail(err, LC_E_ARG, LC_NO_OFFSET, "path %s/%s is too long", dir, name);
    return LC_OK;
}

bool lc_hf_json_exists(const char *dir, const char *name) {
    char path[4096];
    struct stat st;
    if (lc_hf_json_path(path, sizeof path, dir, name, NULL) != LC_OK)
        return false;
    /* Anything at the name counts: a FIFO or a folder called config.json is then
     * refused by name when it is opened, rather than reported missing. */
    return stat(path, &st) == 0;
}

lc_code lc_hf_json_load(const char *dir, const char *name, bool optional, cJSON **out,
                        lc_error *err) {
    char path[4096];
    lc_map *map = NULL;
    *out = NULL;
    LC_TRY(lc_hf_json_path(path, sizeof path, dir, name, err));
    if (!lc_hf_json_exists(dir, name)) {
        if (optional)
            return LC_OK;
        lc_code rc = lc_fail(err, LC_E_NOTFOUND, LC_NO_OFFSET, "%s is missing", name);
        lc_err_context(err, path, NULL);
        return rc;
    }
    lc_code rc = lc_map_open(path, &map, err);
    if (rc == LC_OK)
        rc = lc_hf_json_parse((const char *)map->data, (size_t)map->size, out, err);
    lc_map_close(map);
    lc_err_context(err, path, NULL);
    return rc;
}

lc_code lc_hf_json_int(const cJSON *j, const char *key, int64_t lo, int64_t hi, int64_t *v,
                       lc_error *err) {
    /* cJSON keeps numbers as double: exact for the integers configs hold (< 2^53). */
    double d = j && cJSON_IsNumber(j) ? j->valuedouble : NAN;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return lc_fail(err, LC_E_MALFORMED, LC_NO_OFFSET,
                       "%s must be an integer in [%" PRId64 ", %" PRId64 "]", key, lo, hi);
    *v = (int64_t)d;
    return LC_OK;
}

lc_code lc_hf_json_meta_u32(lc_model *m, const char *key, uint64_t v, lc_error *err) {
    lc_value val = lc_value_uint(LC_VT_U32, v);
    return lc_model_set_meta(m, key, &val, err);
}

lc_code lc_hf_json_meta_f32(lc_model *m, const char *key, double v, lc_error *err) {
    lc_value val = lc_value_float(LC_VT_F32, (double)(float)v);
    return lc_model_set_meta(m, key, &val, err);
}

lc_code lc_hf_json_meta_bool(lc_model *m, const char *key, bool v, lc_error *err) {
    lc_value val = lc_value_bool(v);
    return lc_model_set_meta(m, key, &val, err);
}
