#!/usr/bin/env bash
# The Kafka Streams check (../streams) with processing.guarantee=exactly_once_v2: the
# same word count on transactions, held to every output record a read_committed reader
# sees ((w,1), ..., (w,N) once each, no duplicate, gap or aborted record), whose last
# step SIGKILLs an instance inside one of its open transactions (seen Ongoing with
# DescribeTransactions) while records flow, and must then count exactly too.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
STREAMS_GUARANTEE=exactly_once_v2 STREAMS_NAME=streams-eos exec bash "$HERE/../streams/check.sh"
