# mmport top-level Makefile. `make` builds the library and CLI for the
# configured target; `make check` runs every suite; `make run` the main job.
-include config.mak

NATIVE_B := build/$(ARCH)
SUB := $(MAKE) --no-print-directory -f mk/build.mk

# Build configurations: the configured target, the same under ASan/UBSan
# (built with clang, so both compilers are exercised), and aarch64 (cross).
native = $(SUB) B=$(NATIVE_B) ARCH=$(ARCH) CC="$(CC)" VFLAGS="$(PRIMARY_SAN)" \
         TEST_LIBS="$(CHECK_LIBS)"
asan = $(SUB) B=build/$(ARCH)-asan ARCH=$(ARCH) CC="$(CLANG)" \
       VFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
       TEST_LIBS="$(CHECK_LIBS)"
# ThreadSanitizer: libatomic_ops sees it and switches to the __atomic builtins,
# which TSan understands.
tsan = $(SUB) B=build/$(ARCH)-tsan ARCH=$(ARCH) CC="$(CLANG)" \
       VFLAGS="-fsanitize=thread" TEST_LIBS="$(CHECK_LIBS)"
cross = $(SUB) B=build/aarch64 ARCH=aarch64 CC="$(CROSS_CC)" AR=aarch64-linux-gnu-ar \
        TEST_LIBS="$(CROSS_CHECK_LIBS)"

all: config.mak
	+@$(native) all

# Building needs only a C compiler and the libatomic_ops headers; only the
# check and run targets install the test tools (Debian, as root), then
# configure again with the same arguments when it had missed some.
NEEDS_DEPS := $(filter check run fuzz deps,$(MAKECMDGOALS))
config.mak: configure
	$(if $(NEEDS_DEPS),@scripts/install-deps.sh)
	@if [ -x config.status ]; then ./config.status; else ./configure; fi

deps: config.mak
	@scripts/install-deps.sh
	@$(if $(MISSING_TOOLS),echo "configure again: it had not found$(MISSING_TOOLS)" && ./config.status,:)

# The build pieces scripts/check.sh drives; each usable on its own.
build-native: config.mak
	+@$(native) all tests
build-asan: config.mak
	+@$(asan) all tests
build-tsan: config.mak
	+@$(tsan) tests
build-cross: config.mak
	+@$(if $(CROSS_CC),$(cross) all tests,echo "no cross compiler configured")

# Coverage-guided fuzzing (clang libFuzzer + ASan/UBSan) for FUZZ_SECONDS
# per target, starting from the checked-in corpus; new inputs collect in
# build/fuzz/corpus/. `make fuzz-merge` folds the interesting ones back.
FUZZ_SECONDS ?= 60
fuzz = $(SUB) B=build/fuzz ARCH=$(ARCH) CC="$(CLANG)" FUZZ_ENGINE=libfuzzer \
       VFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all" \
       FUZZ_LDFLAGS="-fsanitize=fuzzer"
fuzz: deps
	+@$(MAKE) --no-print-directory fuzz-run
fuzz-build: config.mak
	+@$(fuzz) fuzz
fuzz-run: fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh run
fuzz-merge:
	@scripts/fuzz.sh merge

# check and run read config.mak again (a sub-make) after deps may have
# re-run configure.
check: deps
	+@$(MAKE) --no-print-directory check-run
check-run:
	+@ARCH="$(ARCH)" CROSS_CC="$(CROSS_CC)" QEMU_AARCH64="$(QEMU_AARCH64)" \
	  MISSING_TOOLS="$(MISSING_TOOLS)" scripts/check.sh

run: deps
	+@$(MAKE) --no-print-directory all
	$(NATIVE_B)/mmport demo

include mk/install.mk

clean:
	rm -rf build

distclean: clean
	rm -f config.mak config.status

.PHONY: fuzz fuzz-build fuzz-run fuzz-merge all deps build-native build-asan build-tsan build-cross check check-run \
        run clean distclean
