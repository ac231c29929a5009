#!/bin/sh
# configure as packagers and cross builders call it: the exact arguments
# Debian's dh_auto_configure passes (native and cross), the autoconf
# directory options and VAR=VALUE arguments; unknown options are errors
# and nothing from the command line is evaluated; user CFLAGS add to the
# required flags (configure and `make CFLAGS=...`). configure runs in a
# temporary directory, so the tree's config.mak is untouched.
set -u
. scripts/check-step.sh
src=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# conf <args...>: runs configure in $tmp/c; $rc, $tmp/out (stdout+stderr)
conf() {
    rm -rf "$tmp/c"; mkdir "$tmp/c"
    (cd "$tmp/c" && "$src/configure" "$@") > "$tmp/out" 2>&1
    rc=$?
}
# val <make variable>: its expanded value in the config.mak just written
# (in $tmp/c, or in $mak when set)
val() {
    printf 'include %s\nall:\n\t@echo $(%s)\n' "${mak:-$tmp/c/config.mak}" "$1" |
        make --no-print-directory -f - all
}
want() { # want <description> <variable> <expected value>
    got=$(val "$2")
    [ "$got" = "$3" ] && ok "$1: $2 = $3" || ko "$1: $2 = '$got', want '$3'"
}
fails() { # fails <description> <message pattern> <args...>
    d=$1 pat=$2; shift 2
    conf "$@"
    if [ $rc != 0 ] && grep -q -- "$pat" "$tmp/out" && [ ! -f "$tmp/c/config.mak" ]; then
        ok "$d: exit $rc, '$(head -1 "$tmp/out")', no config.mak"
    else
        ko "$d: exit $rc (want != 0 and '$pat'), config.mak $( [ -f "$tmp/c/config.mak" ] && echo written || echo absent): $(head -2 "$tmp/out")"
    fi
}

# debhelper 13 (Debian 12), Buildsystem/autoconf.pm: the standard options.
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
dh_args() {
    printf '%s\n' "--build=$ma" --prefix=/usr '--includedir=${prefix}/include' \
        '--mandir=${prefix}/share/man' '--infodir=${prefix}/share/info' --sysconfdir=/etc \
        --localstatedir=/var --disable-option-checking --disable-silent-rules \
        "--libdir=\${prefix}/lib/$1" --runstatedir=/run --disable-maintainer-mode \
        --disable-dependency-tracking
}
# shellcheck disable=SC2046
IFS='
'
conf $(dh_args "$ma")
unset IFS
if [ $rc = 0 ]; then ok "dh_auto_configure arguments (native): exit 0"; else ko "dh_auto_configure (native): $(cat "$tmp/out")"; fi
want "dh native" prefix /usr
want "dh native" libdir "/usr/lib/$ma"
want "dh native" includedir /usr/include
want "dh native" mandir /usr/share/man
want "dh native" sysconfdir /etc
want "dh native" bindir /usr/bin
! grep -qi 'not found\|eval' "$tmp/out" && ok "dh native: no complaints" || ko "dh native: $(cat "$tmp/out")"

if command -v aarch64-linux-gnu-gcc > /dev/null; then
    IFS='
'
    # shellcheck disable=SC2046
    conf $(dh_args aarch64-linux-gnu) --host=aarch64-linux-gnu
    unset IFS
    [ $rc = 0 ] && ok "dh_auto_configure arguments (cross, --host=aarch64-linux-gnu): exit 0" ||
        ko "dh cross: $(cat "$tmp/out")"
    want "dh cross" ARCH aarch64
    want "dh cross" CC aarch64-linux-gnu-gcc
    want "dh cross" libdir /usr/lib/aarch64-linux-gnu
    conf --host=aarch64-linux-gnu
    want "--host alone: multiarch libdir" libdir /usr/local/lib/aarch64-linux-gnu
    want "--host alone" AR aarch64-linux-gnu-ar
