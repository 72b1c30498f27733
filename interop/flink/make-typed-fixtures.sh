#!/bin/sh
# Remakes the committed typed-records fixtures under test/fixtures/flink/typed/<release>/ (see
# test/fixtures/flink/README.md): TypedWriter's retained checkpoint (<job-id>/chk-N/...) and
# expected/ (records.jsonl, types.json) from RecordsOracle, Flink's own reading, and
# expected/flink-stats.json: Flink's checkpoint statistics of the persisted in-flight data.
#   ./make-typed-fixtures.sh [RELEASE...]    RELEASE = 1.20.5 | 2.3.0; default: both
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${TMPDIR:-/tmp}/spillway-flink-typed-fixtures
for release in ${*:-1.20.5 2.3.0}; do
  case $release in
    1.20.*) profile=flink1 ;;
    2.*) profile=flink2 ;;
    *) echo "unknown release $release" >&2; exit 2 ;;
  esac
  dest="$repo/test/fixtures/flink/typed/$release"
  rm -rf "$work/$release" "$dest"
  mkdir -p "$work/$release" "$dest"
  chk=$("$here/run.sh" "$profile" TypedWriter --out "$work/$release" | sed -n 's/^CHECKPOINT //p')
  SPILLWAY_FLINK_NO_BUILD=1 "$here/run.sh" "$profile" RecordsOracle --checkpoint "$chk" --expected "$dest/expected"
  cp -R "$(dirname "$chk")" "$dest/"
  # Flink's own statistics of that checkpoint's persisted in-flight data (TypedWriter, REST API).
  cp "$work/$release/flink-stats.json" "$dest/expected/flink-stats.json"
  printf '{ "flink": "%s", "checkpoint": "%s" }\n' "$release" "$(basename "$(dirname "$chk")")/$(basename "$chk")" > "$dest/typed.json"
  rm -rf "$work/$release"
  echo "typed/$release: $(du -sh "$dest" | cut -f1)"
done
rmdir "$work" 2>/dev/null || true
