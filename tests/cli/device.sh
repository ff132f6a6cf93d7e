# --device on gguf-quantize and safetensors2gguf: "cpu" is the default and changes
# nothing; a malformed DEV is a usage error (exit 2); where there is no CUDA device
# (no GPU, no driver, the toolkit's stub library, an index past the last device, no
# room for the buffers, a build without the back end) the answer is one line starting
# "TOOL: no CUDA device" or naming the device memory, exit 1, and no OUT or temporary.
# In a CUDA=1 build, LC_CUDA_EMULATE=1 runs the CUDA back end on the CPU: its files must
# be the CPU's, byte for byte. (A real GPU: make check-cuda.)
set -u
fail=0
hf=$LC_ROOT/fixtures/hf
no() { echo "$*"; fail=1; }
check() { [ "$1" -eq "$2" ] || no "$3: exit $1, want $2"; }
nothing_left() { ls -A | grep -q "out.gguf" && no "$1 left $(ls -A | grep out.gguf)"; }

# fails TOOL ARGS...: exit 1, one line on stderr that starts "TOOL: no CUDA device" or
# says the device memory is short, no output.
fails() {
    local tool=$1
    "$@" >out.txt 2>err.txt
    check $? 1 "$*"
    [ "$(wc -l <err.txt)" -eq 1 ] || no "$*: not one line: $(cat err.txt)"
    grep -Eq "^$tool: (no CUDA device: |not enough CUDA device memory)" err.txt ||
        no "$*: $(cat err.txt)"
    [ -s out.txt ] && no "$*: printed $(cat out.txt)"
    nothing_left "$*"
}

gguf-quantize -q "$hf/qwen2-k" cpu.gguf Q4_K_M; check $? 0 "cpu"
gguf-quantize -q --device cpu "$hf/qwen2-k" dev.gguf Q4_K_M; check $? 0 "--device cpu"
cmp -s cpu.gguf dev.gguf || no "--device cpu changed the file"
rm -f dev.gguf

for dev in gpu cuda: cuda:x cuda:256 CUDA ""; do
    gguf-quantize --device "$dev" "$hf/qwen2-k" out.gguf Q4_K_M 2>err.txt
    check $? 2 "gguf-quantize --device '$dev'"
    safetensors2gguf --device "$dev" "$hf/qwen2-k" out.gguf 2>err.txt
    check $? 2 "safetensors2gguf --device '$dev'"
    nothing_left "--device '$dev'"
done
safetensors2gguf --device cuda a.safetensors out.gguf 2>/dev/null; check $? 2 "--device, bare file"

unset LC_CUDA_EMULATE LC_CUDA_EMULATE_MIB LC_CUDA_LIBRARY
if gguf-quantize -q --device cuda "$hf/qwen2-k" gpu.gguf Q4_K_M 2>err.txt; then
    echo "a CUDA device is here ($(head -c 100 err.txt)): make check-cuda tests it"
    cmp -s cpu.gguf gpu.gguf || no "the CUDA device wrote other bytes than the CPU"
    rm -f gpu.gguf
else
    fails gguf-quantize --device cuda "$hf/qwen2-k" out.gguf Q4_K_M
    fails gguf-quantize --device cuda:3 "$hf/qwen2-k" out.gguf Q4_K_M
    fails safetensors2gguf --device cuda --outtype q8_0 "$hf/qwen2-k" out.gguf
    fails safetensors2gguf --device cuda:1 --outtype q4_k_m "$hf/qwen2-k" out.gguf
    fails gguf-quantize --device cuda --dry-run "$hf/qwen2-k" out.gguf Q4_K_M
fi

if grep -q "has no CUDA back end" err.txt 2>/dev/null; then
    echo "device: this build has no CUDA back end: the CUDA=1 cases are skipped"
    exit $fail
fi

# A CUDA=1 build. The driver library replaced by the toolkit's stub: found, loaded,
# every entry point resolved, and cuInit refuses.
stub=${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so
if [ -e "$stub" ]; then
    LC_CUDA_LIBRARY=$stub fails gguf-quantize --device cuda "$hf/qwen2-k" out.gguf Q4_K_M
    grep -q "stub library" err.txt || no "stub: $(cat err.txt)"
fi
LC_CUDA_LIBRARY=/nonexistent/libcuda.so.1 fails gguf-quantize --device cuda "$hf/qwen2-k" \
    out.gguf Q4_K_M
grep -q "driver is not installed" err.txt || no "no driver: $(cat err.txt)"

# The CUDA back end on the CPU: every file the CPU's.
export LC_CUDA_EMULATE=1
LC_CUDA_EMULATE_MIB=8 fails gguf-quantize --device cuda "$hf/qwen2-k" out.gguf Q4_K_M
LC_CUDA_EMULATE_MIB=8 fails safetensors2gguf --device cuda --outtype bf16 "$hf/qwen2" out.gguf
fails gguf-quantize --device cuda:1 "$hf/qwen2-k" out.gguf Q4_K_M
for t in Q4_K_M Q8_0 Q5_1 Q3_K_S BF16; do
    gguf-quantize -q "$hf/qwen2-k" cpu.gguf $t; check $? 0 "cpu $t"
    gguf-quantize --device cuda "$hf/qwen2-k" dev.gguf $t 2>sum.txt; check $? 0 "emulated $t"
    cmp -s cpu.gguf dev.gguf || no "emulated CUDA $t: other bytes than the CPU"
    grep -q "on cuda:0 emulated" sum.txt || no "summary lacks the device: $(cat sum.txt)"
done
for o in q8_0 f16 q4_k_m; do
    safetensors2gguf -q --outtype $o "$hf/llama-bpe" cpu.gguf; check $? 0 "cpu $o"
    safetensors2gguf -q --device cuda --outtype $o "$hf/llama-bpe" dev.gguf
    check $? 0 "emulated $o"
    cmp -s cpu.gguf dev.gguf || no "emulated CUDA --outtype $o: other bytes than the CPU"
done
exit $fail
