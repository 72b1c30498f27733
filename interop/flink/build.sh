#!/bin/sh
# Builds the harness for one Flink release (Maven profile flink1 or flink2) into
# target/<profile>/, one Maven at a time: the test files that use the harness run in parallel,
# and two Maven runs compiling into the same target/ at once clash.
#   ./build.sh flink1|flink2
set -e
here=$(cd "$(dirname "$0")" && pwd)
profile=$1
mkdir -p "$here/target"
cd "$here"
if command -v flock >/dev/null 2>&1; then
  exec flock "target/.build.lock" mvn -q -B -Dstyle.color=never -P "$profile" compile dependency:build-classpath
fi
exec mvn -q -B -Dstyle.color=never -P "$profile" compile dependency:build-classpath
