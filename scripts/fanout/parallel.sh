#!/usr/bin/env bash
# GNU parallel recipes (Debian's `parallel`): one model into many types, or one model's
# parts on many cores or machines. Every job writes whole files atomically and takes
# --skip-existing, so running the same line again after a failure (a node lost, a job
# killed) redoes only what is missing; a part left by another run is refused, not kept.
#
#   parallel.sh types MODEL OUTDIR TYPE...
#       gguf-quantize MODEL OUTDIR/NAME-TYPE.gguf TYPE, one job per TYPE (NAME: MODEL's
#       file or folder name without .gguf); MODEL is a GGUF or a Hugging Face folder.
#   parallel.sh parts TOOL ARGS...
#       a split run (gguf-quantize or safetensors2gguf with --split-max-size or
#       --split-max-tensors), one job per part: TOOL ARGS... --part K/N --skip-existing,
#       each byte-identical to part K of the whole run. N comes from plan-parts.sh.
#       llama.cpp reads the parts as they are; gguf-split --merge makes one file of them.
#
# Environment: JOBS (jobs at once; default: one per core), THREADS (-t of each job;
# default: cores / JOBS, at least 1), SSHLOGINFILE (a file of hosts, one per line, as
# parallel's --sshloginfile reads it: the jobs run there over ssh, in this folder's path,
# so every host must see MODEL and the outputs at the same paths, a shared file system;
# ":" in the file is this machine), PARALLEL_OPTS (more options for parallel).
#
#   JOBS=4 scripts/fanout/parallel.sh types m-bf16.gguf out Q8_0 Q6_K Q5_K_M Q4_K_M
#   SSHLOGINFILE=hosts scripts/fanout/parallel.sh parts gguf-quantize \
#       --split-max-size 4G /shared/m-bf16.gguf /shared/out/m-Q4_K_M.gguf Q4_K_M
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '2,/^set/{/^set/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1
shift
cores=$(nproc)
JOBS=${JOBS:-$cores}
THREADS=${THREADS:-$(( cores / JOBS > 0 ? cores / JOBS : 1 ))}
opts=(--halt never -j "$JOBS")
[ -n "${SSHLOGINFILE:-}" ] && opts+=(--sshloginfile "$SSHLOGINFILE" --workdir .)
# shellcheck disable=SC2206  # a list of options
[ -n "${PARALLEL_OPTS:-}" ] && opts+=($PARALLEL_OPTS)

case $mode in
types)
    [ $# -ge 3 ] || usage
    model=$1 outdir=$2
    shift 2
    name=$(basename "${model%/}")
    name=${name%.gguf}
    mkdir -p "$outdir"
    exec parallel "${opts[@]}" gguf-quantize -q -t "$THREADS" --skip-existing \
        "$model" "$outdir/$name-{}.gguf" {} ::: "$@"
    ;;
parts)
    n=$("$here/plan-parts.sh" "$@")
    # --quote: ARGS are passed to each job as they are, spaces and all.
    exec parallel "${opts[@]}" --quote "$@" -q -t "$THREADS" --skip-existing --part {}/"$n" \
        ::: $(seq 1 "$n")
    ;;
*) usage ;;
esac
