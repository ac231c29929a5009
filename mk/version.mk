# The release, from the public header (one place): MMP_VERSION_STRING.
VERSION := $(shell sed -n 's/^\#define MMP_VERSION_STRING "\(.*\)"/\1/p' include/mmport/common.h)
LIB_REAL := libmmport.so.$(VERSION)
SONAME := libmmport.so.$(firstword $(subst ., ,$(VERSION)))