else
    echo "SKIP: cross configure: no aarch64-linux-gnu-gcc"; skip=$((skip + 1))
fi

# Debian's own dh_auto_configure, with a minimal debian/ beside a copy of
# configure: native, and cross through dpkg-architecture -aarm64.
if command -v dh_auto_configure > /dev/null; then
    deb=$tmp/deb
    mkdir -p "$deb/debian" && cp configure "$deb/"
    printf '%s\n' 'Source: mmport' 'Maintainer: Check <check@example.org>' \
        'Build-Depends: debhelper-compat (= 13)' '' 'Package: libmmport-dev' \
        'Architecture: any' 'Description: check' ' check' > "$deb/debian/control"
    printf '%s\n' 'mmport (0.2.0-1) unstable; urgency=medium' '' '  * check' '' \
        ' -- Check <check@example.org>  Thu, 03 Dec 2026 00:00:00 +0000' > "$deb/debian/changelog"
    (cd "$deb" && dh_auto_configure) > "$tmp/out" 2>&1; rc=$?
    mak=$deb/config.mak
    [ $rc = 0 ] && ok "dh_auto_configure itself (debhelper $(dpkg-query -W -f '${Version}' debhelper 2>/dev/null)): exit 0" ||
        ko "dh_auto_configure: exit $rc: $(tail -3 "$tmp/out")"
    want "dh_auto_configure" libdir "/usr/lib/$ma"
    want "dh_auto_configure" mandir /usr/share/man
    case $(val CFLAGS) in *-fstack-protector-strong*) ok "dh_auto_configure: dpkg-buildflags CFLAGS recorded" ;;
    *) ko "dh_auto_configure: CFLAGS = '$(val CFLAGS)'" ;; esac
    if command -v aarch64-linux-gnu-gcc > /dev/null && [ "$(uname -m)" = x86_64 ]; then
        rm -f "$deb/config.mak"
        (cd "$deb" && dpkg-architecture -aarm64 -c dh_auto_configure) > "$tmp/out" 2>&1; rc=$?
        [ $rc = 0 ] && ok "dpkg-architecture -aarm64 -c dh_auto_configure: exit 0" ||
            ko "cross dh_auto_configure: exit $rc: $(tail -3 "$tmp/out")"
        want "cross dh_auto_configure" ARCH aarch64
        want "cross dh_auto_configure" libdir /usr/lib/aarch64-linux-gnu
    else
        echo "SKIP: cross dh_auto_configure: no aarch64-linux-gnu-gcc on an x86_64 build machine"; skip=$((skip + 1))
    fi
    unset mak
else
    echo "SKIP: dh_auto_configure itself: debhelper not installed (make check installs it); its arguments are emulated above"
    skip=$((skip + 1))
fi

conf --prefix=/opt/mm --exec-prefix=/opt/mmx --bindir=/b --includedir=/i --mandir=/m \
    --datadir=/d --sysconfdir=/s
want "directory options" bindir /b
want "directory options" libdir /opt/mmx/lib
want "directory options" includedir /i
want "directory options" mandir /m
want "directory options" datadir /d
conf --prefix /opt/sep --libdir /opt/sep/l64
want "--prefix DIR (separate word)" libdir /opt/sep/l64
conf prefix=/usr LIBDIR=/usr/lib64 'CFLAGS=-O3 -g -Wformat' LDFLAGS=-Wl,-z,now
want "VAR=VALUE: prefix=" prefix /usr
want "VAR=VALUE: LIBDIR=" libdir /usr/lib64
want "VAR=VALUE: CFLAGS" CFLAGS "-O3 -g -Wformat"
want "VAR=VALUE: LDFLAGS" LDFLAGS "-Wl,-z,now"
cp "$tmp/c/config.mak" "$tmp/first.mak"
(cd "$tmp/c" && sed -i "s|^cd .*|cd \"$tmp/c\" \&\& exec \"$src/configure\"$(sed -n 's/^cd .*exec .\/configure//p' config.status)|" config.status &&
    CFLAGS=-Ofast LDFLAGS=-Wl,--junk ./config.status) > /dev/null 2>&1
