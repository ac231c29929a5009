# The libatomic_ops headers alone in one include directory (configure's
# AO_DIR is usually /usr/include: -I there would let the host's libc
# headers into freestanding and cross builds). Included by mk/build.mk and
# mk/freestanding.mk.
AO_INC := build/include-ao

$(AO_INC)/atomic_ops.h:
	@mkdir -p $(AO_INC)
	ln -sfn $(AO_DIR)/atomic_ops.h $(AO_DIR)/atomic_ops $(AO_INC)/
