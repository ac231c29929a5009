#!/bin/sh
# Set-up fits each command: what `make run`, `make fuzz` and `make check`
# install (scripts/install-deps.sh profiles, and which one each target
# asks for); `make install` without awk names what it lacks; a staged
# install says how to point pkg-config at it; `make freestanding` builds
# the object a bare-metal hypervisor links, needing only mem* from outside.
set -u
. scripts/check-step.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Profiles: the demo needs a compiler, make and libatomic_ops, nothing else.
run=$(scripts/install-deps.sh --list run | tr '\n' ' ')
[ "$run" = "gcc make libatomic-ops-dev " ] && ok "install-deps.sh run: $run" ||
    ko "install-deps.sh run installs more than the demo needs: $run"
fuzz=$(scripts/install-deps.sh --list fuzz | tr '\n' ' ')
check=$(scripts/install-deps.sh --list check | tr '\n' ' ')
extra=$(for p in $fuzz; do case " $check " in *" $p "*) ;; *) echo "$p" ;; esac; done)
case $fuzz in "$run"*) ;; *) extra="$extra (does not start with run's)" ;; esac
[ -z "$extra" ] && [ "$(echo $check | wc -w)" -gt "$(echo $fuzz | wc -w)" ] &&
    ok "install-deps.sh fuzz: run's + $(echo "${fuzz#"$run"}"); check: $(echo $check | wc -w) packages" ||
    ko "install-deps.sh fuzz is not between run and check: $extra"
# (MAKE=true: `make -n check` would still run the "+" recipe, the whole check.)
for t in run fuzz check deps; do
    want=$t; [ $t = deps ] && want=check
    make -n "$t" MAKE=true > "$tmp/log" 2>&1
    grep -qx "scripts/install-deps.sh $want" "$tmp/log" &&
        ok "make $t asks install-deps.sh for '$want'" ||
        ko "make $t: $(grep install-deps "$tmp/log")"
done

# make install without awk: the missing tool is named (a fresh man build
# needs it), not "awk: not found" with status 127.
mkdir "$tmp/bin"
for d in /usr/local/bin /usr/bin /bin /usr/sbin /sbin; do
    for f in "$d"/*; do
        n=${f##*/}
        case $n in awk | mawk | gawk | nawk | original-awk | busybox) continue ;; esac
        [ -e "$tmp/bin/$n" ] || ln -s "$f" "$tmp/bin/$n"
    done
done
PATH=$tmp/bin make --no-print-directory install GEN_B="$tmp/gen" DESTDIR="$tmp/noawk" > "$tmp/log" 2>&1; rc=$?
if [ $rc != 0 ] && [ $rc != 127 ] &&
    grep -q "needs awk, which is not installed (Debian: apt-get install mawk" "$tmp/log" &&
    ! grep -q "not found" "$tmp/log"; then
    ok "make install without awk: exit $rc, '$(grep 'needs awk' "$tmp/log")'"
else
    ko "make install without awk: exit $rc: $(tail -3 "$tmp/log")"
fi

# A staged install says how to build against it, and that works.
if make --no-print-directory install GEN_B="$tmp/gen" DESTDIR="$tmp/stage" prefix=/usr > "$tmp/log" 2>&1 &&
    grep -q "PKG_CONFIG_SYSROOT_DIR=$tmp/stage PKG_CONFIG_LIBDIR=$tmp/stage/usr/lib/pkgconfig" "$tmp/log" &&
    flags=$(PKG_CONFIG_SYSROOT_DIR="$tmp/stage" PKG_CONFIG_LIBDIR="$tmp/stage/usr/lib/pkgconfig" \
        pkg-config --cflags --libs mmport) &&
    # shellcheck disable=SC2086
    cc -std=c11 -Werror tests/install/consumer.c $flags -o "$tmp/consumer" &&
    LD_LIBRARY_PATH="$tmp/stage/usr/lib" "$tmp/consumer" > /dev/null; then
    ok "make install DESTDIR: prints the PKG_CONFIG_SYSROOT_DIR / PKG_CONFIG_LIBDIR line, which builds a consumer"
else
    ko "staged install hint: $(tail -4 "$tmp/log")"
fi

# make freestanding: the object (built for the host arch; for aarch64 the
# same rules with the configured cross compiler, shown by make -n).
a=$(uname -m)
o=build/freestanding-$a/mmport-freestanding.o
if make --no-print-directory freestanding > "$tmp/log" 2>&1 && grep -q "^$o: link it" "$tmp/log" &&
    [ -f "$o" ]; then
    undef=$(nm -u "$o" | awk '{print $2}' | grep -vxE 'memset|memcpy|memmove|memcmp')
    defs=$(nm -g --defined-only "$o" | awk '{print $3}' | grep -vc '^mmp_')
    [ -z "$undef" ] && [ "$defs" = 0 ] &&
        ok "make freestanding: $o, only mem* from outside, every global symbol mmp_*" ||
        ko "make freestanding: needs [$undef], $defs global symbols outside mmp_*"
else
    ko "make freestanding: $(tail -3 "$tmp/log")"
fi
if [ "$a" != aarch64 ] && [ -n "${CROSS_CC:-}" ]; then
    make -n --no-print-directory freestanding FREESTANDING_ARCH=aarch64 > "$tmp/log" 2>&1
    grep -q "^$CROSS_CC .*-mno-outline-atomics.* -c core/pt.c -o build/freestanding-aarch64/obj/core/pt.o" "$tmp/log" &&
        grep -q "ld -r -o build/freestanding-aarch64/mmport-freestanding.o" "$tmp/log" &&
        ok "make freestanding FREESTANDING_ARCH=aarch64: $CROSS_CC with -mno-outline-atomics, its ld -r" ||
        ko "make -n freestanding FREESTANDING_ARCH=aarch64: $(head -3 "$tmp/log")"
fi
step_results
