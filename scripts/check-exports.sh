#!/bin/sh
# Fails if the shared library exports any symbol outside the mmp_* namespace.
set -eu
bad=$(nm -D --defined-only "$1" | awk '$2 ~ /[A-Z]/ && $2 != "A" {print $3}' | grep -v '^mmp_' || true)
if [ -n "$bad" ]; then
    echo "FAIL: exported outside mmp_*:" $bad
    exit 1
fi
echo "PASS: $(nm -D --defined-only "$1" | grep -c ' mmp_') symbols exported, all mmp_*"
