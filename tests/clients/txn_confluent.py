#!/usr/bin/env python3
"""Transactions through confluent-kafka (librdkafka's Python binding).

On a fresh 2-partition topic: a transactional producer commits 100 records, aborts 50,
then commits 30 with a group's offsets (send_offsets_to_transaction). A read_committed
consumer reads exactly the 130 committed, in order per partition, none aborted; a
read_uncommitted one reads all 180; the group's committed offsets are those the
transaction sent. A second producer with the same transactional.id fences the first:
the first's next commit fails as fenced.

    txn_confluent.py --bootstrap 127.0.0.1:9092
Prints `PASS confluent-transactions` or exits non-zero naming the first failure.
"""
import argparse
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 2


def fail(why):
    print(f"FAIL confluent-transactions: {why}")
    sys.exit(1)


def producer(bootstrap, txn_id):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(30)
    return p


def send(p, topic, prefix, n):
    for i in range(n):
        p.produce(topic, value=f"{prefix}{i}".encode(), partition=i % PARTITIONS)
    p.flush(30)


def read(bootstrap, topic, isolation, want):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"{topic}-reader-{isolation}",
        "enable.auto.commit": False,
        "isolation.level": isolation,
        "auto.offset.reset": "earliest",
    })
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = {p: [] for p in range(PARTITIONS)}
    deadline, quiet = time.time() + 30, None
    while time.time() < deadline and (quiet is None or time.time() < quiet):
        m = c.poll(0.2)
        if m is not None:
            if m.error():
                fail(f"consume error {m.error()}")
            got[m.partition()].append(m.value().decode())
        if quiet is None and sum(map(len, got.values())) >= want:
            quiet = time.time() + 1.0
    c.close()
    return got


def expected(*batches):
    out = {p: [] for p in range(PARTITIONS)}
    for prefix, n in batches:
        for i in range(n):
            out[i % PARTITIONS].append(f"{prefix}{i}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    bootstrap = ap.parse_args().bootstrap
    suffix = uuid.uuid4().hex[:8]
    topic, group, txn_id = f"py-txn-{suffix}", f"py-txn-group-{suffix}", f"py-txn-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        f.result()

    p = producer(bootstrap, txn_id)
    p.begin_transaction()
    send(p, topic, "c-", 100)
    p.commit_transaction(30)
    p.begin_transaction()
    send(p, topic, "a-", 50)
    p.abort_transaction(30)
    p.begin_transaction()
    send(p, topic, "k-", 30)
    group_consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    offsets = [TopicPartition(topic, part, 5 + part) for part in range(PARTITIONS)]
    p.send_offsets_to_transaction(offsets, group_consumer.consumer_group_metadata(), 30)
    p.commit_transaction(30)
    committed = group_consumer.committed([TopicPartition(topic, part) for part in range(PARTITIONS)], 10)
    got_offsets = [t.offset for t in committed]
    if got_offsets != [5, 6]:
        fail(f"the group's offsets are {got_offsets}, not [5, 6]")
    group_consumer.close()

    want = expected(("c-", 100), ("k-", 30))
    got = read(bootstrap, topic, "read_committed", 130)
    if got != want:
        fail(f"read_committed got {got}, expected {want}")
    everything = read(bootstrap, topic, "read_uncommitted", 180)
    if sum(map(len, everything.values())) != 180:
        fail(f"read_uncommitted got {sum(map(len, everything.values()))} records, not 180")

    q = producer(bootstrap, txn_id)
    try:
        p.begin_transaction()
        send(p, topic, "z-", 2)
        p.commit_transaction(10)
        fail("the first producer committed after a second one with its id started")
    except KafkaException as e:
        if not e.args[0].fatal() and "fenced" not in str(e).lower():
            fail(f"the first producer failed, but not as fenced: {e}")
    q.begin_transaction()
    send(q, topic, "q-", 4)
    q.commit_transaction(30)
    want = expected(("c-", 100), ("k-", 30), ("q-", 4))
    got = read(bootstrap, topic, "read_committed", 134)
    if got != want:
        fail(f"after fencing, read_committed got {got}, expected {want}")
    print("PASS confluent-transactions")


if __name__ == "__main__":
    main()
