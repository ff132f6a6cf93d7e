#!/usr/bin/env bash
# Runs each libFuzzer binary for $LC_FUZZ_SECONDS seconds over its seed corpus
# (fixtures/bad/<format>, fixtures/<format>, and what the long campaigns kept:
# tests/fuzz/corpus/<format>.tar.gz, unpacked into build/fuzz-seeds; see
# scripts/fuzz-keep-corpus.sh); the corpus grows in build/fuzz-corpus.
set -eu
secs=${LC_FUZZ_SECONDS:-60}
for bin in "$@"; do
    name=$(basename "$bin"); fmt=${name#fuzz_}
    corpus=build/fuzz-corpus/$fmt
    mkdir -p "$corpus"
    seeds=()
    kept=tests/fuzz/corpus/$fmt.tar.gz
    if [ -f "$kept" ] && [ ! "build/fuzz-seeds/.$fmt.from" -nt "$kept" ]; then
        rm -rf "build/fuzz-seeds/$fmt"; mkdir -p build/fuzz-seeds
        tar -xzf "$kept" -C build/fuzz-seeds && touch "build/fuzz-seeds/.$fmt.from"
    fi
    for d in fixtures/bad/$fmt fixtures/$fmt build/fuzz-seeds/$fmt; do [ -d "$d" ] && seeds+=("$d"); done
    echo "fuzz: $name for ${secs}s"
    "$bin" -artifact_prefix="build/fuzz-crash-$fmt-" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=0 "$corpus" ${seeds[@]+"${seeds[@]}"} 2>build/fuzz-$fmt.log \
        || { tail -n 40 build/fuzz-$fmt.log; echo "fuzz: $name FAILED"; exit 1; }
    echo "fuzz: $name ok ($(grep -c . "$corpus"/* 2>/dev/null | wc -l) corpus files)"
done
