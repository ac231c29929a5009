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

# Building needs only a C compiler and the libatomic_ops headers. Each
# target installs what it needs and no more (Debian, as root;
# scripts/install-deps.sh names the packages): `make run` the compiler,
# make and libatomic_ops; `make fuzz` clang and libFuzzer besides; `make
# check` and `make deps` every test tool, then configure again with the
# same arguments when it had missed some.
DEPS_FOR := $(if $(filter check deps guest,$(MAKECMDGOALS)),check,$(if \
              $(filter fuzz,$(MAKECMDGOALS)),fuzz,$(if $(filter run,$(MAKECMDGOALS)),run)))
config.mak: configure
	$(if $(DEPS_FOR),@scripts/install-deps.sh $(DEPS_FOR))
	@if [ -x config.status ]; then ./config.status; else ./configure; fi

deps: config.mak
	@scripts/install-deps.sh check
	@$(if $(MISSING_TOOLS),echo "configure again: it had not found$(MISSING_TOOLS)" && ./config.status,:)
deps-run: config.mak
	@scripts/install-deps.sh run
deps-fuzz: config.mak
	@scripts/install-deps.sh fuzz
	@$(if $(filter $(or $(CLANG),clang),$(MISSING_TOOLS)),echo "configure again: it had not found clang" && ./config.status,:)

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
fuzz: deps-fuzz
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

run: deps-run
	+@$(MAKE) --no-print-directory all
	$(NATIVE_B)/mmport demo

# The object a bare-metal hypervisor links (docs/DESIGN.md, "Linking the
# freestanding object"): build/freestanding-<arch>/mmport-freestanding.o.
# FREESTANDING_ARCH=aarch64 builds it with the configured cross compiler;
# FREESTANDING_CC and FREESTANDING_CFLAGS (the hypervisor's own flags, e.g.
# -mgeneral-regs-only -mcmodel=kernel) override.
FREESTANDING_ARCH ?= $(ARCH)
FREESTANDING_CC ?= $(if $(filter $(ARCH),$(FREESTANDING_ARCH)),$(CC),$(CROSS_CC))
FREESTANDING_B = build/freestanding-$(FREESTANDING_ARCH)
freestanding: config.mak
	+@$(MAKE) --no-print-directory -f mk/freestanding.mk FARCH="$(FREESTANDING_ARCH)" \
	  FCC="$(FREESTANDING_CC)" FB="$(FREESTANDING_B)" FREESTANDING_CFLAGS="$(FREESTANDING_CFLAGS)"
	@echo "$(FREESTANDING_B)/mmport-freestanding.o: link it with your hypervisor (docs/DESIGN.md)"

# The reference hypervisor (examples/hyp/, docs/hypervisor.md): fetches the
# guests, builds it, boots Debian's kernel in each configuration once and
# prints the summaries (the same runs as the check step "guest").
guest: deps
	@sh scripts/check.d/guest.sh

include mk/install.mk

clean:
	rm -rf build

distclean: clean
	rm -f config.mak config.status

.PHONY: fuzz fuzz-run fuzz-merge all deps deps-run deps-fuzz fuzz-build build-native build-asan build-tsan \
        build-cross check check-run run freestanding guest clean distclean
