#!/usr/bin/env bash
# A Slurm job array, one task per job: a model's parts, or a model's types.
#
#   N=$(scripts/fanout/plan-parts.sh gguf-quantize --split-max-size 4G MODEL OUT TYPE)
#   sbatch --array=1-$N scripts/fanout/slurm-array.sh parts $N \
#       gguf-quantize --split-max-size 4G MODEL OUT TYPE
#       task K writes part K of N (TOOL ARGS... --part K/N --skip-existing)
#   sbatch --array=1-4 scripts/fanout/slurm-array.sh types MODEL OUTDIR Q8_0 Q6_K Q5_K_M Q4_K_M
#       task K writes OUTDIR/NAME-TYPE.gguf for the K-th TYPE
#
# N is given, not read from the array's size, so that resubmitting only the tasks that
# failed (sbatch --array=3,7 ...) still writes part 3 of N; resubmitting the whole array
# redoes only the files that are missing (--skip-existing). Every node must see MODEL
# and the outputs at the same paths. Each task uses the CPUs Slurm gives it.
#SBATCH --job-name=libconvert
#SBATCH --cpus-per-task=8
#SBATCH --mem=1G
#SBATCH --output=libconvert-%A_%a.log
set -euo pipefail
: "${SLURM_ARRAY_TASK_ID:?not a Slurm array task (sbatch --array=1-N $0 ...)}"
k=$SLURM_ARRAY_TASK_ID
threads=${SLURM_CPUS_PER_TASK:-0}
case ${1:-} in
parts)
    [ $# -ge 4 ] || { echo "usage: $0 parts N TOOL ARGS..." >&2; exit 2; }
    n=$2
    shift 2
    exec "$@" -q -t "$threads" --skip-existing --part "$k/$n"
    ;;
types)
    [ $# -ge 4 ] || { echo "usage: $0 types MODEL OUTDIR TYPE..." >&2; exit 2; }
    model=$2 outdir=$3
    shift 3
    [ "$k" -ge 1 ] && [ "$k" -le $# ] || { echo "$0: task $k, but $# types" >&2; exit 2; }
    type=${!k}
    name=$(basename "${model%/}")
    name=${name%.gguf}
    mkdir -p "$outdir"
    exec gguf-quantize -q -t "$threads" --skip-existing "$model" "$outdir/$name-$type.gguf" "$type"
    ;;
*) echo "usage: $0 parts N TOOL ARGS... | types MODEL OUTDIR TYPE..." >&2; exit 2 ;;
esac
