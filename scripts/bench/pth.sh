#!/usr/bin/env bash
# make bench, .pth -> .safetensors: the Python path users run today against cp and
# $LC_BIN/pth2safetensors, on one ~1 GiB bf16 checkpoint shaped like a small llama.
#
#   LC_BIN     folder with the built tools (required; set by scripts/bench.sh)
#   PY         any python3 (used only to time children and read their peak RSS)
#   TORCH_PY   python with torch + safetensors (default build/torch-venv/bin/python;
#              make it with: python3 -m venv build/torch-venv &&
#              build/torch-venv/bin/pip install -r scripts/torch-requirements.txt)
#   LC_BENCH_LAYERS  decoder layers in the checkpoint (default 9: ~1.0 GiB)
#   LC_BENCH_REPS    runs per row, best wall time kept (default 3)
#
# Each row: wall seconds (best of LC_BENCH_REPS runs, rows taking turns, input in the
# page cache), throughput, and the peak RSS of the run's largest process. Targets (DESIGN.md):
# pth2safetensors >= 5x faster than Python, <= 1.5x cp, RSS <= 64 MiB + the largest
# non-contiguous tensor (this checkpoint has none, as torch.save of a state dict).
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${LC_BIN:?LC_BIN must name the folder with the built tools}"
PY=${PY:-python3}
TORCH_PY=${TORCH_PY:-build/torch-venv/bin/python}
LAYERS=${LC_BENCH_LAYERS:-9}
REPS=${LC_BENCH_REPS:-3}
DIR=build/bench
CKPT=$DIR/llama-bf16-L$LAYERS.pth

if ! "$TORCH_PY" -c 'import torch, safetensors.torch' 2>/dev/null; then
    echo "bench pth: SKIPPED: no torch + safetensors at TORCH_PY=$TORCH_PY" \
         "(python3 -m venv build/torch-venv && build/torch-venv/bin/pip install -r scripts/torch-requirements.txt)"
    exit 0
fi
mkdir -p "$DIR"

# The checkpoint is made once and reused: TinyLlama's widths (dim 2048, ffn 5632,
# 32 heads, 4 kv heads, vocab 32000), fewer layers, bf16, contiguous like
# model.state_dict().
if [ ! -s "$CKPT" ]; then
    echo "bench pth: writing $CKPT (once)"
    "$TORCH_PY" - "$CKPT" "$LAYERS" <<'EOF'
import collections, os, sys, torch
path, layers = sys.argv[1], int(sys.argv[2])
dim, ffn, vocab, kv = 2048, 5632, 32000, 256
g = torch.Generator().manual_seed(7)
def w(*shape):
    return (torch.randn(*shape, generator=g) * 0.02).to(torch.bfloat16)
sd = collections.OrderedDict()
sd["model.embed_tokens.weight"] = w(vocab, dim)
for i in range(layers):
    p = f"model.layers.{i}."
    sd[p + "self_attn.q_proj.weight"] = w(dim, dim)
    sd[p + "self_attn.k_proj.weight"] = w(kv, dim)
    sd[p + "self_attn.v_proj.weight"] = w(kv, dim)
    sd[p + "self_attn.o_proj.weight"] = w(dim, dim)
    sd[p + "mlp.gate_proj.weight"] = w(ffn, dim)
    sd[p + "mlp.up_proj.weight"] = w(ffn, dim)
    sd[p + "mlp.down_proj.weight"] = w(dim, ffn)
    sd[p + "input_layernorm.weight"] = torch.ones(dim, dtype=torch.bfloat16)
    sd[p + "post_attention_layernorm.weight"] = torch.ones(dim, dtype=torch.bfloat16)
sd["model.norm.weight"] = torch.ones(dim, dtype=torch.bfloat16)
sd["lm_head.weight"] = w(vocab, dim)
tmp = path + ".tmp"
torch.save(sd, tmp)
os.replace(tmp, path)
EOF
fi

# The Python path as users run it today (what safetensors' convert script does at heart).
PYPATH=$DIR/py_convert.py
cat > "$PYPATH" <<'EOF'
import sys, torch, safetensors.torch
sd = torch.load(sys.argv[1], map_location="cpu", weights_only=True)
safetensors.torch.save_file(sd, sys.argv[2], metadata={"format": "pt"})
EOF

