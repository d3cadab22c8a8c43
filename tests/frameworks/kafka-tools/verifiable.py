#!/usr/bin/env python3
"""Accounts kafka-verifiable-producer's and kafka-verifiable-consumer's JSON events
(one object a line on their stdout) for tests/frameworks/kafka-tools/check.sh.

    verifiable.py PRODUCER.out CONSUMER.out

Prints one line per problem and exits 1 if there is any; otherwise prints
"acked N consumed N partitions P" and exits 0. What must hold, as against a Kafka
broker: the producer acked every record it sent (its own tool_data figures and its
producer_send_success events agree); each partition's acked offsets run 0..n-1 with
no gap or repeat; the consumer got exactly the acked records, each once, at the
offsets the producer was told; and its last successful commit per partition is that
partition's end (the last offset + 1).
"""
import json
import sys


def events(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                yield json.loads(line)


def main(producer_out, consumer_out):
    problems = []
    acked = {}  # (partition, offset) -> value
    tool_data = None
    for e in events(producer_out):
        if e["name"] == "producer_send_success":
            where = (e["partition"], e["offset"])
            if where in acked:
                problems.append(f"offset {where} acked twice ({acked[where]!r}, {e['value']!r})")
            acked[where] = e["value"]
        elif e["name"] == "producer_send_error":
            problems.append(f"send error: {e.get('exception')}: {e.get('message')}")
        elif e["name"] == "tool_data":
            tool_data = e
    if tool_data is None:
        problems.append("the producer printed no tool_data event (it did not finish)")
    elif not (tool_data["sent"] == tool_data["acked"] == len(acked)):
        problems.append(f"producer: sent {tool_data['sent']}, acked {tool_data['acked']}, "
                        f"{len(acked)} producer_send_success events")
    # Its values are its sequence numbers: each of 0..sent-1 acked once.
    if tool_data and sorted(acked.values(), key=int) != [str(i) for i in range(tool_data["sent"])]:
        problems.append("the acked values are not 0..sent-1, each once")

    ends = {}
    for partition, offset in acked:
        ends[partition] = max(ends.get(partition, -1), offset)
    for partition, last in ends.items():
        offsets = sorted(o for p, o in acked if p == partition)
        if offsets != list(range(last + 1)):
            problems.append(f"partition {partition}: acked offsets are not 0..{last} without gaps")

    consumed = {}
    committed = {}
    for e in events(consumer_out):
        if e["name"] == "record_data":
            where = (e["partition"], e["offset"])
            if where in consumed:
                problems.append(f"offset {where} consumed twice")
            consumed[where] = e["value"]
        elif e["name"] == "offsets_committed":
            if not e.get("success", False):
                problems.append(f"a commit failed: {e.get('error')}")
                continue
            for o in e.get("offsets", []):
                committed[o["partition"]] = o["offset"]
    lost = sorted(set(acked) - set(consumed))
    extra = sorted(set(consumed) - set(acked))
    if lost:
        problems.append(f"{len(lost)} acked records not consumed, first {lost[:5]}")
    if extra:
        problems.append(f"{len(extra)} records consumed that were never acked, first {extra[:5]}")
    for where in set(acked) & set(consumed):
        if acked[where] != consumed[where]:
            problems.append(f"offset {where}: acked value {acked[where]!r}, consumed {consumed[where]!r}")
            break
    for partition, last in ends.items():
        if committed.get(partition) != last + 1:
            problems.append(f"partition {partition}: last commit {committed.get(partition)}, end {last + 1}")

    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"acked {len(acked)} consumed {len(consumed)} partitions {len(ends)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
