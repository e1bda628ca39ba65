#!/bin/sh
# check_cli.sh PROGRAM COMMAND...: the command-line convention (train/cli_usage.h) holds for
# COMMAND: `--help` exits 0 with "usage: ... PROGRAM" on stdout; `--bogus-flag` exits non-zero
# with the usage and the flag's name on stderr. With UNCHANGED_FILE set, neither run may
# change that file or folder (the tools/ scripts must not overwrite saved results).
set -u
program=$1
shift
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- stdout:" >&2
  cat "$out" >&2
  echo "--- stderr:" >&2
  cat "$err" >&2
  exit 1
}
# UNCHANGED_FILE may name a folder: then none of its files may change, appear or vanish.
checksum() {
  if [ -d "${UNCHANGED_FILE:-}" ]; then
    find "$UNCHANGED_FILE" -type f -exec cksum {} + | sort
  else
    cat "${UNCHANGED_FILE:-/dev/null}" 2>/dev/null | cksum
  fi
}
before=$(checksum)
"$@" --help >"$out" 2>"$err"
status=$?
[ "$status" -eq 0 ] || fail "$program --help exited with $status, expected 0"
grep -q "^usage: .*$program" "$out" || fail "$program --help printed no 'usage: ... $program' on stdout"
"$@" --bogus-flag >"$out" 2>"$err"
status=$?
[ "$status" -ne 0 ] || fail "$program --bogus-flag exited with 0"
grep -q "^usage: .*$program" "$err" || fail "$program --bogus-flag printed no usage on stderr"
grep -q -- "--bogus-flag" "$err" || fail "$program --bogus-flag did not name the flag"
[ "$(checksum)" = "$before" ] || fail "$UNCHANGED_FILE was changed"
echo "$program: --help exits 0 with the usage; --bogus-flag exits $status with the usage"