cmp -s "$tmp/first.mak" "$tmp/c/config.mak" && ok "config.status repeats the arguments (quoted), whatever the environment holds" ||
    ko "config.status: $(diff "$tmp/first.mak" "$tmp/c/config.mak")"
# Building needs only the compiler and libatomic_ops: without any test tool
# configure still succeeds and records what `make check` will install.
conf CLANG=no-such-clang QEMU_AARCH64=no-such-qemu CROSS_CC_AARCH64=no-such-gcc PKG_CONFIG=no-such-pkg-config
if [ $rc = 0 ]; then
    want "no test tools" MISSING_TOOLS "check no-such-gcc check:arm64 no-such-qemu no-such-clang"
    want "no test tools" CROSS_CC ""
else
    ko "configure without test tools: exit $rc: $(cat "$tmp/out")"
fi
conf --enable-general-regs-only
want "--enable-general-regs-only" LIB_CFLAGS -mgeneral-regs-only
conf --disable-option-checking --enable-frobnicate
[ $rc = 0 ] && grep -q 'WARNING: unrecognized options: --enable-frobnicate' "$tmp/out" &&
    ok "--disable-option-checking: unknown --enable-x is a warning" || ko "--disable-option-checking: $(cat "$tmp/out")"
conf --help
[ $rc = 0 ] && grep -q -- '--libdir=DIR' "$tmp/out" && ok "--help lists --libdir" || ko "--help"

fails "unknown option" "unrecognized option: '--frobnicate=1'" --frobnicate=1
fails "unknown --enable" "unrecognized options: --enable-frobnicate" --enable-frobnicate
fails "unknown variable" "unknown variable 'FOO'" FOO=bar
fails "shell text is not evaluated" "unrecognized option" "--x=y;touch $tmp/pwned1"
fails "no command substitution in VAR=" "invalid variable name" "\$(touch $tmp/pwned2)=1"
fails "no command substitution in a value" "unknown variable" "X=\$(touch $tmp/pwned3)"
ls "$tmp"/pwned* > /dev/null 2>&1 && ko "an argument was evaluated: $(ls "$tmp"/pwned*)" ||
    ok "no argument was evaluated (no $tmp/pwned*)"
fails "--host that the compiler does not build for" "builds for" --host=aarch64-linux-gnu CC=cc
fails "missing compiler" "not found" CC=no-such-cc

# CFLAGS from the environment count (as autoconf's) and are kept by config.status.
CFLAGS=-O1 conf
want "CFLAGS from the environment" CFLAGS -O1
grep -q "'CFLAGS=-O1'" "$tmp/c/config.status" && ok "config.status keeps the environment's CFLAGS" ||
    ko "config.status: $(cat "$tmp/c/config.status")"

# make CFLAGS=-O3: added after the required flags, which stay (one build
# configuration, everything out of date, nothing run).
mkb() { make --no-print-directory -n -B -f mk/build.mk B="$tmp/b" ARCH="$(uname -m)" CC=cc "$@" all 2>/dev/null; }
line=$(mkb CFLAGS=-O3 | grep -m1 ' -c core/')
case $line in
*-std=c11*-fPIC*-fvisibility=hidden*-O3*) ok "make CFLAGS=-O3 keeps -std=c11 -fPIC -fvisibility=hidden, adds -O3" ;;
*) ko "make CFLAGS=-O3 compiles with: $line" ;;
esac
line=$(mkb LDFLAGS=-Wl,-z,now | grep -A1 -m1 -- '-shared' | tr -d '\\\n')
case $line in
*--version-script*-Wl,-z,now*) ok "make LDFLAGS=...: added to the shared-library link" ;;
*) ko "make LDFLAGS=... links with: $line" ;;
esac
step_results
