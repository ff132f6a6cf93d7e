#!/usr/bin/env bash
# Prints "sha256  case" for every file the tools write from the bundled fixtures:
# every HF folder x outtype, Meta's layout, bare containers, every pth fixture
# (plain, --dtype, --dedupe, sharded), safetensors rewrites and the way back.
# A refactor must not change one line of this list:
#   LC_BIN=build/bin scripts/output-hashes.sh > before.txt   (on the old commit)
#   LC_BIN=build/bin scripts/output-hashes.sh | diff before.txt -
# A case that fails prints "FAILED  case" so a new refusal shows up too.
# LC_HASH_DEVICE=cuda adds --device cuda to every run that converts on a device (a
# folder's safetensors2gguf, gguf-quantize): the list must be the CPU's, line for line
# (LC_CUDA_EMULATE=1 to run the CUDA back end on the CPU).
set -uo pipefail
: "${LC_BIN:?set LC_BIN to the folder of the tools}"
dev=()
[ -n "${LC_HASH_DEVICE:-}" ] && dev=(--device "$LC_HASH_DEVICE")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run NAME OUTFILE TOOL ARGS...: run the tool, print the hash of OUTFILE (or of every
# file in OUTFILE when it is a folder).
run() {
    local name=$1 out=$2
    shift 2
    rm -rf "$out"
    if ! "$LC_BIN/$1" -q --no-fsync -t 2 "${@:2}" >/dev/null 2>"$work/err"; then
        echo "FAILED  $name: $(head -c 200 "$work/err" | sed "s|$work|WORK|g")"
        return
    fi
    if [ -d "$out" ]; then
        (cd "$out" && find . -type f | LC_ALL=C sort | while read -r f; do
            echo "$(sha256sum <"$f" | cut -c1-64)  $name/${f#./}"
        done)
    else
        echo "$(sha256sum <"$out" | cut -c1-64)  $name"
    fi
}

for hf in fixtures/hf/* fixtures/meta/tiny; do
    for t in f32 f16 bf16 q8_0 auto; do
        run "hf2gguf $hf $t" "$work/o.gguf" safetensors2gguf ${dev[@]+"${dev[@]}"} --outtype "$t" \
            "$hf" "$work/o.gguf"
        for d in keep f32 bf16; do
            if [ "$d" = keep ]; then set --; else set -- --dtype "$d"; fi
            run "hf2gguf $hf $t | gguf2safetensors $d" "$work/b.safetensors" \
                gguf2safetensors "$@" "$work/o.gguf" "$work/b.safetensors"
        done
    done
    run "hf2gguf $hf --vocab-only" "$work/v.gguf" safetensors2gguf --vocab-only "$hf" "$work/v.gguf"
done

for st in fixtures/safetensors/*.safetensors fixtures/gguf/*.safetensors fixtures/safetensors/sharded; do
    run "rewrite $st" "$work/r.safetensors" safetensors-rewrite "$st" "$work/r.safetensors"
    run "rewrite $st f16" "$work/r.safetensors" safetensors-rewrite --dtype f16 --stringify-meta \
        "$st" "$work/r.safetensors"
    run "bare gguf $st" "$work/g.gguf" safetensors2gguf "$st" "$work/g.gguf"
    run "bare gguf $st | back" "$work/gb.safetensors" gguf2safetensors "$work/g.gguf" \
        "$work/gb.safetensors"
done

for g in fixtures/gguf/*.gguf; do
    run "gguf2safetensors $g" "$work/x.safetensors" gguf2safetensors "$g" "$work/x.safetensors"
done

for p in fixtures/pth/*/*.pth fixtures/hf/llama-pth/pytorch_model.bin fixtures/meta/tiny/consolidated.00.pth \
         fixtures/pth/*/meta/consolidated.00.pth; do
    run "pth $p" "$work/p.safetensors" pth2safetensors "$p" "$work/p.safetensors"
    run "pth $p bf16" "$work/p.safetensors" pth2safetensors --dtype bf16 "$p" "$work/p.safetensors"
    run "pth $p dedupe" "$work/p.safetensors" pth2safetensors --dedupe "$p" "$work/p.safetensors"
done
for s in fixtures/pth/*/sharded; do
    run "pth $s" "$work/shards" pth2safetensors "$s" "$work/shards"
done

# gguf-quantize: llama.cpp's reference GGUFs and two HF folders in one pass, every TYPE
# it can write today (a TYPE not offered prints FAILED, so one that appears shows up).
for in in fixtures/hf-ref/llama-spm-bf16.gguf fixtures/hf-ref/qwen2-f32.gguf \
          fixtures/hf/llama-q9 fixtures/hf/qwen2-k; do
    for t in F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q6_K Q4_K_M; do
        run "quantize $in $t" "$work/q.gguf" gguf-quantize ${dev[@]+"${dev[@]}"} "$in" \
            "$work/q.gguf" "$t"
    done
done
