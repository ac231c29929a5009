# The release, from the public header (one place): MMP_VERSION_STRING.
ifeq ($(shell command -v sed),)
$(error make needs sed (to read the version from include/mmport/common.h), which is not installed (Debian: apt-get install sed))
endif
VERSION := $(shell sed -n 's/^\#define MMP_VERSION_STRING "\([^"]*\)".*/\1/p' include/mmport/common.h)
# Every file name below (and uninstall's rm) is built from it: stop here
# rather than with a malformed one.
ifeq ($(shell echo '$(VERSION)' | grep -Ex '[0-9]+\.[0-9]+\.[0-9]+'),)
$(error include/mmport/common.h: no MMP_VERSION_STRING "MAJOR.MINOR.PATCH" found (got '$(VERSION)'))
endif
LIB_REAL := libmmport.so.$(VERSION)
SONAME := libmmport.so.$(firstword $(subst ., ,$(VERSION)))
