#!/usr/bin/env bash
# Prints "sha256(stdout) sha256(stderr) exit  case" for what the tools print (the plan,
# the summary line, --json, model-verify's report) from the bundled fixtures: the
# companion of output-hashes.sh, which hashes the files written. A refactor of the
# printing must not change one line:
#   LC_BIN=build/bin scripts/print-hashes.sh > before.txt   (on the old commit)
#   LC_BIN=build/bin scripts/print-hashes.sh | diff before.txt -
# Timings are masked ("1.2 s", "seconds":...), and the scratch folder is WORK.
set -uo pipefail
: "${LC_BIN:?set LC_BIN to the folder of the tools}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mask() {
    sed -E -e "s|$work|WORK|g" -e 's/[0-9]+\.[0-9]+ s\b/T s/g' \
        -e 's/"(seconds|wall_s|secs|elapsed)":[0-9.e+-]+/"\1":T/g' \
        -e 's/(in|took) [0-9]+\.[0-9]+ ?(s|ms)\b/\1 T/g'
}

# run NAME TOOL ARGS...: the tool's stdout and stderr, hashed after masking.
run() {
    local name=$1
    shift
    "$LC_BIN/$1" "${@:2}" >"$work/out" 2>"$work/err" </dev/null
    local rc=$?
    echo "$(mask <"$work/out" | sha256sum | cut -c1-16) $(mask <"$work/err" | sha256sum | cut -c1-16) $rc  $name"
    [ -n "${LC_PRINT_SHOW:-}" ] && { mask <"$work/out"; mask <"$work/err"; }
}

for in in fixtures/hf-ref/llama-spm-bf16.gguf fixtures/hf-ref/qwen2-f32.gguf \
          fixtures/hf/llama-q9 fixtures/hf/qwen2-k; do
    for t in F16 Q8_0 Q4_K_M Q6_K; do
        for mode in "" --json --dry-run "--dry-run --json"; do
            run "quantize $in $t $mode" gguf-quantize --no-fsync -t 2 $mode "$in" \
                "$work/q.gguf" "$t"
            run "quantize -q $in $t $mode" gguf-quantize -q --no-fsync -t 2 $mode "$in" \
                "$work/q.gguf" "$t"
        done
    done
    run "quantize $in split" gguf-quantize --no-fsync --split-max-tensors 7 "$in" \
        "$work/s.gguf" Q8_0
    run "quantize $in split json" gguf-quantize --no-fsync --json --split-max-tensors 7 \
        "$in" "$work/s.gguf" Q8_0
    run "quantize $in split dry" gguf-quantize --dry-run --split-max-tensors 7 \
        "$in" "$work/s.gguf" Q8_0
    run "quantize $in part" gguf-quantize --no-fsync --split-max-tensors 10000 --no-tensor-first-split --part 2/2 \
        "$in" "$work/p.gguf" Q8_0
    run "quantize $in pure tt" gguf-quantize --dry-run --pure --tensor-type 'ffn=q5_0' \
        --output-tensor-type q8_0 "$in" "$work/s.gguf" Q4_0
done
run "quantize bad type" gguf-quantize fixtures/hf-ref/qwen2-f32.gguf "$work/x.gguf" NOPE
run "quantize requant" gguf-quantize fixtures/hf-ref/llama-spm-q8_0.gguf "$work/x.gguf" Q4_0
LC_BIN=$LC_BIN "$LC_BIN/gguf-quantize" -q --no-fsync fixtures/hf-ref/qwen2-f32.gguf \
    "$work/ks.gguf" F16 >/dev/null 2>&1
"$LC_BIN/gguf-split" -q --split-max-tensors 9 "$work/ks.gguf" "$work/ks" >/dev/null 2>&1
run "quantize keep-split" gguf-quantize --no-fsync --keep-split \
    "$work/ks-00001-of-00006.gguf" "$work/kq.gguf" Q4_0
