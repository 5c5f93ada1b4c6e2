#!/bin/sh
# kbuild.sh SRC OUT KDIR MODDIR [VAR=VALUE...] - build the module whose
# Kbuild is in SRC/MODDIR against the kernel headers in KDIR, into OUT,
# with the make variables given (CAD_UBSAN=y: the tests' sanitized build),
# and copy the .ko files next to OUT (build/kmod).
#
# Kbuild builds objects next to their sources, and the core is shared by
# several modules, so OUT mirrors the parts of the repository a module
# needs with one symlink per file: objects land in OUT, the sources stay
# clean, and relative #includes resolve as in the repository.
set -eu
src=$1 out=$2 kdir=$3 moddir=$4
shift 4

mirror() {  # mirror DIR PATTERN...: link SRC/DIR/<matches> into OUT/DIR
	dir=$1
	shift
	mkdir -p "$out/$dir"
	for pat in "$@"; do
		for f in "$src/$dir"/$pat; do
			if [ -e "$f" ]; then
				ln -sfn "$f" "$out/$dir/$(basename "$f")"
			fi
		done
	done
}

mirror kmod/uapi '*.h'
mirror kmod/core '*.c' '*.h' Kbuild.inc
mirror tests/core '*.c' '*.h'
rm -f "$out/tests/core/exercise.c"   # user space only
mirror "$moddir" '*.c' '*.h'
ln -sfn "$src/$moddir/Kbuild" "$out/Kbuild"

# "Skipping BTF generation" is harmless: the headers ship no vmlinux.
if ! make -s -C "$kdir" M="$out" "$@" modules >"$out/build.log" 2>&1; then
	cat "$out/build.log" >&2
	exit 1
fi
grep -v 'Skipping BTF generation' "$out/build.log" >&2 || true
cp -f "$out"/*.ko "$out/.."