OUT=$DIR/out.safetensors
PYOUT=$DIR/py.safetensors
CPOUT=$DIR/cp.bin
BYTES=$(stat -c %s "$CKPT")
cat "$CKPT" > /dev/null   # page cache, so every row starts alike

# run NAME OUTFILE CMD...: one timed run; appends "name, seconds, peak RSS KiB" to the rows.
run() {
    local name=$1 out=$2; shift 2
    "$PY" - "$name" "$out" "$@" <<'EOF'
import os, subprocess, sys, time
name, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
if os.path.exists(out):
    os.unlink(out)
t0 = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
dt = time.perf_counter() - t0
if status != 0:
    print(f"{name:<22} FAILED (status {status})")
    sys.exit(1)
with open(os.environ["LC_BENCH_ROWS"], "a") as f:
    f.write(f"{name}\t{dt}\t{ru.ru_maxrss}\n")   # KiB on Linux; the largest single process
EOF
}

export LC_BENCH_ROWS=$DIR/pth-rows.tsv
: > "$LC_BENCH_ROWS"
have_lc=0
[ -x "$LC_BIN/pth2safetensors" ] && have_lc=1
echo "bench pth: $CKPT, $(awk -v b="$BYTES" 'BEGIN{printf "%.2f GiB", b/2^30}'), best of $REPS, rows interleaved"
# Rows take turns, so that a neighbour's load on a shared machine hits them alike.
for _ in $(seq "$REPS"); do
    run "python torch+st" "$PYOUT" "$TORCH_PY" "$PYPATH" "$CKPT" "$PYOUT"
    run "cp" "$CPOUT" cp "$CKPT" "$CPOUT"
    rm -f "$CPOUT"
    # pth2safetensors fsyncs its output before the rename (atomic, durable); cp does not.
    run "cp + sync" "$CPOUT" sh -c 'cp "$1" "$2" && sync "$2"' sh "$CKPT" "$CPOUT"
    rm -f "$CPOUT"
    if [ $have_lc = 1 ]; then
        run "pth2safetensors" "$OUT" "$LC_BIN/pth2safetensors" -q "$CKPT" "$OUT"
        rm -f "$OUT"
        run "pth2st --no-fsync" "$OUT" "$LC_BIN/pth2safetensors" -q --no-fsync "$CKPT" "$OUT"
    fi
done
awk -F'\t' -v b="$BYTES" '
    !($1 in t) || $2 < t[$1] { t[$1] = $2 }
    $3 > r[$1] { r[$1] = $3 }
    !($1 in seen) { seen[$1] = 1; order[++n] = $1 }
    END {
        for (i = 1; i <= n; i++)
            printf "%-22s %8.3f s %7.2f GiB/s  peak RSS %8.1f MiB\n", order[i], t[order[i]],
                   b / t[order[i]] / 2^30, r[order[i]] / 1024
        if (!("pth2safetensors" in t))
            exit
        sp = t["python torch+st"] / t["pth2safetensors"]; rc = t["pth2safetensors"] / t["cp"]
        rs = t["pth2safetensors"] / t["cp + sync"]; mb = r["pth2safetensors"] / 1024
        rn = t["pth2st --no-fsync"] / t["cp"]
        printf "bench pth: %.1fx faster than Python (target >= 5x: %s); like for like (target <= 1.5x): --no-fsync %.2fx cp (%s), durable default %.2fx cp + sync (%s); durable default %.2fx plain cp; RSS %.1f MiB (target <= 64: %s)\n", \
               sp, (sp >= 5 ? "met" : "MISSED"), rn, (rn <= 1.5 ? "met" : "MISSED"), rs, (rs <= 1.5 ? "met" : "MISSED"), rc, mb, (mb <= 64 ? "met" : "MISSED")
    }' "$LC_BENCH_ROWS"
if [ $have_lc = 1 ]; then
    if cmp -s "$OUT" "$PYOUT"; then same="byte-identical to"; else same="DIFFERENT from"; fi
    echo "bench pth: pth2safetensors output is $same the Python path's"
    rm -f "$OUT"
else
    echo "pth2safetensors        skipped: $LC_BIN/pth2safetensors is not built yet"
fi
rm -f "$PYOUT"
