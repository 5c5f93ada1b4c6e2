#!/bin/sh
# build-kernel.sh [OUT] - build the sanitised test kernel (KASAN, KFENCE,
# lockdep, DEBUG_ATOMIC_SLEEP, ...: the settings in ./config beside this
# script) from Debian's linux-source-6.1 (`make deps`), in OUT (default
# build/sanitised).  Prints the two paths the kernel tests take:
#
#   CAD_TEST_KERNEL=OUT/bzImage
#   CAD_TEST_KDIR=OUT/linux-source-6.1   (a built tree: make -C it M=... modules)
#
# Cached: nothing is rebuilt when OUT/bzImage exists and was built from the
# same settings (their hash is in OUT/config.sha256).  The first build takes
# about half an hour on two cores (docs/testing.md); it runs niced, -j2
# unless JOBS says otherwise.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-build/sanitised}" && cd "${1:-build/sanitised}" && pwd)
tarball=/usr/src/linux-source-6.1.tar.xz
tree=$out/linux-source-6.1
jobs=${JOBS:-2}

hash=$(cat "$here/config" "$0" | sha256sum | cut -d' ' -f1)
if [ -f "$out/bzImage" ] && [ "$(cat "$out/config.sha256" 2>/dev/null)" = "$hash" ]; then
	echo "CAD_TEST_KERNEL=$out/bzImage"
	echo "CAD_TEST_KDIR=$tree"
	exit 0
fi
[ -f "$tarball" ] || { echo "$tarball is missing: run 'make deps'" >&2; exit 1; }
rm -f "$out/bzImage" "$out/config.sha256"
if [ ! -f "$tree/Makefile" ]; then
	echo "unpacking $tarball into $out" >&2
	tar -xJf "$tarball" -C "$out"
fi

start=$(date +%s)
cd "$tree"
make -s tinyconfig >&2
# Each NAME=VALUE of ./config through scripts/config; olddefconfig then
# resolves what they depend on and select.
grep -v '^[[:space:]]*\(#\|$\)' "$here/config" | while IFS='=' read -r name value; do
	case $value in
	y) scripts/config --enable "$name" ;;
	n) scripts/config --disable "$name" ;;
	*) scripts/config --set-val "$name" "$value" ;;
	esac
done
make -s olddefconfig >&2
# A setting olddefconfig dropped (a dependency missing) is an error here,
# not a kernel without the check.  MMU_NOTIFIER: selected by X86_SGX.
bad=
for line in $(grep -v '^[[:space:]]*\(#\|$\)' "$here/config") MMU_NOTIFIER=y; do
	name=${line%%=*} value=${line#*=}
	case $value in
	n) grep -q "^CONFIG_$name=" .config && bad="$bad $name(=$(grep "^CONFIG_$name=" .config | cut -d= -f2), wanted n)" ;;
	*) grep -qx "CONFIG_$name=$value" .config || bad="$bad $name(wanted $value)" ;;
	esac
done
if [ -n "$bad" ]; then
	echo "build-kernel.sh: olddefconfig did not keep:$bad" >&2
	exit 1
fi
echo "building the sanitised kernel in $tree (nice -n 15, -j$jobs)" >&2
nice -n 15 make -j"$jobs" -s bzImage modules >&2
cp arch/x86/boot/bzImage "$out/bzImage"
echo "$hash" > "$out/config.sha256"
echo "built in $(( $(date +%s) - start )) s" >&2
echo "CAD_TEST_KERNEL=$out/bzImage"
echo "CAD_TEST_KDIR=$tree"
