# scripts/bootstrap-llama.sh never uses a llama.cpp wheel built the old way (issue 17):
# the wheel's folder is keyed by the build flags, and a wheel holding AMX instructions
# (what -march=native compiled on a CPU advertising AMX) is refused by disassembly.
set -eu
S=$LC_ROOT/scripts/bootstrap-llama.sh
case "$(uname -m)" in x86_64) ;; *) echo "skip: AMX is x86-64's"; exit 0 ;; esac

# A wheel whose shared object holds one AMX instruction, and one that holds none.
printf '.text\n.globl f\nf:\n\ttilerelease\n\tret\n' > amx.s
printf '.text\n.globl f\nf:\n\tvzeroupper\n\tret\n' > plain.s
for k in amx plain; do
    mkdir -p "$k/llama_cpp/lib"
    gcc -shared -nostdlib -o "$k/llama_cpp/lib/libggml-cpu.so" "$k.s"
    (cd "$k" && python3 -m zipfile -c "../$k.whl" llama_cpp)
done
if "$S" --check-wheel amx.whl 2> err; then echo "an AMX wheel was accepted"; exit 1; fi
grep -q 'holds 1 AMX instructions' err || { cat err; exit 1; }
"$S" --check-wheel plain.whl

# The wheel's place depends on the flags: the old native build's never meets today's.
now=$("$S" --wheel-path)
old=$(CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF" "$S" --wheel-path)
case "$now" in build/wheels/????????????????/llama_cpp_python-*.whl) ;;
    *) echo "unkeyed wheel path: $now"; exit 1 ;; esac
[ "$now" != "$old" ] || { echo "the native build's wheel shares today's path"; exit 1; }
case "$("$S" --wheel-path)" in "$now") ;; *) echo "the key is not stable"; exit 1 ;; esac
