# Builds the reference hypervisor (arm64) from the library's freestanding
# sources (core/, the descriptor formats, arch/arm64/, arch/generic/,
# host/none/: as docs/mmu.md describes) and examples/hyp/{common,arm64}.
#   make -f examples/hyp/arm64/hyp.mk [HYP_CC=gcc|clang]
# Output: build/hyp/arm64/hyp.elf (QEMU -kernel).
# Everything is built general-register only: the hypervisor runs between
# guest instructions with the guest's FP/SIMD/SVE registers live and never
# saves them.
HYP_CC ?= gcc
HOST_ARCH := $(shell uname -m)
TRIPLE := aarch64-linux-gnu
ifeq ($(HYP_CC),clang)
CC := clang --target=$(TRIPLE)
else ifeq ($(HOST_ARCH),aarch64)
CC := gcc
else
CC := $(TRIPLE)-gcc
endif
LD := $(if $(filter aarch64,$(HOST_ARCH)),ld,$(TRIPLE)-ld)

O := build/hyp/arm64$(if $(filter clang,$(HYP_CC)),-clang)
CINC := $(shell $(CC) -print-file-name=include)
AO_INC := build/include-ao
CFLAGS := -std=c11 -Wall -Wextra -Werror -O2 -g -ffreestanding -fno-builtin -nostdinc \
          -mgeneral-regs-only -mno-outline-atomics -mstrict-align -mbranch-protection=none \
          -fno-pie -fno-stack-protector -fno-asynchronous-unwind-tables \
          -ffunction-sections -fdata-sections \
          -isystem $(CINC) -Icore/freestanding -Iinclude -Icore -Iarch/arm64 -I$(AO_INC) \
          -Iexamples/hyp/common -Iexamples/hyp/arm64

LIB_SRC := $(sort $(wildcard core/*.c arch/*/pt_*.c) \
             $(filter-out arch/%/pt_%.c,$(wildcard arch/arm64/*.c arch/generic/*.c)) \
             $(wildcard host/none/*.c))
HYP_SRC := $(wildcard examples/hyp/common/*.c examples/hyp/arm64/*.c)
HYP_ASM := $(wildcard examples/hyp/arm64/*.S)
OBJS := $(patsubst %,$(O)/obj/%.o,$(LIB_SRC) $(HYP_SRC) $(HYP_ASM))

all: $(O)/hyp.elf

$(AO_INC)/atomic_ops.h:
	@mkdir -p $(AO_INC)
	ln -sfn /usr/include/atomic_ops.h /usr/include/atomic_ops $(AO_INC)/

$(O)/obj/%.c.o: %.c $(AO_INC)/atomic_ops.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
$(O)/obj/%.S.o: %.S
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -D__ASSEMBLY__ -c $< -o $@

$(O)/hyp.elf: $(OBJS) examples/hyp/arm64/link.ld
	$(LD) -nostdlib -static --gc-sections --no-warn-rwx-segments -z noexecstack \
	    -T examples/hyp/arm64/link.ld -o $@ $(OBJS)

.PHONY: all
-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)
