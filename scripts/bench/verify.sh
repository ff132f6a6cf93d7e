#!/usr/bin/env bash
# Bench: model-verify's whole run on a 1.5 GiB pair: the generated bf16 HF folder of
# hf2gguf_bench.py (build/bench/hf-llama-1.5g: 0.81 G params, 15 layers, vocab 32000)
# against its q8_0 GGUF, as a user runs it (default tokens: the bundled text cut at 512),
# and with 2 tokens (about the time of the metadata and per-tensor comparison alone:
# every byte of both files read and compared). Wall time and peak RSS of each run from
# tests/tools/lc-peak (the median of VERIFY_RUNS rounds, default 1: a run takes most of a
# minute on 2 cores).
set -euo pipefail
: "${LC_BIN:?}" "${PY:?}"
TBIN=${LC_TEST_BIN:-build/test-bin}
dir=build/bench
folder=$dir/hf-llama-1.5g
gguf=$dir/hf-llama-1.5g-q8_0.gguf
runs=${VERIFY_RUNS:-1}
mkdir -p "$dir"
[ -f "$folder/config.json" ] || "$PY" scripts/bench/hf2gguf_bench.py gen "$folder"
[ "$gguf" -nt "$folder/model.safetensors" ] ||
    "$LC_BIN/safetensors2gguf" -q --no-fsync --outtype q8_0 "$folder" "$gguf"

# One case: "label" then the model-verify arguments; prints the median seconds and the
# largest peak RSS over the rounds.
measure() {
    local label=$1 secs=() rss=0 s k
    shift
    for _ in $(seq "$runs"); do
        "$TBIN/lc-peak" "$dir/verify-peak.txt" "$LC_BIN/model-verify" -q "$@" >"$dir/verify-out.txt" ||
            { echo "bench verify: model-verify $* failed" >&2; cat "$dir/verify-out.txt" >&2; exit 1; }
        read -r s k <"$dir/verify-peak.txt"
        secs+=("$s")
        [ "$k" -gt "$rss" ] && rss=$k
    done
    s=$(printf '%s\n' "${secs[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '  %-44s %8.2f s   peak RSS %7.1f MiB\n' "$label" "$s" "$(echo "$rss / 1024" | bc -l)"
}

size=$(du -b "$folder/model.safetensors" | cut -f1)
qsize=$(du -b "$gguf" | cut -f1)
printf 'model-verify: %.2f GiB bf16 HF folder vs its %.2f GiB q8_0 GGUF (%d cores, median of %d):\n' \
    "$(echo "$size / 2^30" | bc -l)" "$(echo "$qsize / 2^30" | bc -l)" "$(nproc)" "$runs"
measure "whole run (512 tokens of the bundled text)" "$folder" "$gguf"
grep -E '^(logits|verdict):' "$dir/verify-out.txt" | sed 's/^/    /'
measure "metadata + tensors (+ a 2-token pass)" --max-tokens 2 "$folder" "$gguf"
rm -f "$dir/verify-peak.txt" "$dir/verify-out.txt"
