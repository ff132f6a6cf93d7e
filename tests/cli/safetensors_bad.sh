# Every file in fixtures/bad/safetensors must make model-inspect and
# safetensors-rewrite fail cleanly: exit 1, exactly one line on stderr naming the
# file and a byte offset, nothing on stdout from the rewrite, no output file and no
# temporary file left behind.
set -u
fail=0
n=0
for f in "$LC_ROOT"/fixtures/bad/safetensors/*.bin; do
    n=$((n + 1))
    model-inspect "$f" >out.txt 2>err.txt
    rc=$?
    if [ $rc -ne 1 ] || [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -qF "$f: " err.txt ||
        ! grep -q "@ 0x[0-9a-f]*: " err.txt || [ -s out.txt ]; then
        echo "model-inspect $f: rc=$rc stderr=$(cat err.txt)"
        fail=1
    fi
    safetensors-rewrite -q "$f" out.safetensors >out.txt 2>err.txt
    rc=$?
    if [ $rc -ne 1 ] || [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -qF "$f: " err.txt ||
        ! grep -q "@ 0x[0-9a-f]*: " err.txt || [ -s out.txt ] || [ -e out.safetensors ] ||
        ls -A | grep -q "^\.out\.safetensors\.lc-.*\.tmp$"; then
        echo "safetensors-rewrite $f: rc=$rc stderr=$(cat err.txt) files=$(ls)"
        fail=1
    fi
done
[ $n -ge 40 ] || { echo "only $n bad files found"; fail=1; }
# Usage errors are 2, help and version 0.
model-inspect >/dev/null 2>&1; [ $? -eq 2 ] || { echo "model-inspect without FILE"; fail=1; }
safetensors-rewrite a >/dev/null 2>&1; [ $? -eq 2 ] || { echo "rewrite with one arg"; fail=1; }
safetensors-rewrite --bogus a b >/dev/null 2>&1; [ $? -eq 2 ] || { echo "unknown option"; fail=1; }
safetensors-rewrite --dtype q4 a b >/dev/null 2>&1; [ $? -eq 2 ] || { echo "bad --dtype"; fail=1; }
model-inspect --help | grep -q "usage: model-inspect" || { echo "model-inspect --help"; fail=1; }
safetensors-rewrite --version | grep -q "libconvert" || { echo "rewrite --version"; fail=1; }
# A missing input names the file; no output appears.
safetensors-rewrite nothere.safetensors out.safetensors 2>err.txt
[ $? -eq 1 ] && grep -q "nothere.safetensors: cannot open" err.txt && [ ! -e out.safetensors ] ||
    { echo "missing input: $(cat err.txt)"; fail=1; }
exit $fail
