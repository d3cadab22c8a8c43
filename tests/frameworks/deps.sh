#!/usr/bin/env bash
# Builds every framework project (tests/frameworks/*/pom.xml) with Maven: its classes
# into target/classes, its resolved dependency classpath into target/classpath. The
# jars come from Maven Central into ~/.m2, which makes a second run offline and quick.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
for pom in "$HERE"/*/pom.xml; do
    mvn -B -q -f "$pom" package dependency:build-classpath -Dmdep.outputFile=target/classpath \
        -DskipTests || { echo "framework-deps: cannot build $pom" >&2; exit 1; }
done
