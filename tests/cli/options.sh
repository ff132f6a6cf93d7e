# Every tool's command line, from its option table: --help exits 0 and has a line for
# each option the tool takes, and each of them is accepted (OPT [ARG] --help exits 0);
# the common flags a tool does not take are refused; -V/--version print
# "TOOL (libconvert) VERSION"; a bogus option and a missing operand exit 2 with the
# usage on stderr.
set -u
fail=0
no() { echo "$*"; fail=1; }
version=$(sed -n 's/.*LC_VERSION "\(.*\)"/\1/p' "$LC_ROOT/libconvert/version.h")
[ -n "$version" ] || no "no LC_VERSION in libconvert/version.h"

writer="-t=2 --threads=2 -q --quiet --no-fsync"
common="-h --help -V --version"
split="--split-max-size=2G --split-max-tensors=64 --no-tensor-first-split --part=1/2 --skip-existing"
# TOOL: its options; OPT=ARG for one that takes an argument (a valid one).
declare -A takes=(
    [model-inspect]="--json -q --quiet $common"
    [pth2safetensors]="--key=model --dedupe --dtype=f16 --list --scan $writer $common"
    [safetensors-rewrite]="--dtype=bf16 --stringify-meta $writer $common"
    [safetensors2gguf]="--outtype=q8_0 --vocab-only --dry-run --metadata=a=str:b --pre=x --device=cpu $split $writer $common"
    [gguf2safetensors]="--dtype=f32 $writer $common"
    [gguf-quantize]="--pure --leave-output-tensor --output-tensor-type=q8_0 --token-embedding-type=f16 --tensor-type=a=q8_0 --allow-requantize --override-kv=a=str:b --imatrix=x --include-weights=a --exclude-weights=b --dry-run --json --device=cpu $split $writer $common"
    [gguf-split]="--split --merge --dry-run $split $writer $common"
    [model-verify]="--tokens=1,2 --text=x --file=f --max-tokens=8 --layers --imatrix=x --report=r.html --json $writer $common"
    [model-imatrix]="-f=x --file=x -c=64 --ctx=64 --chunks=2 --process-output --parse-special --show-statistics --output-format=dat --json $writer $common"
)
declare -A refuses=(
    [model-inspect]="-t=2 --threads=2 --no-fsync"
    [pth2safetensors]="--json"
    [safetensors-rewrite]="--json --key=x"
    [safetensors2gguf]="--json --dtype=f16"
    [gguf2safetensors]="--json --outtype=f16"
    [gguf-quantize]="--outtype=q8_0 --dtype=f16 --prune-layers=1"
    [gguf-split]="--json --outtype=f16 --dtype=f16"
    [model-verify]="--outtype=f16 --dtype=f16 --key=x"
    [model-imatrix]="--outtype=f16 --dtype=f16 --tokens=1"
)

# has_line OPT: help.txt has OPT's line ("  -t, --threads N  ..." or "      --json  ...").
has_line() {
    case $1 in
        --*) grep -Eq -- "^  (-[a-zA-Z], | {4})$1( |\$)" help.txt ;;
        *)   grep -Eq -- "^  $1, --" help.txt ;;
    esac
}

for tool in "${!takes[@]}"; do
    "$tool" --help >help.txt 2>err.txt
    [ $? -eq 0 ] && [ ! -s err.txt ] || no "$tool --help: not exit 0 with nothing on stderr"
    grep -q "^usage: $tool " help.txt || no "$tool --help: no usage line"
    for o in ${takes[$tool]}; do
        opt=${o%%=*}
        if [ "$opt" = "$o" ]; then set -- "$opt"; else set -- "$opt" "${o#*=}"; fi
        has_line "$opt" || no "$tool --help has no line for $opt"
        case $opt in -V | --version | -h | --help) continue ;; esac
        "$tool" "$@" --help >/dev/null 2>err.txt || no "$tool refuses $*: $(head -1 err.txt)"
    done
    for o in ${refuses[$tool]}; do
        opt=${o%%=*}
        if [ "$opt" = "$o" ]; then set -- "$opt"; else set -- "$opt" "${o#*=}"; fi
        has_line "$opt" && no "$tool --help offers $opt"
        "$tool" "$@" a b >/dev/null 2>&1
        [ $? -eq 2 ] || no "$tool accepts $*"
    done
    for v in -V --version; do
        out=$("$tool" $v)
        [ $? -eq 0 ] && [ "$out" = "$tool (libconvert) $version" ] || no "$tool $v: '$out'"
    done
    "$tool" --bogus a b >out.txt 2>err.txt
    [ $? -eq 2 ] && [ ! -s out.txt ] && grep -q "^usage: $tool " err.txt || no "$tool --bogus"
    "$tool" >out.txt 2>err.txt
    [ $? -eq 2 ] && [ ! -s out.txt ] && grep -q "^usage: $tool " err.txt || no "$tool, no operand"
    "$tool" -q >/dev/null 2>&1
    [ $? -eq 2 ] || no "$tool -q, no operand"
done
[ ${#takes[@]} -eq "$(ls "$LC_ROOT"/cmd/*.c | wc -l)" ] || no "a tool in cmd/ is not tested here"
exit $fail
