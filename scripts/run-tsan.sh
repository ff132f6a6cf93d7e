#!/usr/bin/env bash
# make tsan: the threaded conversions under ThreadSanitizer. safetensors2gguf built
# with -fsanitize=thread ($TSAN_BIN) converts every fixtures/hf folder to every outtype
# on 4 threads; TSan must report nothing (it exits 66 on a report) and the file must be
# byte-identical to what the normal build ($LC_BIN) writes on one thread.
# (Criterion's shared arena does not start under TSan, so the unit tests run in
# make check and make asan instead.)
set -euo pipefail
: "${LC_BIN:?}" "${TSAN_BIN:?}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export TSAN_OPTIONS="halt_on_error=1 exitcode=66"
n=0
for dir in fixtures/hf/*/; do
    dir=${dir%/}
    for t in f32 f16 bf16 q8_0; do
        "$TSAN_BIN/safetensors2gguf" -q --no-fsync -t 4 --outtype "$t" "$dir" "$scratch/tsan.gguf"
        "$LC_BIN/safetensors2gguf" -q --no-fsync -t 1 --outtype "$t" "$dir" "$scratch/one.gguf"
        if ! cmp -s "$scratch/tsan.gguf" "$scratch/one.gguf"; then
            echo "tsan: $dir $t: 4 threads wrote a different file than 1 thread" >&2
            exit 1
        fi
        n=$((n + 1))
    done
done
echo "tsan: $n conversions on 4 threads, no race reported, same bytes as 1 thread"
