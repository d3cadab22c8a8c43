#!/usr/bin/env bash
# The Kafka Streams check (../streams) with processing.guarantee=exactly_once_v2: the
# same word count on transactions, whose last step (an instance SIGKILLed while records
# flow) must then count exactly too.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
STREAMS_GUARANTEE=exactly_once_v2 STREAMS_NAME=streams-eos exec bash "$HERE/../streams/check.sh"
