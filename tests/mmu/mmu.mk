# Builds the real-MMU payloads (tests/mmu/) from the library's own
# freestanding sources: core/, the descriptor formats arch/*/pt_*.c, the
# arch directory's instructions, arch/generic/ and host/none/.
#   make -f tests/mmu/mmu.mk PL_ARCH=<aarch64|x86_64> [PL_VARIANT=flip|nolock|<name>] [PL_CC=gcc|clang]
#        [PL_EXTRA="-DPL_SEED=0x1234 -DPL_NOPS=1000"]  (use a PL_VARIANT name with PL_EXTRA)
# Output: build/mmu/<arch>[-<variant>]/payload.elf (x86_64: an ELF32 copy,
# payload32.elf, is what QEMU's multiboot loader accepts).
PL_ARCH ?= aarch64
PL_VARIANT ?=
PL_CC ?= gcc
HOST_ARCH := $(shell uname -m)

ifeq ($(PL_ARCH),aarch64)
PL_DIR := arm64
PL_TRIPLE := aarch64-linux-gnu
PL_ARCHFLAGS := -mno-outline-atomics -mstrict-align
PL_HANDLER_FLAGS := -mgeneral-regs-only
else
PL_DIR := x86
PL_TRIPLE := x86_64-linux-gnu
PL_ARCHFLAGS := -mno-red-zone -mcmodel=small -fno-pic
PL_HANDLER_FLAGS := -mgeneral-regs-only
endif
PL_ARCHFLAGS += -fno-pie -fno-stack-protector -fno-asynchronous-unwind-tables \
                -ffunction-sections -fdata-sections

ifeq ($(PL_CC),clang)
CC := clang --target=$(PL_TRIPLE)
else ifeq ($(HOST_ARCH),$(PL_ARCH))
CC := gcc
else
CC := $(PL_TRIPLE)-gcc
endif
ifeq ($(HOST_ARCH),$(PL_ARCH))
LD := ld
OBJCOPY := objcopy
else
LD := $(PL_TRIPLE)-ld
OBJCOPY := $(PL_TRIPLE)-objcopy
endif

O := build/mmu/$(PL_ARCH)$(if $(PL_VARIANT),-$(PL_VARIANT))
CINC := $(shell $(CC) -print-file-name=include)
AO_INC := build/include-ao
PL_CFLAGS = -std=c11 -Wall -Wextra -Werror -O2 -g -ffreestanding -fno-builtin -nostdinc \
             $(PL_ARCHFLAGS) -isystem $(CINC) -Icore/freestanding -Iinclude -Icore \
             -Iarch/$(PL_DIR) -I$(AO_INC) -Itests/mmu/common -Itests/mmu/$(PL_ARCH) \
             -Iexamples/hyp/common \
             $(PL_EXTRA)

