#!/usr/bin/env bash
# The whole test suite: install what is missing, build (release preset), run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Apache Kafka's jars for the real-broker tier (label kafka), from Maven once into .cache/kafka.
scripts/kafka_cluster.sh fetch
scripts/build.sh release
ctest --preset release
