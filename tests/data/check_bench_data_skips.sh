#!/bin/sh
# check_bench_data_skips.sh WRITER BENCH_DATA WORK_DIR: bench_data over a folder with a bad PNG,
# a truncated JPEG and a text file (written by WRITER, data_write_bad_folder) completes, names
# each bad file exactly once with its reason, and reports that it skipped 3 of the 11 files.
set -u
writer=$1
bench_data=$2
dir=$3
fail() {
  echo "FAIL: $1" >&2
  echo "--- bench_data stderr:" >&2
  cat "$dir.err" >&2
  exit 1
}
rm -rf "$dir"
"$writer" "$dir" || exit 1
"$bench_data" --data "$dir" --workers 1 --batch-size 2 --batches 2 --warmup 1 --repeat 1 \
  --image-size 32 --no-baseline >"$dir.out" 2>"$dir.err"
status=$?
[ "$status" -eq 0 ] || fail "bench_data exited with $status"
grep -q "decode full size" "$dir.out" || fail "no table on stdout"
for expected in "bad_header.png: corrupt PNG header: unknown image type" \
                "truncated.jpg: truncated JPEG" \
                "not_an_image.jpg: not a recognised image format"; do
  name=${expected%%:*}
  grep -q "skipping $dir/bad/$expected" "$dir.err" || fail "no 'skipping $dir/bad/$expected'"
  count=$(grep -o "$dir/bad/$name" "$dir.err" | wc -l)
  [ "$count" -eq 1 ] || fail "$name named $count times, expected once"
done
grep -q "skipped 3 of 11 files" "$dir.err" || fail "no 'skipped 3 of 11 files'"
echo "bench_data skipped and named the 3 bad files once each"
