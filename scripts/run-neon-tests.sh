#!/usr/bin/env bash
# Runs an AArch64 test binary (make check-neon) under qemu-user:
#   scripts/run-neon-tests.sh BINARY [ARGS...]
# Criterion runs each test in a child that it execs, so qemu must be the kernel's
# interpreter for AArch64 binaries, not just the program's launcher: the script registers
# qemu-aarch64 with binfmt_misc inside a private user and mount namespace (Linux >= 6.7
# gives each user namespace its own binfmt_misc), which nothing outside this process tree
# sees. The guest finds glibc in Debian's cross sysroot and Criterion's arm64 runtime in
# build/neon/sysroot (scripts/bootstrap-neon.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1
shift
SYSROOT=$PWD/build/neon/sysroot
LIBDIRS=$SYSROOT/usr/lib/aarch64-linux-gnu:$SYSROOT/lib/aarch64-linux-gnu
QEMU=$(command -v qemu-aarch64)

if [ "${LC_NEON_NS:-}" != 1 ]; then
    exec unshare --user --map-root-user --mount env LC_NEON_NS=1 "$0" "$bin" "$@"
fi
mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
# The AArch64 ELF header pattern and mask of qemu's scripts/qemu-binfmt-conf.sh; the
# kernel decodes the \x escapes. F: the interpreter is opened now, once.
magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
printf '%s' ":qemu-aarch64:M::$magic:$mask:$QEMU:F" > /proc/sys/fs/binfmt_misc/register
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu QEMU_SET_ENV="LD_LIBRARY_PATH=$LIBDIRS"
exec "$bin" "$@"
