#!/bin/sh
# The general-register build (./configure --enable-general-regs-only, or an
# embedding that compiles mmport with -mgeneral-regs-only): for x86_64 and
# aarch64, gcc and clang,
# 1. core, the clearing kernels and descriptor formats build freestanding
#    with -mgeneral-regs-only (scripts/check-freestanding.sh does the build);
# 2. objdump finds no vector register in any of those objects (x86: xmm,
#    ymm, zmm, mm; arm64: v, q, d, s, h, b, z registers);
# 3. hosted (host/linux also general-register), a driver lists the kernels:
#    the vector ones unavailable with the general-register reason, the
#    policy picks none of them, and every available kernel clears.
set -u
. scripts/check-step.sh
host=$(uname -m)
out=build/genregs
mkdir -p "$out"
if [ ! -e build/include-ao/atomic_ops.h ]; then
    ao=$(sed -n 's/^AO_DIR = //p' config.mak)
    mkdir -p build/include-ao && ln -sfn "$ao/atomic_ops.h" "$ao/atomic_ops" build/include-ao/
fi

# Prints the instructions of $2 (an object) that name a vector register of arch $1.
vector_insns() {
    case $1 in
    x86_64) objdump -d --no-show-raw-insn "$2" | grep -E '%([xyz]?mm[0-9]+)' ;;
    aarch64)
        od=objdump; [ "$host" = aarch64 ] || od=aarch64-linux-gnu-objdump
        # Drop "addr <symbol>" operands (branch and literal targets are hex,
        # "d8" would read as a register) and comments, keep mnemonic + operands.
        $od -d --no-show-raw-insn "$2" | sed -E 's/[0-9a-f]+ <[^>]*>//g; s@//.*@@' |
            awk -F'\t' 'NF >= 3 {print $2 " " $3}' | grep -E '\b[vqdshbz][0-9]{1,2}\b' ;;
    esac
}

cat > "$out/driver.c" <<'EOF'
/* Lists the kernels of a general-register build and clears with each. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <mmport/mmport.h>
int main(void)
{
    size_t n, len = 64u << 10;
    const struct mmp_clear_kernel *k = mmp_clear_kernels(&n);
    struct mmp_clear_policy p;
    mmp_clear_policy(&p);
    unsigned char *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int bad = 0, vec = 0;
    for (size_t i = 0; i < n; i++) {
        int vector = !strcmp(k[i].name, "avx2_nt") || !strcmp(k[i].name, "avx512_nt");
        printf("  %-10s %-3s %s\n", k[i].name, k[i].available ? "yes" : "no", k[i].why);
        if (vector && k[i].arch == mmp_cpu_features()->arch) {
            vec++;
            if (k[i].available || !strstr(k[i].why, "general-register build"))
                printf("FAIL: %s not left out with the reason\n", k[i].name), bad = 1;
            if (!strcmp(p.hot, k[i].name) || !strcmp(p.cold, k[i].name))
                printf("FAIL: the policy picks %s\n", k[i].name), bad = 1;
        }
        if (!k[i].available)
            continue;
        memset(b, 0xa5, len);
        struct mmp_clear_opts o = {.kernel = k[i].name};
        size_t j = 0;
        if (mmp_clear(b, len, &o) != 0)
            printf("FAIL: %s refused\n", k[i].name), bad = 1;
        while (j < len && !b[j])
            j++;
        if (j != len)
            printf("FAIL: %s left byte %zu\n", k[i].name, j), bad = 1;
    }
    printf("  policy hot %s, cold %s; %d vector kernels left out\n", p.hot, p.cold, vec);
    return bad;
}
EOF

for arch in x86_64 ${CROSS_CC:+aarch64}; do
    case $arch in x86_64) dir=x86 triple=x86_64-linux-gnu ;; aarch64) dir=arm64 triple=aarch64-linux-gnu ;; esac
    [ "$arch" = "$host" ] || [ "$arch" = aarch64 ] || continue
    for comp in gcc clang; do
        label="$arch $comp"
        b=$out/$arch-$comp
        if ! FREESTANDING_CFLAGS=-mgeneral-regs-only \
            scripts/check-freestanding.sh "$arch" "$comp" "$b" > "$b.log" 2>&1; then
            cat "$b.log"; ko "$label: freestanding -mgeneral-regs-only build"; continue
        fi
        ok "$label: $(tail -1 "$b.log" | sed 's/^PASS: //')"
        hits=0 n=0
        for o in $(find "$b/obj" -name '*.o' | sort); do
            n=$((n + 1))
            v=$(vector_insns "$arch" "$o" | head -3)
            [ -z "$v" ] || { echo "$o:"; echo "$v"; hits=$((hits + 1)); }
        done
        if [ $n = 0 ]; then ko "$label: no objects under $b/obj to disassemble"
        elif [ $hits = 0 ]; then ok "$label: objdump: no vector register in $n objects"
        else ko "$label: vector registers in $hits of $n objects"; fi
    done
    # Hosted: library general-register, the driver an ordinary program.
    run=
    if [ "$arch" = "$host" ]; then cc=gcc
    else cc=$triple-gcc; run=$QEMU_AARCH64; fi
    h=$out/$arch-hosted
    rm -rf "$h"; mkdir -p "$h"
    srcs="$(ls core/*.c arch/*/pt_*.c) $(ls arch/$dir/*.c arch/generic/*.c host/linux/*.c | grep -v '^arch/[^/]*/pt_')"
    okb=1
    for s in $srcs; do
        $cc -std=c11 -Wall -Wextra -Werror -O2 -mgeneral-regs-only -Iinclude -Icore -Iarch/$dir \
            -Ibuild/include-ao -c "$s" -o "$h/$(echo "$s" | tr / _).o" || okb=0
    done
    if [ $okb = 1 ] && $cc -std=c11 -O2 -Iinclude -o "$h/driver" "$out/driver.c" "$h"/*.o -lpthread &&
        $run "$h/driver" > "$h/driver.log" 2>&1; then
        ok "$arch hosted: $(tail -1 "$h/driver.log" | sed 's/^ *//')"
    else
        cat "$h/driver.log" 2>/dev/null; ko "$arch hosted general-register library"
    fi
done
step_results