run "quantize keep-split json" gguf-quantize --no-fsync --json --keep-split \
    "$work/ks-00001-of-00006.gguf" "$work/kq.gguf" Q4_0
run "quantize keep-split dry" gguf-quantize --dry-run --keep-split \
    "$work/ks-00001-of-00006.gguf" "$work/kq.gguf" Q4_0

for hf in fixtures/hf/* fixtures/meta/tiny; do
    for t in auto q8_0 q4_k_m; do
        run "hf2gguf dry $hf $t" safetensors2gguf --dry-run --outtype "$t" "$hf" "$work/o.gguf"
        run "hf2gguf dry split $hf $t" safetensors2gguf --dry-run --split-max-tensors 5 \
            --outtype "$t" "$hf" "$work/o.gguf"
    done
    run "hf2gguf $hf" safetensors2gguf --no-fsync "$hf" "$work/o.gguf"
    for f in "" --json; do
        run "verify $hf $f" model-verify -t 2 $f --max-tokens 16 "$hf" "$work/o.gguf"
    done
done
run "verify layers" model-verify -t 2 --layers --max-tokens 8 fixtures/hf/llama-spm \
    fixtures/hf-ref/llama-spm-q8_0.gguf
run "verify layers json" model-verify -t 2 --json --layers --max-tokens 8 fixtures/hf/llama-spm \
    fixtures/hf-ref/llama-spm-q8_0.gguf
run "verify bad" model-verify -t 2 --max-tokens 8 fixtures/hf/llama-spm \
    fixtures/hf-ref/qwen2-f32.gguf
run "verify bad json" model-verify -t 2 --json --max-tokens 8 fixtures/hf/llama-spm \
    fixtures/hf-ref/qwen2-f32.gguf

# gguf-split: the plan (stdout) and the summary line (stderr), split and merge, dry or not.
for g in fixtures/hf-ref/qwen2-f32.gguf fixtures/hf-ref/llama-spm-q8_0.gguf; do
    for opt in "--split-max-tensors 9" "--split-max-size 1M" "--split-max-tensors 20 --no-tensor-first-split"; do
        for d in "" --dry-run -q; do
            rm -f "$work"/sp-*
            run "split $g $opt $d" gguf-split $d $opt "$g" "$work/sp"
        done
    done
    rm -f "$work"/sp-*
    run "split $g part" gguf-split --split-max-tensors 9 --part 2/6 "$g" "$work/sp"
    run "split $g skip" gguf-split --split-max-tensors 9 --skip-existing "$g" "$work/sp"
    rm -f "$work"/sp-* "$work/m.gguf"
    "$LC_BIN/gguf-split" -q --split-max-tensors 9 "$g" "$work/sp" >/dev/null 2>&1
    run "merge $g dry" gguf-split --merge --dry-run "$work/sp-00001-of-00006.gguf" "$work/m.gguf"
    run "merge $g" gguf-split --merge "$work/sp-00001-of-00006.gguf" "$work/m.gguf"
    run "merge $g again" gguf-split --merge "$work/sp-00001-of-00006.gguf" "$work/m.gguf"
done

# model-inspect: the report (text and --json) of every fixture, the refused ones too.
for f in fixtures/gguf/* fixtures/safetensors/* fixtures/hf-ref/*.gguf fixtures/bad/*/* \
         fixtures/pth/*/*.pth; do
    for j in "" --json; do
        run "inspect $f $j" model-inspect -q $j "$f"
    done
done

# pth2safetensors --list and --scan of every checkpoint fixture, the hostile ones too.
for p in fixtures/pth/*/*.pth fixtures/pth/*/sharded fixtures/hf/llama-pth/pytorch_model.bin \
         fixtures/bad/pickle/* fixtures/bad/pth/*; do
    for m in --list --scan; do
        run "pth $m $p" pth2safetensors -q $m "$p"
    done
done
