/* quant/iq_grid.c: the IQ quantizers' maps and neighbour lists (see iq_grid_impl.h). */
#include "quant/iq_grid_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "libconvert/alloc.h"
#include "quant/iq_tables.h"

typedef struct spec {
    int ngrid, dim, bits, nwant, kmap;
    const uint8_t *values;      /* ngrid * dim bytes (signed for IQ1) */
} spec;

/* ggml's kmap_size: every index whose levels are 0..2 (2 bits) or 0..7 (3 bits). */
#define KMAP2 43692
#define KMAP3 4096

static const spec SPECS[LC_IQG_COUNT] = {
    [LC_IQG_IQ2_XXS] = { 256, 8, 2, 2, KMAP2, &lc_iq2xxs_grid[0][0] },
    [LC_IQG_IQ2_XS] = { 512, 8, 2, 2, KMAP2, &lc_iq2xs_grid[0][0] },
    [LC_IQG_IQ2_S] = { 1024, 8, 2, 1, KMAP2, &lc_iq2s_grid[0][0] },
    [LC_IQG_IQ1] = { 2048, 8, 2, 3, KMAP2, (const uint8_t *)&lc_iq1s_grid[0][0] },
    [LC_IQG_IQ3_XXS] = { 256, 4, 3, 2, KMAP3, &lc_iq3xxs_grid[0][0] },
    [LC_IQG_IQ3_S] = { 512, 4, 3, 3, KMAP3, &lc_iq3s_grid[0][0] },
};

typedef struct built {
    lc_iq_grid g;
    int8_t *point;
    int32_t *index;
    int32_t *map;
    uint16_t *neighbours;
} built;

static built g_built[LC_IQG_COUNT];
static pthread_once_t g_once[LC_IQG_COUNT] = {
    PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
    PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
};

/* The value of entry k at position i as a level: its rank among the grid's values. */
static int value_of(const spec *s, int k, int i) {
    const uint8_t v = s->values[k * s->dim + i];
    return s->values == (const uint8_t *)&lc_iq1s_grid[0][0] ? (int)(int8_t)v : (int)v;
}

/* The nearest entries of `pt` (dim values 2l+1): the entries at the nwant smallest
 * squared distances, ordered by distance then entry (a counting sort, stable in the
 * entry), appended to *list at *len (grown as needed); returns their count, -1 when out
 * of memory. d2: scratch of ngrid ints. */
static int nearest(const built *b, const spec *s, const int8_t *pt, int *d2, uint16_t **list,
                   size_t *len, size_t *cap) {
    enum { MAXD = 1024 };       /* 8 * 6^2 or 4 * 14^2 at most */
    int count[MAXD];
    memset(count, 0, sizeof count);
    for (int j = 0; j < s->ngrid; j++) {
        const int8_t *pg = b->point + j * s->dim;
        int d = 0;
        for (int k = 0; k < s->dim; k++)
            d += (pg[k] - pt[k]) * (pg[k] - pt[k]);
        d2[j] = d;
        count[d]++;
    }
    /* The first slot of each kept distance, in ascending order; the threshold. */
    int start[MAXD], n = 0, have = 0, last = -1;
    for (int d = 0; d < MAXD && have < s->nwant; d++) {
        if (!count[d])
            continue;
        start[d] = n;
        n += count[d];
        have++;
        last = d;
    }
    if (*len + 1 + (size_t)n > *cap) {
        size_t nc = *cap ? *cap : 1u << 16;
        while (*len + 1 + (size_t)n > nc)
            nc *= 2;
        uint16_t *p = lc_realloc_array(*list, nc, sizeof *p);
        if (!p)
            return -1;
        *list = p;
        *cap = nc;
    }
    uint16_t *out = *list + *len;
    out[0] = (uint16_t)n;
    for (int j = 0; j < s->ngrid; j++)
        if (d2[j] <= last)
            out[1 + start[d2[j]]++] = (uint16_t)j;
    *len += 1 + (size_t)n;
    return n;
}

static void build(lc_iqg_id id) {
    const spec *s = &SPECS[id];
    built *b = &g_built[id];
    int *d2 = lc_malloc((size_t)s->ngrid * sizeof *d2);
    b->point = lc_malloc((size_t)s->ngrid * (size_t)s->dim);
    b->index = lc_malloc((size_t)s->ngrid * sizeof *b->index);
    b->map = lc_malloc((size_t)s->kmap * sizeof *b->map);
    size_t len = 0, cap = 0;
    if (!d2 || !b->point || !b->index || !b->map)
        goto fail;
    /* The grid's distinct values, ascending: a value's rank is its level. */
    int levels[16], nlev = 0;
    for (int k = 0; k < s->ngrid; k++)
        for (int i = 0; i < s->dim; i++) {
            const int v = value_of(s, k, i);
            int at = 0;
            while (at < nlev && levels[at] < v)
                at++;
            if (at < nlev && levels[at] == v)
                continue;
            if (nlev == 16)
                goto fail;
            memmove(levels + at + 1, levels + at, (size_t)(nlev - at) * sizeof *levels);
            levels[at] = v;
            nlev++;
        }
    for (int i = 0; i < s->kmap; i++)
        b->map[i] = -1;
    for (int k = 0; k < s->ngrid; k++) {
        int index = 0;
        for (int i = 0; i < s->dim; i++) {
            int l = 0;
            while (levels[l] != value_of(s, k, i))
                l++;
            b->point[k * s->dim + i] = (int8_t)(2 * l + 1);
            index |= l << (s->bits * i);
        }
        if (index >= s->kmap)
            goto fail;
        b->map[index] = k;
        b->index[k] = index;
    }
    /* The lists in index order, each at the offset ggml gives it. */
    const int mask = (1 << s->bits) - 1;
    int8_t pt[8];
    for (int i = 0; i < s->kmap; i++) {
        if (b->map[i] >= 0)
            continue;
        for (int k = 0; k < s->dim; k++)
            pt[k] = (int8_t)(2 * ((i >> (s->bits * k)) & mask) + 1);
        b->map[i] = -(int32_t)(len + 1);
        if (nearest(b, s, pt, d2, &b->neighbours, &len, &cap) < 0)
            goto fail;
    }
    b->g = (lc_iq_grid){ .ngrid = s->ngrid, .dim = s->dim, .bits = s->bits,
                         .point = b->point, .index = b->index, .map = b->map,
                         .neighbours = b->neighbours, .ops = NULL };
    lc_free(d2);
    return;
fail:
    lc_free(d2);
    lc_free(b->point);
    lc_free(b->index);
    lc_free(b->map);
    lc_free(b->neighbours);
    b->point = NULL;
}

#define ONCE(k) static void once_##k(void) { build(k); }
ONCE(0) ONCE(1) ONCE(2) ONCE(3) ONCE(4) ONCE(5)
static void (*const ONCES[LC_IQG_COUNT])(void) = { once_0, once_1, once_2, once_3, once_4,
                                                   once_5 };

const lc_iq_grid *lc_iq_grid_get(lc_iqg_id id) {
    if ((unsigned)id >= LC_IQG_COUNT)
        return NULL;
    pthread_once(&g_once[id], ONCES[id]);
    return g_built[id].point ? &g_built[id].g : NULL;
}

lc_code lc_iq_grid_ready(lc_iqg_id id, lc_error *err) {
    return lc_iq_grid_get(id) ? LC_OK
                              : lc_fail(err, LC_E_NOMEM, LC_NO_OFFSET, "out of memory for the "
                                        "IQ quantizers' search tables");
}
