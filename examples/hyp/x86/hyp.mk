# Builds the x86-64 reference hypervisor (examples/hyp/x86/) as a
# multiboot ELF, linked from mmport's own freestanding sources (core/,
# the descriptor formats arch/*/pt_*.c, arch/x86/, arch/generic/,
# host/none/) and the hypervisor's sources, all compiled with
# -ffreestanding -nostdinc -mgeneral-regs-only: the hypervisor never
# touches vector registers, so the guest's SSE/AVX state needs no saving
# around an exit.
#   make -f examples/hyp/x86/hyp.mk [HYP_CC=gcc|clang] [HYP_VARIANT=<name>] [HYP_EXTRA=-D...]
# Output: build/hyp/x86[-clang][-<variant>]/hyp.elf and hyp32.elf (the
# ELF32 copy QEMU's multiboot loader accepts).
# A variant builds the library with the planted bugs of
# examples/hyp/x86/planted/<name>/<file>.patch applied to copies of
# <file>.c (the runs must then fail); product code holds no test branch.
HYP_CC ?= gcc
HYP_DIR := examples/hyp/x86
ifeq ($(shell uname -m),x86_64)
CROSS :=
else
CROSS := x86_64-linux-gnu-
endif
ifeq ($(HYP_CC),clang)
CC := clang --target=x86_64-linux-gnu
else
CC := $(CROSS)gcc
endif
LD := $(CROSS)ld
OBJCOPY := $(CROSS)objcopy

HYP_VARIANT ?=
O := build/hyp/x86$(if $(filter clang,$(HYP_CC)),-clang)$(if $(HYP_VARIANT),-$(HYP_VARIANT))
CINC := $(shell $(CC) -print-file-name=include)
AO_INC := build/include-ao
HYP_CFLAGS = -std=c11 -Wall -Wextra -Werror -O2 -g -ffreestanding -fno-builtin -nostdinc \
             -fno-tree-loop-distribute-patterns \
             -mno-red-zone -mcmodel=small -fno-pic -fno-pie -fno-stack-protector \
             -fno-asynchronous-unwind-tables -ffunction-sections -fdata-sections \
             -mgeneral-regs-only -isystem $(CINC) -Icore/freestanding -Iinclude -Icore \
             -Iarch/x86 -I$(AO_INC) -I$(HYP_DIR) $(HYP_EXTRA)
ifeq ($(HYP_CC),clang)
HYP_CFLAGS := $(filter-out -fno-tree-loop-distribute-patterns,$(HYP_CFLAGS))
endif

LIB_SRC := $(sort $(wildcard core/*.c arch/*/pt_*.c) \
             $(filter-out arch/%/pt_%.c,$(wildcard arch/x86/*.c arch/generic/*.c)) \
             $(wildcard host/none/*.c))
PATCHES := $(if $(HYP_VARIANT),$(wildcard $(HYP_DIR)/planted/$(HYP_VARIANT)/*.patch))
ifneq ($(HYP_VARIANT),)
ifeq ($(PATCHES),)
$(error no patches in $(HYP_DIR)/planted/$(HYP_VARIANT)/)
endif
PATCHED := $(foreach f,$(patsubst $(HYP_DIR)/planted/$(HYP_VARIANT)/%.patch,%,$(PATCHES)),\
             $(filter %/$(f).c,$(LIB_SRC)))
LIB_SRC := $(filter-out $(PATCHED),$(LIB_SRC)) $(addprefix $(O)/patched/,$(PATCHED))
endif
HYP_SRC := $(sort $(wildcard $(HYP_DIR)/*.c))
HYP_ASM := $(sort $(wildcard $(HYP_DIR)/*.S))
# A variant compiles only its patched files; the other objects are those
# of the build without it (the same compiler and flags; with HYP_EXTRA a
# variant compiles everything).
BASE_O := $(if $(HYP_EXTRA),$(O),build/hyp/x86$(if $(filter clang,$(HYP_CC)),-clang))
OBJS := $(patsubst %,$(BASE_O)/obj/%.o,$(filter-out $(O)/patched/%,$(LIB_SRC)) $(HYP_SRC) $(HYP_ASM)) \
        $(patsubst %,$(O)/obj/%.o,$(filter $(O)/patched/%,$(LIB_SRC)))

all: $(O)/hyp32.elf

$(AO_INC)/atomic_ops.h:
	@mkdir -p $(AO_INC)
	ln -sfn /usr/include/atomic_ops.h /usr/include/atomic_ops $(AO_INC)/

$(BASE_O)/obj/%.c.o: %.c $(AO_INC)/atomic_ops.h
	@mkdir -p $(@D)
	$(CC) $(HYP_CFLAGS) -MMD -MP -c $< -o $@
.SECONDEXPANSION:
$(O)/patched/%.c: %.c $(HYP_DIR)/planted/$(HYP_VARIANT)/$$(basename $$(notdir $$@)).patch
	@mkdir -p $(@D)
	patch -s -o $@ $< $(HYP_DIR)/planted/$(HYP_VARIANT)/$(basename $(notdir $@)).patch
$(O)/obj/$(O)/patched/%.c.o: $(O)/patched/%.c $(AO_INC)/atomic_ops.h
	@mkdir -p $(@D)
	$(CC) $(HYP_CFLAGS) -iquote $(dir $*) -MMD -MP -c $< -o $@
$(BASE_O)/obj/%.S.o: %.S
	@mkdir -p $(@D)
	$(CC) $(HYP_CFLAGS) -D__ASSEMBLY__ -c $< -o $@

$(O)/hyp.elf: $(OBJS) $(HYP_DIR)/link.ld
	$(LD) -nostdlib -static --gc-sections --no-warn-rwx-segments -z noexecstack \
	    -T $(HYP_DIR)/link.ld -o $@ $(OBJS)

$(O)/hyp32.elf: $(O)/hyp.elf
	$(OBJCOPY) -O elf32-i386 $< $@

.SECONDARY:
.PHONY: all
-include $(shell find $(sort $(O)/obj $(BASE_O)/obj) -name '*.d' 2>/dev/null)
