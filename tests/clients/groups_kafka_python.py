#!/usr/bin/env python3
"""kafka-python group consumer: subscribe, consume, commit, resume.

On a fresh 3-partition topic with 10 records a partition:
  run 1: KafkaConsumer(group_id=G) subscribes, consumes all 30, commit() (sync), close.
  15 more records are produced.
  run 2: a new consumer in G (auto_offset_reset=earliest, so a lost commit would show
         as old records) gets exactly the 15 new ones, from offset 10 on each partition;
         it auto-commits, and close() commits what it consumed.
  KafkaAdminClient.list_group_offsets(G) then reads 15 on each partition; delete_groups.

    groups_kafka_python.py --bootstrap 127.0.0.1:9092
Prints `PASS kafka-python-groups` or exits non-zero with the first mismatch.
"""
import argparse
import os
import sys
import threading
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

PARTITIONS = 3


class Fail(Exception):
    pass


def produce(bootstrap, topic, first, per_partition):
    prod = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    futures = [prod.send(topic, value=b"%d-%d" % (p, i), partition=p)
               for p in range(PARTITIONS) for i in range(first, first + per_partition)]
    prod.flush(20)
    for f in futures:
        f.get(20)
    prod.close(10)


def consume(bootstrap, topic, group, want, auto_commit, within=30):
    """Joins `group`, returns {(partition, offset): value} once `want` records arrived
    (and 1 s more, to catch extra ones), commits, closes."""
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=auto_commit, auto_commit_interval_ms=60_000,
                      session_timeout_ms=10_000, heartbeat_interval_ms=1000)
    got, end = {}, time.monotonic() + within
    try:
        while time.monotonic() < end:
            for tp, msgs in c.poll(timeout_ms=200).items():
                for m in msgs:
                    if (tp.partition, m.offset) in got:
                        raise Fail(f"{group}: ({tp.partition}, {m.offset}) delivered twice")
                    got[(tp.partition, m.offset)] = m.value
            if len(got) >= want:
                end = min(end, time.monotonic() + 1)
        if len(got) != want:
            raise Fail(f"{group}: consumed {len(got)} records, expected {want}: {sorted(got)[:10]}")
        if not auto_commit:
            c.commit()
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            seen = {p: max(o for (pp, o) in got if pp == p) + 1 for p in range(PARTITIONS)}
            committed = {tp.partition: c.committed(tp) for tp in tps}
            if committed != seen:
                raise Fail(f"{group}: committed() after commit(): {committed}, expected {seen}")
    finally:
        c.close()  # with auto commit on, commits the consumed positions first
    return got


def run(bootstrap):
    tag = uuid.uuid4().hex[:8]
    topic, group = f"groups-kafka-python-{tag}", f"groups-kafka-python-{tag}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
        produce(bootstrap, topic, 0, 10)
        first = consume(bootstrap, topic, group, 30, auto_commit=False)
        want = {(p, o): b"%d-%d" % (p, o) for p in range(PARTITIONS) for o in range(10)}
        if first != want:
            raise Fail(f"run 1: records differ from produced: {sorted(set(first.items()) ^ set(want.items()))[:5]}")

        produce(bootstrap, topic, 10, 5)
        second = consume(bootstrap, topic, group, 15, auto_commit=True)
        if sorted(second) != [(p, o) for p in range(PARTITIONS) for o in range(10, 15)]:
            raise Fail(f"run 2 did not resume after run 1's commit: got {sorted(second)}")

        # kafka-python 3 renamed the *_consumer_group* admin calls; None: all topics.
        offsets = {tp.partition: om.offset for tp, om in admin.list_group_offsets({group: None})[group].items()
                   if tp.topic == topic}
        if offsets != {p: 15 for p in range(PARTITIONS)}:
            raise Fail(f"list_group_offsets after run 2's close: {offsets}, expected 15 each")
        deleted = admin.delete_groups([group])  # {group: 'OK' or an error name}, whatever its docstring says
        if deleted != {group: "OK"}:
            raise Fail(f"delete_groups: {deleted}")
        admin.delete_topics([topic])
    finally:
        admin.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--timeout", type=int, default=90, help="seconds for the whole run")
    args = ap.parse_args()
    threading.Timer(args.timeout, lambda: (print(f"FAIL kafka-python-groups: timed out after {args.timeout}s",
                                                 file=sys.stderr, flush=True), os._exit(3))).start()
    try:
        run(args.bootstrap)
    except Fail as e:
        print(f"FAIL kafka-python-groups: {e}", file=sys.stderr)
        os._exit(1)
    except Exception as e:
        print(f"FAIL kafka-python-groups: {type(e).__name__}: {e}", file=sys.stderr)
        os._exit(2)
    print("PASS kafka-python-groups", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
