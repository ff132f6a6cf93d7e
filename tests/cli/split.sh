# Split output on the command line: gguf-split, and the writers' --split-max-*, --part K/N
# and --skip-existing. Usage errors exit 2; a plan --part does not fit, a merge that cannot
# be done, a --skip-existing part that is truncated or another run's: one line, exit 1,
# nothing written (no part, no temporary, what was there left as it was).
set -u
fail=0
ref=$LC_ROOT/fixtures/hf-ref
hf=$LC_ROOT/fixtures/hf
no() { echo "$*"; fail=1; }
# expect STATUS WHAT CMD...: the exit status, one line on stderr when not 0.
expect() {
    local want=$1 what=$2
    shift 2
    "$@" >out.txt 2>err.txt
    local got=$?
    [ "$got" -eq "$want" ] || no "$what: exit $got, want $want: $(head -3 err.txt)"
    if [ "$want" -eq 1 ]; then
        [ "$(wc -l <err.txt)" -eq 1 ] || no "$what: not one line: $(cat err.txt)"
    fi
}
# snapshot DIR, then unchanged DIR WHAT: no file (part or temporary) came or went in DIR.
declare -A before
snapshot() { before[$1]=$(ls -A "$1"); }
unchanged() { [ "$(ls -A "$1")" = "${before[$1]}" ] || no "$2: $(ls -A "$1")"; }

# ---- usage: exit 2 ----
for bad in "--part 0/3" "--part 4/3" "--part 1/0" "--part x/3" "--part 1/70000" \
           "--split-max-size 1.5G" "--split-max-size 100" "--split-max-size 0M" \
           "--split-max-tensors 0" "--split-max-tensors many" \
           "--split-max-size 1G --split-max-tensors 3"; do
    # shellcheck disable=SC2086
    expect 2 "gguf-split $bad" gguf-split $bad "$ref/llama-spm-f16.gguf" u
    # shellcheck disable=SC2086
    expect 2 "gguf-quantize $bad" gguf-quantize $bad "$ref/llama-spm-f16.gguf" u.gguf Q8_0
done
expect 2 "--part without a plan" safetensors2gguf -q --part 1/2 "$hf/llama-spm" u.gguf
expect 2 "--part without a plan" gguf-quantize -q --part 1/2 "$ref/llama-spm-f16.gguf" u.gguf Q8_0
expect 2 "--keep-split and --split-max-tensors" gguf-quantize --keep-split --split-max-tensors 4 \
    "$ref/llama-spm-f16.gguf" u.gguf Q8_0
expect 2 "--merge with split options" gguf-split --merge --split-max-tensors 4 x y
ls u* >/dev/null 2>&1 && no "a usage error wrote $(ls u*)"

# ---- what works ----
expect 0 "split" gguf-split -q --split-max-tensors 10 "$ref/llama-spm-f16.gguf" s
[ "$(ls s-0000?-of-00004.gguf | wc -l)" -eq 4 ] || no "split: $(ls)"
grep -q "^split 00004: n_tensors = 9, total_size = 0M$" out.txt || no "plan: $(cat out.txt)"
expect 0 "merge" gguf-split -q --merge s-00001-of-00004.gguf merged.gguf
expect 0 "split of the merged file" gguf-split -q --split-max-tensors 10 merged.gguf s2
for k in 1 2 3 4; do cmp -s "s-0000$k-of-00004.gguf" "s2-0000$k-of-00004.gguf" || no "resplit part $k"; done
expect 0 "dry run" gguf-split --dry-run --split-max-tensors 10 "$ref/llama-spm-f16.gguf" dry
ls dry* >/dev/null 2>&1 && no "--dry-run wrote $(ls dry*)"

safetensors2gguf -q --outtype f16 "$hf/llama-spm" one.gguf || no "convert"
expect 0 "writer split" safetensors2gguf -q --outtype f16 --split-max-tensors 10 "$hf/llama-spm" w.gguf
for k in 1 2 3 4; do cmp -s "s-0000$k-of-00004.gguf" "w-0000$k-of-00004.gguf" || no "writer part $k"; done
mkdir p
for k in 3 1; do
    expect 0 "part $k" gguf-quantize -q --split-max-tensors 10 --part $k/4 one.gguf p/q.gguf Q8_0
