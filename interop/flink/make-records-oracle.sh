#!/bin/sh
# Writes Flink's own reading of every element (RecordsOracle --job writer: StreamElementSerializer
# over TupleSerializer(Long, String)) for the committed Writer fixtures under test/fixtures/flink/:
# <fixture>/records/{records.jsonl.gz,types.json}; for 2.3.0-pair one such dir per checkpoint,
# <fixture>/records/chk-N/. Needs no Writer run: it reads the committed checkpoints.
#   ./make-records-oracle.sh [NAME...]    NAME = e.g. 1.20.5-file, 2.3.0-pair; default: all nine
# The file-merging fixtures name absolute file: URIs of the machine that wrote them
# (fixture.json originalJobDir): for the run that path is a symlink to the fixture's job dir.
set -e
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
fixtures="$repo/test/fixtures/flink"
all="1.20.5-file 1.20.5-inline 1.20.5-merging 1.20.5-watermarks 2.3.0-file 2.3.0-inline 2.3.0-merging 2.3.0-watermarks 2.3.0-pair"
built=""
field() { sed -n "s/^  \"$2\": \"\\(.*\\)\",\$/\\1/p" "$1/fixture.json"; }
oracle() { # profile checkpoint-dir out-dir
  rm -rf "$3"
  SPILLWAY_FLINK_NO_BUILD=1 "$here/run.sh" "$1" RecordsOracle --job writer --checkpoint "$2" --expected "$3"
  gzip -9n "$3/records.jsonl"
}
for name in ${*:-$all}; do
  case $name in
    1.20.*) profile=flink1 ;;
    2.*) profile=flink2 ;;
    *) echo "unknown fixture $name" >&2; exit 2 ;;
  esac
  case " $built " in *" $profile "*) ;; *) "$here/build.sh" "$profile" >&2; built="$built $profile" ;; esac
  dir="$fixtures/$name"
  if [ ! -f "$dir/fixture.json" ]; then
    for chk in "$dir"/*/chk-*; do oracle "$profile" "$chk" "$dir/records/$(basename "$chk")"; done
  else
    original=$(field "$dir" originalJobDir)
    linked=""
    if [ ! -e "$original" ]; then
      mkdir -p "$(dirname "$original")"
      ln -s "$dir/$(basename "$original")" "$original"
      linked=$original
    fi
    oracle "$profile" "$dir/$(field "$dir" checkpoint)" "$dir/records"
    if [ -n "$linked" ]; then
      rm "$linked"
      rmdir -p "$(dirname "$linked")" 2>/dev/null || true
    fi
  fi
  echo "$name: records $(du -sk "$dir/records" | cut -f1) KiB"
done
