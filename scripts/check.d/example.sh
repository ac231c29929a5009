#!/bin/sh
# The examples a user copies from: examples/*.c and the C blocks of
# README.md marked `<!-- compile: NAME -->` are compiled against the
# in-tree library (gcc and clang, -Werror) and run; each must exit 0.
# guest_mm also runs under valgrind with every leak kind an error, and,
# with a cross compiler and an aarch64 build, under qemu-user.
set -u
. scripts/check-step.sh
step_needs_host_arch "the examples are built with the host compiler"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sk() { echo "SKIP: $1"; skip=$((skip + 1)); }

make --no-print-directory all > "$tmp/log" 2>&1 || { cat "$tmp/log"; ko "make all"; }
lib=build/$(uname -m)/libmmport.a
CFLAGS="-std=c11 -Wall -Wextra -Werror -O2 -Iinclude"

# README.md: each ```c block after a `<!-- compile: NAME -->` line.
awk -v dir="$tmp" '
    /^<!-- compile: [a-z_0-9]+ -->$/ { name = $3; next }
    name != "" && /^```c$/ { out = dir "/" name ".c"; inblock = 1; next }
    inblock && /^```$/ { inblock = 0; name = ""; close(out); next }
    inblock { print > out }
' README.md
n=$(ls "$tmp"/*.c 2>/dev/null | wc -l)
[ "$n" -ge 2 ] && ok "README.md: $n marked C examples extracted" || ko "README.md: $n marked C examples (want 2 or more)"

for src in examples/*.c "$tmp"/*.c; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .c)
    for cc in cc clang; do
        command -v $cc > /dev/null || { sk "$name with $cc: no $cc"; continue; }
        # shellcheck disable=SC2086
        if ! $cc $CFLAGS "$src" "$lib" -lpthread -o "$tmp/$name-$cc" > "$tmp/cc.log" 2>&1; then
            cat "$tmp/cc.log"; ko "$name: $cc $CFLAGS"; continue
        fi
        if "$tmp/$name-$cc" > "$tmp/run.log" 2>&1; then
            ok "$name ($cc): exit 0, $(tail -1 "$tmp/run.log")"
        else
            cat "$tmp/run.log"; ko "$name ($cc): exit $?"
        fi
    done
done

# guest_mm under valgrind, every leak kind an error: a consumer that frees
# what it owns and calls mmp_shutdown() leaves nothing of mmport's behind
# (the clearing pool's threads, shared tables' epoch records).
if command -v valgrind > /dev/null && [ -x "$tmp/guest_mm-cc" ]; then
    if valgrind -q --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
        --error-exitcode=1 "$tmp/guest_mm-cc" > "$tmp/vg.log" 2>&1; then
        ok "guest_mm under valgrind --leak-check=full --show-leak-kinds=all: no error, no leak"
    else
        cat "$tmp/vg.log"; ko "guest_mm under valgrind (leaks or errors above)"
    fi
else
    sk "guest_mm under valgrind: no valgrind or no guest_mm build"
fi

# guest_mm on aarch64, emulated, when the cross build exists.
xlib=build/aarch64/libmmport.a
if [ -n "${CROSS_CC:-}" ] && [ -n "${QEMU_AARCH64:-}" ] && [ -f "$xlib" ]; then
    # shellcheck disable=SC2086
    if $CROSS_CC $CFLAGS examples/guest_mm.c "$xlib" -lpthread -o "$tmp/guest_mm-aarch64" \
        > "$tmp/cc.log" 2>&1 && QEMU_CPU=max $QEMU_AARCH64 "$tmp/guest_mm-aarch64" > "$tmp/run.log" 2>&1; then
        ok "guest_mm (aarch64 under qemu-user): $(tail -1 "$tmp/run.log")"
    else
        cat "$tmp/cc.log" "$tmp/run.log"; ko "guest_mm on aarch64 under qemu-user"
    fi
else
    sk "guest_mm on aarch64: no cross build (build/aarch64/libmmport.a)"
fi
step_results
