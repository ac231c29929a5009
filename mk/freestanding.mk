# The embeddable part of mmport as the one relocatable object a bare-metal
# hypervisor links (docs/DESIGN.md, "Linking the freestanding object"):
# core, the descriptor formats, the arch's instructions, arch/generic and
# host/none, compiled -ffreestanding -nostdinc (only the compiler's own
# <stdint.h>, <stddef.h>, <stdbool.h>) and linked with ld -r.
#   make -f mk/freestanding.mk FARCH=<x86_64|aarch64> FCC=<compiler> FB=<dir>
#        [FREESTANDING_CFLAGS=<the hypervisor's own flags>]
# Output: $(FB)/mmport-freestanding.o. Driven by `make freestanding` and
# scripts/check-freestanding.sh.
include config.mak

FDIR := $(if $(filter x86_64,$(FARCH)),x86,$(if $(filter aarch64,$(FARCH)),arm64))
ifeq ($(FDIR),)
$(error FARCH '$(FARCH)': x86_64 or aarch64)
endif
ifeq ($(strip $(FCC)),)
$(error no compiler for $(FARCH): FREESTANDING_CC=<compiler>, or configure a cross compiler)
endif

all: $(FB)/mmport-freestanding.o

include mk/ao.mk

FFMT := $(wildcard arch/*/pt_*.c)
FSRC := $(sort $(wildcard core/*.c) $(FFMT) $(wildcard host/none/*.c) \
          $(filter-out $(FFMT),$(wildcard arch/$(FDIR)/*.c arch/generic/*.c)))
FOBJ := $(patsubst %.c,$(FB)/obj/%.o,$(FSRC))
# aarch64: inline LSE / LL-SC atomics; the out-of-line helpers the compiler
# calls by default live in libgcc, which a hypervisor may not link.
FARCH_CFLAGS := $(if $(filter aarch64,$(FARCH)),-mno-outline-atomics)
# The caller's flags come last: they may change optimisation or code model.
FCFLAGS := -std=c11 -Wall -Wextra -Werror -O2 -ffreestanding -fno-builtin -nostdinc \
           $(FARCH_CFLAGS) $(FREESTANDING_CFLAGS)
FCPPFLAGS := -isystem $(shell $(FCC) -print-file-name=include) -Icore/freestanding -Iinclude \
             -Icore -Iarch/$(FDIR) -I$(AO_INC)
# The linker the compiler itself would use (cross: <triple>-ld).
FLD := $(shell $(FCC) -print-prog-name=ld)

# The flags the objects were built with, rewritten only when they change,
# so new FREESTANDING_CFLAGS rebuild everything.
$(FB)/flags: FORCE
	@mkdir -p $(@D)
	@echo '$(FCC) $(FCFLAGS)' | cmp -s - $@ || echo '$(FCC) $(FCFLAGS)' > $@

$(FB)/obj/%.o: %.c $(FB)/flags | $(AO_INC)/atomic_ops.h
	@mkdir -p $(@D)
	$(FCC) $(FCPPFLAGS) $(FCFLAGS) -MMD -MP -c $< -o $@

$(FB)/mmport-freestanding.o: $(FOBJ)
	$(FLD) -r -o $@ $(FOBJ)

FORCE:
.PHONY: all FORCE
-include $(FOBJ:.o=.d)
