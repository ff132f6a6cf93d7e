#!/usr/bin/env bash
# Keeps what a long fuzz campaign found: libFuzzer's -merge=1 reduces CORPUS_DIR (plus the
# archive already kept) to the smallest set that covers the same features, stored as
# tests/fuzz/corpus/FMT.tar.gz, which scripts/run-fuzz.sh (make check, make fuzz) unpacks
# as seeds. Deterministic archive (sorted names, no times or owners), so an unchanged set
# gives unchanged bytes.
#   scripts/fuzz-keep-corpus.sh build/fuzz/fuzz_gguf /path/to/long/run/corpus/gguf
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1; found=$2
fmt=$(basename "$bin"); fmt=${fmt#fuzz_}
archive=tests/fuzz/corpus/$fmt.tar.gz
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old" "$work/$fmt" tests/fuzz/corpus
[ -f "$archive" ] && tar -xzf "$archive" -C "$work/old" --strip-components=1
"$bin" -merge=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    "$work/$fmt" "$work/old" "$found" 2> "$work/merge.log" \
    || { tail -n 20 "$work/merge.log"; exit 1; }
tar -C "$work" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - "$fmt" \
    | gzip -9n > "$archive"
echo "fuzz-keep-corpus: $archive: $(ls "$work/$fmt" | wc -l) inputs, $(stat -c %s "$archive") bytes"
