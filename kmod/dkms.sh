#!/bin/sh
# dkms.sh SRC DEST VERSION - write cad.ko's DKMS source tree into DEST
# (for `dkms add DEST`; make dkms-install puts it in /usr/src/cad-VERSION):
# the module's and the core's sources as the repository lays them out,
# a top Kbuild that includes kmod/cad's, and dkms.conf.  DKMS then builds
# cad.ko for every kernel installed later, from its headers.
set -eu
src=$1 dest=$2 version=$3
rm -rf "$dest"
mkdir -p "$dest/kmod/uapi" "$dest/kmod/core" "$dest/kmod/cad"
cp "$src"/kmod/uapi/*.h "$dest/kmod/uapi/"
cp "$src"/kmod/core/*.c "$src"/kmod/core/*.h "$src"/kmod/core/Kbuild.inc "$dest/kmod/core/"
cp "$src"/kmod/cad/*.c "$src"/kmod/cad/*.h "$src"/kmod/cad/Kbuild "$dest/kmod/cad/"
printf '%s\n' "# cad.ko (written by kmod/dkms.sh)" 'include $(src)/kmod/cad/Kbuild' > "$dest/Kbuild"
cat > "$dest/dkms.conf" <<CONF
# cad.ko for DKMS (written by kmod/dkms.sh): rebuilt for each kernel.
PACKAGE_NAME="cad"
PACKAGE_VERSION="$version"
BUILT_MODULE_NAME[0]="cad"
DEST_MODULE_LOCATION[0]="/updates/dkms"
MAKE[0]="make -C \${kernel_source_dir} M=\${dkms_tree}/\${PACKAGE_NAME}/\${PACKAGE_VERSION}/build modules"
CLEAN="make -C \${kernel_source_dir} M=\${dkms_tree}/\${PACKAGE_NAME}/\${PACKAGE_VERSION}/build clean"
AUTOINSTALL="yes"
CONF
