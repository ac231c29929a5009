#!/bin/sh
# The first clear in a fresh process does no hidden work: under
# `strace -f -e trace=file,memory`, mmp_clear_pages(p, 1) (between two
# marker calls of tests/first_clear/first_clear.c) makes no file-system
# call and no mapping, the whole run creates nothing (no mkdir, no file
# opened for writing, no rename), and HOME stays empty. The environment
# variables that ask for files (MMPORT_TUNING, MMPORT_CACHE_DIR) are unset.
set -u
. scripts/check-step.sh
step_needs_host_arch "strace traces host-arch binaries"
command -v strace > /dev/null || { echo "SKIP: no strace (scripts/install-deps.sh installs it)"; skip=1; step_results; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lib=build/$(uname -m)/libmmport.a
[ -f "$lib" ] || make --no-print-directory "$lib" > "$tmp/log" 2>&1 || { cat "$tmp/log"; ko "build $lib"; step_results; exit 1; }
cc -std=c11 -Wall -Wextra -Werror -O2 -Iinclude tests/first_clear/first_clear.c "$lib" -lpthread \
    -o "$tmp/first_clear" > "$tmp/cc.log" 2>&1 || { cat "$tmp/cc.log"; ko "build first_clear"; step_results; exit 1; }
mkdir "$tmp/home"
if ! env -u MMPORT_TUNING -u MMPORT_CACHE_DIR -u XDG_CACHE_HOME HOME="$tmp/home" \
    strace -f -qq -e trace=file,memory -o "$tmp/trace" "$tmp/first_clear" > "$tmp/out" 2>&1; then
    cat "$tmp/out"; ko "first_clear exited non-zero"
fi
if ! grep -q 'mmport-first-clear/begin' "$tmp/trace" || ! grep -q 'mmport-first-clear/end' "$tmp/trace"; then
    cat "$tmp/trace"; ko "markers missing from the trace"
else
    inside=$(sed -n '/mmport-first-clear\/begin/,/mmport-first-clear\/end/p' "$tmp/trace" |
             grep -v 'mmport-first-clear/')
    if [ -z "$inside" ]; then
        ok "first mmp_clear_pages(p, 1): no file-system call, no mapping ($(cat "$tmp/out"))"
    else
        echo "$inside"; ko "first mmp_clear_pages(p, 1) made the calls above"
    fi
fi
created=$(grep -E 'mkdir|creat|O_WRONLY|O_RDWR|rename|unlink|link\(' "$tmp/trace" || true)
[ -z "$created" ] && ok "the whole run creates and writes no file" ||
    { echo "$created"; ko "files created or opened for writing"; }
[ -z "$(ls -A "$tmp/home")" ] && ok "HOME stays empty" || { ls -laR "$tmp/home"; ko "HOME written"; }
step_results
