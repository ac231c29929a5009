# make install / uninstall: GNU directory variables from configure
# (prefix, exec_prefix, bindir, libdir, includedir, mandir; each can be
# overridden on the make command line), DESTDIR for staged installs.
# Included by the top Makefile.

# `make install PREFIX=...` (the older spelling) still works.
ifdef PREFIX
prefix := $(PREFIX)
endif

INSTALL ?= install
INSTALL_PROGRAM ?= $(INSTALL) -m 755
INSTALL_DATA ?= $(INSTALL) -m 644

include mk/version.mk
HEADERS := $(sort $(wildcard include/mmport/*.h))
MAN1 := $(sort $(wildcard man/*.1))

# Where install's generated files go (the man pages, mmport.pc). Two
# installs running at once from one tree (check steps) each give their own.
GEN_B ?= build/gen

# Man page dates: SOURCE_DATE_EPOCH (reproducible builds), else the last
# commit, else today.
MAN_DATE := $(shell d=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null)}; \
              date -u $${d:+-d @$$d} +%Y-%m-%d)

# The date the pages were made with, rewritten only when it changes, so a
# new SOURCE_DATE_EPOCH remakes them.
$(GEN_B)/man/date: FORCE
	@mkdir -p $(@D)
	@echo $(MAN_DATE) | cmp -s - $@ || echo $(MAN_DATE) > $@

# Tools install and man need beyond the compiler and coreutils: a missing
# one is named, with its Debian package, instead of a shell's "not found".
need_tool = command -v $(1) >/dev/null 2>&1 || { \
  echo "make $(MAKECMDGOALS): $(2) needs $(1), which is not installed (Debian: apt-get install $(3))" >&2; \
  exit 1; }

# The section 3 pages, from the headers (scripts/gen-man3.sh).
$(GEN_B)/man/man3/.stamp: $(HEADERS) scripts/gen-man3.sh scripts/gen-man3.awk scripts/gen-man3-errors.awk \
                       $(GEN_B)/man/date
	@$(call need_tool,awk,generating the man pages from the headers,mawk; any POSIX awk will do)
	@rm -rf $(@D) && mkdir -p $(@D)
	MAN_DATE=$(MAN_DATE) scripts/gen-man3.sh $(@D) $(HEADERS)
	@touch $@
$(GEN_B)/man/man1/mmport.1: man/mmport.1 $(GEN_B)/man/date
	@mkdir -p $(@D)
	sed 's/^\.TH \([^ ]*\) 1 "[^"]*"/.TH \1 1 "$(MAN_DATE)"/' man/mmport.1 > $@
man: $(GEN_B)/man/man3/.stamp $(GEN_B)/man/man1/mmport.1

# The .pc keeps the directory variables symbolic where configure left them
# so (libdir=${exec_prefix}/lib/...), as pkg-config resolves them itself.
# Written on every install: `make install prefix=...` changes it without
# touching config.mak.
$(GEN_B)/mmport.pc: FORCE
	@mkdir -p $(@D)
	@{ echo 'prefix=$(prefix)'; \
	   echo 'exec_prefix=$(value exec_prefix)'; \
	   echo 'libdir=$(value libdir)'; \
	   echo 'includedir=$(value includedir)'; \
	   echo; \
	   echo 'Name: mmport'; \
	   echo 'Description: Fast page clearing and portable x86-64/arm64 page tables for hypervisors'; \
	   echo 'Version: $(VERSION)'; \
	   echo 'Libs: -L$${libdir} -lmmport'; \
	   echo 'Libs.private: -lpthread'; \
	   echo 'Cflags: -I$${includedir}'; } > $@

install: all man $(GEN_B)/mmport.pc
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(libdir)/pkgconfig \
	  $(DESTDIR)$(includedir)/mmport $(DESTDIR)$(mandir)/man1 $(DESTDIR)$(mandir)/man3
	$(INSTALL_DATA) $(HEADERS) $(DESTDIR)$(includedir)/mmport/
	$(INSTALL_DATA) $(NATIVE_B)/libmmport.a $(DESTDIR)$(libdir)/
	$(INSTALL_PROGRAM) $(NATIVE_B)/$(LIB_REAL) $(DESTDIR)$(libdir)/
	ln -sf $(LIB_REAL) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sf $(LIB_REAL) $(DESTDIR)$(libdir)/libmmport.so
	$(INSTALL_DATA) $(GEN_B)/mmport.pc $(DESTDIR)$(libdir)/pkgconfig/
	$(INSTALL_PROGRAM) $(NATIVE_B)/mmport $(DESTDIR)$(bindir)/
	$(INSTALL_DATA) $(GEN_B)/man/man1/mmport.1 $(DESTDIR)$(mandir)/man1/
	$(INSTALL_DATA) $(GEN_B)/man/man3/*.3 $(DESTDIR)$(mandir)/man3/
	@$(if $(DESTDIR),$(staged_hint),$(loader_hint))

# After a staged install (DESTDIR): how to build against it; after a real
# one: how the loader finds the library.
staged_hint = echo; \
  echo "Staged in $(DESTDIR). To build against the staged tree, point pkg-config at it:"; \
  echo "  PKG_CONFIG_SYSROOT_DIR=$(DESTDIR) PKG_CONFIG_LIBDIR=$(DESTDIR)$(libdir)/pkgconfig"; \
  echo "(the sysroot prefixes the -I and -L paths with $(DESTDIR); README.md, Building)."
loader_hint = echo; \
  echo "$(SONAME) is now in $(libdir). Programs linked to it find it"; \
  echo "once the loader's cache knows it: run 'ldconfig' as root (or add"; \
  echo "$(libdir) to LD_LIBRARY_PATH, or /etc/ld.so.conf.d/ when it is not"; \
  echo "a standard directory)."

# Removes exactly what install put there (the man3 names from the build).
uninstall: man
	rm -f $(DESTDIR)$(bindir)/mmport $(DESTDIR)$(libdir)/libmmport.a \
	  $(DESTDIR)$(libdir)/$(LIB_REAL) $(DESTDIR)$(libdir)/$(SONAME) \
	  $(DESTDIR)$(libdir)/libmmport.so $(DESTDIR)$(libdir)/pkgconfig/mmport.pc \
	  $(DESTDIR)$(mandir)/man1/mmport.1
	for m in $(GEN_B)/man/man3/*.3; do rm -f "$(DESTDIR)$(mandir)/man3/$${m##*/}"; done
	rm -f $(addprefix $(DESTDIR)$(includedir)/mmport/,$(notdir $(HEADERS)))
	-rmdir $(DESTDIR)$(includedir)/mmport 2>/dev/null

FORCE:
.PHONY: install uninstall man FORCE
