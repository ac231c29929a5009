/* SPDX-License-Identifier: MIT */
/*
 * x86-64 clearing kernels, in inline asm (freestanding: no <immintrin.h>).
 * Every kernel gets addr and len as multiples of 64 bytes, len > 0.
 * The non-temporal ones (MOVNTI, VMOVNTDQ, CLZERO) are weakly ordered
 * (Intel SDM vol. 3A 11.3 "write combining"; AMD APM vol. 3 CLZERO) and end
 * with exactly one SFENCE, so the zeroes are ordered before later stores.
 */
#include "arch.h"
#include "clear_kernels.h"

/* rep stosb: fast strings with ERMS (Intel SDM vol. 1 7.3.9.3). */
static int k_rep_stosb(void *addr, size_t len)
{
    __asm__ volatile("rep stosb" : "+D"(addr), "+c"(len) : "a"(0) : "memory");
    return 0;
}

/* rep stosq: what Linux clear_page uses with REP_GOOD but no ERMS. */
static int k_rep_stosq(void *addr, size_t len)
{
    size_t n = len / 8;
    __asm__ volatile("rep stosq" : "+D"(addr), "+c"(n) : "a"(0) : "memory");
    return 0;
}

/* Plain 64-bit stores, one cache line per iteration (Linux clear_page_orig). */
static int k_unrolled(void *addr, size_t len)
{
    __asm__ volatile("1:\n\t"
                     "movq %2, 0(%0)\n\t"
                     "movq %2, 8(%0)\n\t"
                     "movq %2, 16(%0)\n\t"
                     "movq %2, 24(%0)\n\t"
                     "movq %2, 32(%0)\n\t"
                     "movq %2, 40(%0)\n\t"
                     "movq %2, 48(%0)\n\t"
                     "movq %2, 56(%0)\n\t"
                     "addq $64, %0\n\t"
                     "subq $64, %1\n\t"
                     "jnz 1b"
                     : "+r"(addr), "+r"(len)
                     : "r"(0ull)
                     : "memory", "cc");
    return 0;
}

static int k_movnti(void *addr, size_t len)
{
    __asm__ volatile("1:\n\t"
                     "movnti %2, 0(%0)\n\t"
                     "movnti %2, 8(%0)\n\t"
                     "movnti %2, 16(%0)\n\t"
                     "movnti %2, 24(%0)\n\t"
                     "movnti %2, 32(%0)\n\t"
                     "movnti %2, 40(%0)\n\t"
                     "movnti %2, 48(%0)\n\t"
                     "movnti %2, 56(%0)\n\t"
                     "addq $64, %0\n\t"
                     "subq $64, %1\n\t"
                     "jnz 1b\n\t"
                     "sfence"
                     : "+r"(addr), "+r"(len)
                     : "r"(0ull)
                     : "memory", "cc");
    return 0;
}

/*
 * A general-register build (-mgeneral-regs-only, or -mno-sse) leaves the
 * vector kernels out: the compiler accepts no xmm clobber there, and an
 * embedding that asks for it must not touch vector state. movnti and
 * clzero store from general registers and stay.
 */
#ifdef __SSE__
#define MMP_X86_VECTOR_KERNELS 1

/*
 * Vector NT loop over 64-byte lines; VZEROUPPER after, against the SSE/AVX
 * transition penalty. The VEX vpxor clears all of zmm0/ymm0.
 */
#define VEC_NT_LOOP(stores)                                                             \
    __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\t"                                  \
                     "1:\n\t" stores "addq $64, %0\n\t"                                   \
                     "subq $64, %1\n\t"                                                   \
                     "jnz 1b\n\t"                                                         \
                     "sfence\n\t"                                                         \
                     "vzeroupper"                                                         \
                     : "+r"(addr), "+r"(len)                                              \
                     :                                                                    \
                     : "memory", "cc", "xmm0")

/* Two 32-byte VMOVNTDQ per line. */
static int k_avx2_nt(void *addr, size_t len)
{
    VEC_NT_LOOP("vmovntdq %%ymm0, 0(%0)\n\t"
                "vmovntdq %%ymm0, 32(%0)\n\t");
    return 0;
}

/* One full-line 64-byte VMOVNTDQ per line (needs 64-byte alignment). */
static int k_avx512_nt(void *addr, size_t len)
{
    VEC_NT_LOOP("vmovntdq %%zmm0, 0(%0)\n\t");
    return 0;
}

#endif /* __SSE__ */

/* CLZERO zeroes the cache line holding rAX (AMD APM vol. 3); emitted as bytes
 * for assemblers that predate it. */
static int k_clzero(void *addr, size_t len)
{
    __asm__ volatile("1:\n\t"
                     ".byte 0x0f, 0x01, 0xfc\n\t" /* clzero (%rax) */
                     "addq $64, %0\n\t"
                     "subq $64, %1\n\t"
                     "jnz 1b\n\t"
                     "sfence"
                     : "+a"(addr), "+r"(len)
                     :
                     : "memory", "cc");
    return 0;
}

int (*mmp_arch_clear_fn(unsigned id))(void *addr, size_t len)
{
    switch (id) {
    case MMP_K_REP_STOSB: return k_rep_stosb;
    case MMP_K_REP_STOSQ: return k_rep_stosq;
    case MMP_K_UNROLLED: return k_unrolled;
    case MMP_K_MOVNTI: return k_movnti;
#ifdef MMP_X86_VECTOR_KERNELS
    case MMP_K_AVX2_NT: return k_avx2_nt;
    case MMP_K_AVX512_NT: return k_avx512_nt;
#endif
    case MMP_K_CLZERO: return k_clzero;
    default: return NULL;
    }
}
