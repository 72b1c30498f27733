#!/bin/sh
# Builds the harness for one Flink release (Maven profile flink1 = 1.20.x, flink2 = 2.x) and runs
# one of its main classes:  ./run.sh flink1|flink2 Writer|Oracle ARGS...
set -e
here=$(cd "$(dirname "$0")" && pwd)
profile=$1
main=$2
shift 2
cd "$here"
if [ -z "$SPILLWAY_FLINK_NO_BUILD" ]; then
  "$here/build.sh" "$profile" >&2
fi
exec java -cp "target/$profile/classes:$(cat "target/$profile/classpath.txt")" "dev.spillway.flink.$main" "$@"
