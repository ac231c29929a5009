#!/bin/sh
# Runs (or merges the findings of) every libFuzzer target in build/fuzz/fuzz/.
# Usage: fuzz.sh run|merge     (FUZZ_SECONDS per target for run)
# Inputs stay at most FUZZ_MAX_LEN bytes (fuzz_pt: about 50 operations),
# which keeps the corpus replay in `make check` fast.
set -u
mode=$1
status=0
for t in build/fuzz/fuzz/fuzz_*; do
    [ -x "$t" ] || { echo "no fuzz targets built"; exit 1; }
    n=${t##*/fuzz_}
    mkdir -p "build/fuzz/corpus/$n" "fuzz/corpus/$n"
    if [ "$mode" = merge ]; then
        "$t" -merge=1 "fuzz/corpus/$n" "build/fuzz/corpus/$n" 2>&1 | tail -1
        continue
    fi
    echo "== fuzz $n for ${FUZZ_SECONDS:-60} s"
    log=build/fuzz/$n.log
    # New inputs go to the first (work) directory; the checked-in corpus is read only.
    "$t" -max_total_time="${FUZZ_SECONDS:-60}" -max_len="${FUZZ_MAX_LEN:-400}" \
        -print_final_stats=1 -artifact_prefix=build/fuzz/ \
        "build/fuzz/corpus/$n" "fuzz/corpus/$n" > "$log" 2>&1
    rc=$?
    grep -E 'stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY' "$log"
    echo "corpus: $(ls "fuzz/corpus/$n" | wc -l) checked in, $(ls "build/fuzz/corpus/$n" | wc -l) found"
    [ $rc = 0 ] || { echo "FAIL: fuzz $n (see $log)"; status=1; }
done
exit $status