LIB_SRC := $(sort $(wildcard core/*.c arch/*/pt_*.c) \
             $(filter-out arch/%/pt_%.c,$(wildcard arch/$(PL_DIR)/*.c arch/generic/*.c)) \
             $(wildcard host/none/*.c))
# Patched variants (the checks' own teeth): tests/mmu/<variant>/<file>.patch
# changes the library source <file>.c in a copy; product code holds no
# test-only branch. flip: the descriptor formats with one memory-type bit
# written wrong; nolock: shared-mode break-before-make without the locked
# entry (the SMP scenario must fail). A patch that no longer applies fails
# the build.
PATCHES := $(if $(PL_VARIANT),$(wildcard tests/mmu/$(PL_VARIANT)/*.patch))
ifneq ($(PATCHES),)
PATCHED := $(foreach f,$(patsubst tests/mmu/$(PL_VARIANT)/%.patch,%,$(PATCHES)),\
             $(filter %/$(f).c,$(LIB_SRC)))
LIB_SRC := $(filter-out $(PATCHED),$(LIB_SRC)) $(addprefix $(O)/patched/,$(PATCHED))
endif
# fmt.c: the memory primitives and snprintf, shared with examples/hyp/.
PL_SRC := $(wildcard tests/mmu/common/*.c tests/mmu/$(PL_ARCH)/*.c) examples/hyp/common/fmt.c
PL_ASM := $(wildcard tests/mmu/$(PL_ARCH)/*.S)
# The flip and nolock variants (gcc) compile only the patched files and
# the payload's own (their defines reach tests/mmu/ only: the library reads
# no PL_* or MMP_TEST_* macro); the library's other objects are the plain
# build's.
LIB_O := $(if $(and $(filter flip nolock,$(PL_VARIANT)),$(filter gcc,$(PL_CC))),build/mmu/$(PL_ARCH),$(O))
OBJS := $(patsubst %,$(LIB_O)/obj/%.o,$(filter-out $(O)/patched/%,$(LIB_SRC))) \
        $(patsubst %,$(O)/obj/%.o,$(filter $(O)/patched/%,$(LIB_SRC)) $(PL_SRC) $(PL_ASM))

all: $(O)/payload.elf $(if $(filter x86_64,$(PL_ARCH)),$(O)/payload32.elf $(O)/bochs.img)

$(AO_INC)/atomic_ops.h:
	@mkdir -p $(AO_INC)
	ln -sfn /usr/include/atomic_ops.h /usr/include/atomic_ops $(AO_INC)/

# Exception and probe code must not touch FP/SIMD registers, which the
# handlers do not save.
# The flip variant also corrupts descriptors from the payload (its test
# code only: -DMMP_TEST_FLIP_ATTR_BIT never reaches the library).
$(O)/obj/tests/mmu/%.c.o: tests/mmu/%.c $(AO_INC)/atomic_ops.h
	@mkdir -p $(@D)
	$(CC) $(PL_CFLAGS) $(PL_HANDLER_FLAGS) $(if $(filter flip,$(PL_VARIANT)),-DMMP_TEST_FLIP_ATTR_BIT) \
	    -MMD -MP -c $< -o $@
$(O)/obj/examples/hyp/common/%.c.o: examples/hyp/common/%.c
	@mkdir -p $(@D)
	$(CC) $(PL_CFLAGS) $(PL_HANDLER_FLAGS) -MMD -MP -c $< -o $@
$(O)/obj/%.c.o: %.c $(AO_INC)/atomic_ops.h
	@mkdir -p $(@D)
	$(CC) $(PL_CFLAGS) -MMD -MP -c $< -o $@
ifneq ($(LIB_O),$(O))
$(LIB_O)/obj/%.c.o: %.c $(AO_INC)/atomic_ops.h
	@mkdir -p $(@D)
	$(CC) $(PL_CFLAGS) -MMD -MP -c $< -o $@
endif
.SECONDEXPANSION:
$(O)/patched/%.c: %.c tests/mmu/$(PL_VARIANT)/$$(basename $$(notdir $$@)).patch
	@mkdir -p $(@D)
	patch -s -o $@ $< tests/mmu/$(PL_VARIANT)/$(basename $(notdir $@)).patch
$(O)/obj/$(O)/patched/%.c.o: $(O)/patched/%.c $(AO_INC)/atomic_ops.h
	@mkdir -p $(@D)
	$(CC) $(PL_CFLAGS) -iquote $(dir $*) -MMD -MP -c $< -o $@
$(O)/obj/%.S.o: %.S
	@mkdir -p $(@D)
	$(CC) $(PL_CFLAGS) -D__ASSEMBLY__ -c $< -o $@

$(O)/payload.elf: $(OBJS) tests/mmu/$(PL_ARCH)/link.ld
	$(LD) -nostdlib -static --gc-sections --no-warn-rwx-segments -z noexecstack -T tests/mmu/$(PL_ARCH)/link.ld -o $@ $(OBJS)

$(O)/payload32.elf: $(O)/payload.elf
	$(OBJCOPY) -O elf32-i386 $< $@

# Bochs has no multiboot loader: a disk image of a boot sector
# (tests/mmu/bochs/boot.S) and the flat payload, 8 x 16 x 63 sectors.
$(O)/bochs.img: $(O)/payload.elf tests/mmu/bochs/boot.S
	$(OBJCOPY) -O binary $< $(O)/payload.bin
	n=$$(( ($$(stat -c %s $(O)/payload.bin) + 511) / 512 )); \
	e=0x$$(nm $< | awk '$$3 == "_start" { print $$1 }'); \
	test $$n -le 1024 && \
	$(CC) -c -DPAYLOAD_SECTORS=$$n -DENTRY=$$e tests/mmu/bochs/boot.S -o $(O)/boot.o && \
	$(LD) -Ttext 0x7c00 --oformat binary -e _start16 -o $(O)/boot.bin $(O)/boot.o && \
	cat $(O)/boot.bin $(O)/payload.bin > $@ && truncate -s 4128768 $@

.SECONDARY:
.PHONY: all
-include $(shell find $(sort $(O)/obj $(LIB_O)/obj) -name '*.d' 2>/dev/null)
