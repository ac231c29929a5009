#!/bin/sh
# make install: headers, static and shared library, pkg-config file, CLI,
# and man pages when they exist.
# Usage: install.sh <DESTDIR> <PREFIX> <build dir>
set -eu
destdir=$1 prefix=$2 b=$3
root=$destdir$prefix
mkdir -p "$root/include/mmport" "$root/lib/pkgconfig" "$root/bin"
cp include/mmport/*.h "$root/include/mmport/"
cp "$b/libmmport.a" "$b/libmmport.so.0.1.0" "$root/lib/"
ln -sf libmmport.so.0.1.0 "$root/lib/libmmport.so.0"
ln -sf libmmport.so.0.1.0 "$root/lib/libmmport.so"
cp "$b/mmport" "$root/bin/"
for sec in 1 3; do
    for m in man/*.$sec build/man/*.$sec; do
        [ -f "$m" ] || continue
        mkdir -p "$root/share/man/man$sec"
        cp "$m" "$root/share/man/man$sec/"
    done
done
version=$(sed -n 's/^#define MMP_VERSION_STRING "\(.*\)"/\1/p' include/mmport/common.h)
cat > "$root/lib/pkgconfig/mmport.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: mmport
Description: Fast page clearing and portable x86-64/arm64 page tables for hypervisors
Version: $version
Libs: -L\${libdir} -lmmport
Libs.private: -lpthread
Cflags: -I\${includedir}
PC
echo "installed mmport $version under $root"
