#!/bin/sh
# Prints the newest kernel version for which both the image
# (/boot/vmlinuz-VER, booted by the qemu harness) and the headers
# (/usr/src/linux-headers-VER, which build the modules) are installed.
# `make deps` installs such a pair (linux-image-amd64, linux-headers-amd64).
for v in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sed 's|^/boot/vmlinuz-||' | sort -V -r); do
	if [ -f "/usr/src/linux-headers-$v/Makefile" ]; then
		echo "$v"
		exit 0
	fi
done
echo "no kernel with matching headers: run 'make deps'" >&2
exit 1
