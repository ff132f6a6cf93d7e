#!/usr/bin/env bash
# A newcomer's first steps (issue 19, item 7): a bare `make` builds every tool (checked
# with -n on an empty build folder: a link line for each cmd/*.c, and no nvcc without
# CUDA=1), and `make install PREFIX=...` gives a library that a C program builds against
# with nothing but the installed pkg-config file, links (static library: its
# dependencies in Libs) and runs.
set -eu
root=$LC_ROOT
build=$(cd "$LC_BIN/.." && pwd)

# A newcomer's make: not the CUDA=1 that CI's own make passes down (in MAKEFLAGS and as an
# environment variable: make exports a command line's variables to its recipes).
out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CUDA make -n -C "$root" BUILD="$TMPDIR/clean")
for src in "$root"/cmd/*.c; do
    tool=$(basename "$src" .c)
    grep -q -- "-o $TMPDIR/clean/bin/$tool\b" <<<"$out" || { echo "bare make -n: no $tool"; exit 1; }
done
if grep -q nvcc <<<"$out"; then echo "bare make runs nvcc"; exit 1; fi

# A sanitizer build's library needs the sanitizer's runtime: nothing to link a plain
# program against.
if grep -q -e __asan_init -e __ubsan_handle "$build/libconvert.a"; then exit 0; fi
prefix=$TMPDIR/prefix
make -s -C "$root" BUILD="$build" install PREFIX="$prefix" > "$TMPDIR/install.log"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pkg-config --exists libconvert
[ "$(pkg-config --modversion libconvert)" = "$(sed -n 's/.*LC_VERSION "\(.*\)"/\1/p' "$root/libconvert/version.h")" ]
cat > "$TMPDIR/use.c" <<'C'
#include <stdio.h>
#include "jobs/model_inspect.h"
#include "libconvert/version.h"
/* The whole library through one job: every reader (zlib for zip, cJSON for HF). */
int main(int argc, char **argv) {
    lc_job_inspect_opts o = { .path = argv[1] };
    lc_job_inspect_result res;
    lc_error err = { 0 };
    if (argc != 2 || lc_job_model_inspect(&o, NULL, &res, &err) != LC_OK ||
        lc_inspect_print_json(stdout, res.model, &res.info, &err) != LC_OK) {
        fprintf(stderr, "use: %s\n", err.msg);
        return 1;
    }
    lc_job_inspect_result_free(&res);
    fprintf(stderr, "%s\n", LC_VERSION);
    return 0;
}
C
# Only what pkg-config says: no -I or -L of the source tree.
cc -std=c11 -o "$TMPDIR/use" "$TMPDIR/use.c" $(pkg-config --cflags --libs libconvert)
for f in safetensors/tiny_llama.safetensors pth/2.15.0/checkpoint.pth; do
    for g in "$root"/fixtures/$f; do
        [ -f "$g" ] || continue
        "$TMPDIR/use" "$g" > "$TMPDIR/got.json"
        model-inspect --json "$g" > "$TMPDIR/want.json" || true
        cmp "$TMPDIR/got.json" "$TMPDIR/want.json"
        break
    done
done