done
[ "$(ls p)" = "$(printf 'q-00001-of-00004.gguf\nq-00003-of-00004.gguf')" ] || no "parts 1, 3: $(ls p)"

# ---- bad input: exit 1, one line, nothing written ----
snapshot p
expect 1 "--part K/N, N not the plan's" gguf-quantize -q --split-max-tensors 10 --part 2/5 one.gguf p/q.gguf Q8_0
grep -q "the split plan gives 4 parts" err.txt || no "mismatch message: $(cat err.txt)"
unchanged p "a part count mismatch"
# A safetensors file of one 2 MB tensor: alone past 1M, with no tensor before it.
hdr='{"a":{"dtype":"U8","shape":[2000000],"data_offsets":[0,2000000]}}'
{ printf "\\x$(printf %02x ${#hdr})\\0\\0\\0\\0\\0\\0\\0%s" "$hdr"; head -c 2000000 /dev/zero; } > big.safetensors
expect 1 "a first tensor larger than --split-max-size" safetensors2gguf -q --split-max-size 1M \
    big.safetensors p/big.gguf
grep -q "alone pass --split-max-size" err.txt || no "too big: $(cat err.txt)"
unchanged p "a tensor past the size"
head -c 20000 p/q-00003-of-00004.gguf > cut && mv cut p/q-00003-of-00004.gguf
snapshot p
expect 1 "--skip-existing, truncated" gguf-quantize -q --split-max-tensors 10 --skip-existing one.gguf p/q.gguf Q8_0
grep -q "truncated (20000 of the" err.txt || no "truncated message: $(cat err.txt)"
unchanged p "a truncated part"
[ "$(wc -c <p/q-00003-of-00004.gguf)" -eq 20000 ] || no "the truncated part was touched"
cp s-00002-of-00004.gguf p/q-00003-of-00004.gguf
expect 1 "--skip-existing, another split's" gguf-quantize -q --split-max-tensors 10 --skip-existing --part 3/4 one.gguf p/q.gguf Q8_0
grep -q "split.no: .*belongs to another split (its split.no is 1, this run's 2)" err.txt || no "foreign message: $(cat err.txt)"
gguf-quantize -q --split-max-tensors 10 --part 3/4 one.gguf o.gguf Q4_0 && cp o-00003-of-00004.gguf p/q-00003-of-00004.gguf
expect 1 "--skip-existing, another run's" gguf-quantize -q --split-max-tensors 10 --skip-existing --part 3/4 one.gguf p/q.gguf Q8_0
grep -q "another run's part" err.txt || no "another run's message: $(cat err.txt)"
unchanged p "a foreign part"
rm p/q-00003-of-00004.gguf
expect 0 "--skip-existing completes the set" gguf-quantize --split-max-tensors 10 --skip-existing one.gguf p/q.gguf Q8_0
grep -q "(1 already there: kept)" err.txt || no "kept: $(cat err.txt)"
gguf-quantize -q --split-max-tensors 10 one.gguf all.gguf Q8_0
for k in 1 2 3 4; do cmp -s "all-0000$k-of-00004.gguf" "p/q-0000$k-of-00004.gguf" || no "set part $k"; done
expect 0 "--skip-existing, all there" gguf-quantize --split-max-tensors 10 --skip-existing one.gguf p/q.gguf Q8_0
grep -q "^kept (already there) " err.txt || no "all kept: $(cat err.txt)"

snapshot .
expect 1 "merge onto an existing file" gguf-split -q --merge s-00001-of-00004.gguf merged.gguf
expect 1 "merge of a file not split" gguf-split -q --merge one.gguf m2.gguf
expect 1 "merge from a later part" gguf-split -q --merge s-00002-of-00004.gguf m3.gguf
mv s-00003-of-00004.gguf hidden
expect 1 "merge with a part missing" gguf-split -q --merge s-00001-of-00004.gguf m4.gguf
mv hidden s-00003-of-00004.gguf
unchanged . "a failed merge"
exit $fail
