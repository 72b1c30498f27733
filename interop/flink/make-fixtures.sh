#!/bin/sh
# Remakes the committed real-Flink fixtures under test/fixtures/flink/ (see its README.md).
#   ./make-fixtures.sh [NAME...]    NAME = <release>-<variant>, e.g. 1.20.5-file; default: all
# Each fixture: the retained checkpoint the Writer left (<job-id>/chk-N/..., older chk-N removed),
# expected/ from the Oracle (Flink's own reading), fixture.json, and records/ from RecordsOracle
# (every element as Flink deserializes it; make-records-oracle.sh remakes only that part).
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${TMPDIR:-/tmp}/spillway-flink-fixtures
all="1.20.5-file 1.20.5-inline 1.20.5-merging 2.3.0-file 2.3.0-inline 2.3.0-merging"
names=${*:-$all}
for name in $names; do
  release=${name%%-*}
  variant=${name#*-}
  case $release in
    1.20.*) profile=flink1 ;;
    2.*) profile=flink2 ;;
    *) echo "unknown release $release" >&2; exit 2 ;;
  esac
  case $variant in
    file) flags="--threshold 0b" ;;
    inline) flags="--threshold 20kb --subtasks-per-file 1" ;;
    merging) flags="--threshold 0b --file-merging" ;;
    watermarks) flags="--threshold 0b --watermarks" ;;
    *) echo "unknown variant $variant" >&2; exit 2 ;;
  esac
  dest="$repo/test/fixtures/flink/$name"
  rm -rf "$work/$name" "$dest"
  mkdir -p "$work/$name" "$dest"
  chk=$("$here/run.sh" "$profile" Writer --out "$work/$name" --checkpoints 3 $flags | sed -n 's/^CHECKPOINT //p')
  job=$(dirname "$chk")
  SPILLWAY_FLINK_NO_BUILD=1 "$here/run.sh" "$profile" Oracle --checkpoint "$chk" --expected "$dest/expected"
  cp -R "$job" "$dest/"
  jobid=$(basename "$job")
  keyed=$(cd "$dest/expected" && ls -d */rescale-0-of-2 | cut -d/ -f1)
  version=$(sed -n 's/^  "version": \([0-9]*\),$/\1/p' "$dest/expected/ls.json")
  cat > "$dest/fixture.json" <<JSON
{
  "flink": "$release",
  "variant": "$variant",
  "writerFlags": "$flags",
  "metadataVersion": $version,
  "checkpoint": "$jobid/$(basename "$chk")",
  "originalCheckpointDir": "$chk",
  "originalJobDir": "$job",
  "keyedOperator": "$keyed",
  "key": "long",
  "value": "Tuple2<Long, String>: the key (a Long) is the record's first field",
  "rescale": ["0/2", "1/2", "0/3", "1/3", "2/3"]
}
JSON
  rm -rf "$work/$name"
  # Flink's reading of every element (RecordsOracle --job writer) into $dest/records/.
  "$here/make-records-oracle.sh" "$name"
  echo "$name: $(du -sh "$dest" | cut -f1)"
done
rmdir "$work" 2>/dev/null || true
