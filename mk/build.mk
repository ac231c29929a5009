# One build configuration of mmport: library, CLI and check suites.
# Invoked by the top Makefile as
#   make -f mk/build.mk B=<dir> ARCH=<arch> CC=<cc> [VFLAGS=...] [TEST_LIBS=...]
include config.mak

ARCH_DIR := $(if $(filter x86_64,$(ARCH)),x86,$(if $(filter aarch64,$(ARCH)),arm64,generic))

# Descriptor formats (arch/*/pt_*.c) are data and build on every host; the
# rest of an arch directory is instructions and builds only for its arch.
FORMAT_SRC := $(sort $(wildcard arch/*/pt_*.c))
ARCH_SRC := $(sort $(filter-out $(FORMAT_SRC),$(wildcard arch/$(ARCH_DIR)/*.c arch/generic/*.c)))
CORE_SRC := $(sort $(wildcard core/*.c))
HOST_SRC := $(sort $(wildcard host/linux/*.c))
LIB_SRC := $(CORE_SRC) $(FORMAT_SRC) $(ARCH_SRC) $(HOST_SRC)
TOOL_SRC := $(sort $(wildcard tools/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))
MODEL_SRC := $(sort $(wildcard tests/model/*.c))
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))

# The flags the build needs come first; the user's CFLAGS / CPPFLAGS /
# LDFLAGS (configure, or `make CFLAGS=...`) are added after them, so they
# can change optimisation or add hardening but never drop -fPIC, C11 or the
# hidden visibility the export list relies on.
REQ_CFLAGS := -std=c11 -Wall -Wextra -Werror -fPIC -fvisibility=hidden
ALL_CPPFLAGS = -Iinclude -Icore -Iarch/$(ARCH_DIR) -I$(AO_INC) -I$(B)/gen $(DEFS) $(CPPFLAGS)
ALL_CFLAGS = $(REQ_CFLAGS) $(VFLAGS) $(OBJ_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(VFLAGS) $(LDFLAGS)

include mk/version.mk
LIB_A := $(B)/libmmport.a
LIB_SO := $(B)/$(LIB_REAL)
CLI := $(B)/mmport
TEST_BIN := $(B)/tests/mmport-test

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
# Flags only the library's objects get (configure --enable-general-regs-only).
$(call obj,$(LIB_SRC)): OBJ_CFLAGS = $(LIB_CFLAGS)

all: $(LIB_A) $(LIB_SO) $(CLI)
tests: $(TEST_BIN)

include mk/ao.mk

# Generated registries: adding tests/test_foo.c, tools/cmd_foo.c or
# tools/bench_foo.c is all it takes to register a suite or a command.
$(B)/gen/suites.h: $(TEST_SRC) mk/build.mk
	@mkdir -p $(@D)
	@for f in $(filter tests/test_%.c,$(TEST_SRC)); do \
	  n=$${f#tests/test_}; echo "SUITE($${n%.c})"; done > $@
$(B)/gen/commands.h: $(TOOL_SRC) mk/build.mk
	@mkdir -p $(@D)
	@for f in $(filter tools/cmd_%.c,$(TOOL_SRC)); do \
	  n=$${f#tools/cmd_}; echo "COMMAND($${n%.c})"; done > $@
	@for f in $(filter tools/bench_%.c,$(TOOL_SRC)); do \
	  n=$${f#tools/bench_}; echo "BENCH($${n%.c})"; done >> $@

# Order-only: the objects that include a generated list depend on it
# through their .d files, so a tools/ edit rebuilds those, not everything.
$(B)/obj/%.o: %.c | $(AO_INC)/atomic_ops.h $(B)/gen/suites.h $(B)/gen/commands.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB_A): $(call obj,$(LIB_SRC))
	@rm -f $@
	$(AR) rcs $@ $^

$(LIB_SO): $(call obj,$(LIB_SRC)) mk/exports.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=mk/exports.map \
	  $(ALL_LDFLAGS) -o $@ $(call obj,$(LIB_SRC)) -lpthread
	ln -sf $(notdir $@) $(B)/$(SONAME)
	ln -sf $(notdir $@) $(B)/libmmport.so

$(CLI): $(call obj,$(TOOL_SRC)) $(LIB_A)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ -lpthread -lm

$(TEST_BIN): $(call obj,$(TEST_SRC)) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(TEST_LIBS) -lpthread -lm

# Fuzz targets: with FUZZ_ENGINE=libfuzzer linked against libFuzzer (clang,
# -fsanitize=fuzzer), otherwise against fuzz/replay.c, which runs a corpus.
FUZZ_BINS := $(patsubst fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRC))
FUZZ_MAIN := $(if $(filter libfuzzer,$(FUZZ_ENGINE)),,$(B)/obj/fuzz/replay.o)
fuzz: $(FUZZ_BINS)
$(B)/fuzz/%: $(B)/obj/fuzz/%.o $(call obj,$(MODEL_SRC)) $(FUZZ_MAIN) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) $(FUZZ_LDFLAGS) -o $@ $^ -lpthread -lm

.PHONY: all tests fuzz
# The fuzz targets' objects are only reached through a pattern chain, which
# makes them intermediate: make would delete them after each link, and
# every later build (a planted copy of the tree, say) compile them again.
.SECONDARY:
-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
