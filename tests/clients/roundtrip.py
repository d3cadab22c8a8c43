#!/usr/bin/env python3
"""Real-client round trip against a Kafka-compatible broker (the gateway in CI).

Creates a fresh 3-partition topic through the client's admin API, produces a
fixed set of records to explicit partitions (compressed), reads them back by
manual partition assignment (no consumer group: the gateway has no group
APIs), and checks key/value/headers byte for byte, per-partition order and
offsets. Prints `PASS <client>` or exits non-zero with the first mismatch.

    roundtrip.py --bootstrap 127.0.0.1:9092 --client confluent
"""
import argparse
import asyncio
import os
import random
import sys
import threading
import time
import uuid

PARTITIONS = 3
N_RECORDS = 1000

# Codecs each library handles with no extra packages installed (checked
# against confluent-kafka 2.16, kafka-python 3.0, aiokafka 0.14):
#  - confluent-kafka: librdkafka in the wheel has gzip, snappy, lz4, zstd.
#  - kafka-python: only gzip (snappy/lz4/zstd need python-snappy/lz4/zstandard).
#  - aiokafka: only gzip (snappy/lz4/zstd need cramjam).
# Partition p is written by a producer using codecs[p % len(codecs)], so one
# run covers several codecs, and "none" keeps the uncompressed path covered.
DEFAULT_CODECS = {
    "confluent": "zstd,lz4,snappy",
    "kafka-python": "gzip",
    "aiokafka": "none,gzip",
}


SKIP_END_OFFSETS = False  # set from --skip-end-offsets


class Mismatch(Exception):
    pass


def make_records(null_header_value):
    """Deterministic records: list of (partition, key, value, headers).

    Includes the edge cases a broker can silently mangle: null vs empty value
    and key, non-UTF-8 bytes, a large value, repeated header keys whose order
    matters, an empty header value, and a null header value when the client
    can send one (kafka-python rejects None header values).
    """
    rng = random.Random(1234)
    recs = []
    for i in range(N_RECORDS):
        key = b"key-%d" % i
        value = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200)))
        headers = []
        if i == 0:
            value = None  # null value (a tombstone)
        elif i == 1:
            value = b""  # empty, must stay distinct from null
        elif i == 2:
            headers = [("h", b"first"), ("other", b"\x00\xff"), ("h", b"second"), ("empty", b"")]
            if null_header_value:
                headers.append(("null", None))
        elif i == 3:
            key = None
        elif i == 4:
            key = b""
        elif i == 5:
            key = bytes(range(256))
            value = rng.randbytes(100_000)
        elif i % 97 == 0:
            headers = [("trace", b"%d" % i)]
        recs.append((i % PARTITIONS, key, value, headers))
    return recs


def check(expected, got, end_offsets):
    """expected: list of (p, key, value, headers); got: {p: [(offset, key, value, headers)]};
    end_offsets: {p: LATEST offset from ListOffsets}, checked unless --skip-end-offsets."""
    for p in range(PARTITIONS):
        want = [(k, v, h) for (pp, k, v, h) in expected if pp == p]
        have = got.get(p, [])
        if len(have) != len(want):
            raise Mismatch(f"partition {p}: expected {len(want)} records, consumed {len(have)}")
        if not SKIP_END_OFFSETS and end_offsets.get(p) != len(want):
            raise Mismatch(f"partition {p}: end offset {end_offsets.get(p)}, expected {len(want)}")
        for idx, ((off, k, v, h), (wk, wv, wh)) in enumerate(zip(have, want)):
            where = f"partition {p} record #{idx} (offset {off})"
            if off != idx:
                raise Mismatch(f"{where}: offset {off}, expected {idx} (offsets must be 0..n-1 on a fresh topic)")
            if k != wk:
                raise Mismatch(f"{where}: key {k!r:.80} != expected {wk!r:.80}")
            if v != wv:
                raise Mismatch(f"{where}: value {v!r:.80} != expected {wv!r:.80}")
            if h != wh:
                raise Mismatch(f"{where}: headers {h!r} != expected {wh!r}")


def norm_headers(h):
    # confluent gives None for no headers, aiokafka a tuple of tuples.
    return [(k, bytes(v) if v is not None else None) for k, v in (h or [])]


# --------------------------------------------------------------- confluent
def run_confluent(bootstrap, topic, records, codecs, timeout):
    import confluent_kafka
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, PARTITIONS, 1)], request_timeout=timeout).values():
        fut.result()

    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)

    producers = {}
    for p, key, value, headers in records:
        codec = codecs[p % len(codecs)]
        if codec not in producers:
            producers[codec] = Producer({
                "bootstrap.servers": bootstrap,
                "compression.type": codec,
                "enable.idempotence": True,  # exercises InitProducerId + sequenced batches
                "linger.ms": 20,
            })
        producers[codec].produce(topic, key=key, value=value, partition=p,
                                 headers=headers or None, on_delivery=on_delivery)
    for prod in producers.values():
        if prod.flush(timeout) != 0:
            raise Mismatch("confluent: messages still undelivered after flush")
    if errors:
        raise Mismatch(f"confluent: delivery failed: {errors[0]}")

    # The Python binding refuses to build a Consumer without group.id, even for
    # assign()-only use. With auto commit off and explicit OFFSET_BEGINNING no
    # OffsetFetch/OffsetCommit is sent; librdkafka still sends FindCoordinator,
    # but only if the broker advertises it in ApiVersions (otherwise it just
    # keeps the group idle and fetching works).
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "roundtrip-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
    })
    try:
        consumer.assign([TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(PARTITIONS)])
        got, total, deadline = {}, 0, time.monotonic() + timeout
        while total < len(records) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise Mismatch(f"confluent: consume error: {msg.error()}")
            got.setdefault(msg.partition(), []).append(
                (msg.offset(), msg.key(), msg.value(), norm_headers(msg.headers())))
            total += 1
        end = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
               for p in range(PARTITIONS)}
    finally:
        consumer.close()
    check(records, got, end)

    for fut in admin.delete_topics([topic], request_timeout=timeout).values():
        fut.result()


# ------------------------------------------------------------ kafka-python
def run_kafka_python(bootstrap, topic, records, codecs, timeout):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=timeout * 1000)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])

    producers, futures = {}, []
    for p, key, value, headers in records:
        codec = codecs[p % len(codecs)]
        if codec not in producers:
            # kafka-python 3 defaults to enable_idempotence=True (InitProducerId).
            producers[codec] = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20,
                                             compression_type=None if codec == "none" else codec)
        futures.append(producers[codec].send(topic, key=key, value=value, partition=p, headers=headers))
    for prod in producers.values():
        prod.flush(timeout)
    for f in futures:
        f.get(timeout)  # raises the delivery error, if any
    for prod in producers.values():
        prod.close(timeout)

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        got, total, deadline = {}, 0, time.monotonic() + timeout
        while total < len(records) and time.monotonic() < deadline:
            for tp, msgs in consumer.poll(timeout_ms=500).items():
                for m in msgs:
                    got.setdefault(tp.partition, []).append((m.offset, m.key, m.value, norm_headers(m.headers)))
                    total += 1
        end = {tp.partition: off for tp, off in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()
    check(records, got, end)

    admin.delete_topics([topic])
    admin.close()


# ---------------------------------------------------------------- aiokafka
async def run_aiokafka_async(bootstrap, topic, records, codecs, timeout):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=timeout * 1000)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])

        producers, futures = {}, []
        try:
            for p, key, value, headers in records:
                codec = codecs[p % len(codecs)]
                if codec not in producers:
                    producers[codec] = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20,
                                                        compression_type=None if codec == "none" else codec)
                    await producers[codec].start()
                futures.append(await producers[codec].send(topic, key=key, value=value, partition=p,
                                                           headers=headers))
            await asyncio.gather(*futures)  # raises the delivery error, if any
        finally:
            for prod in producers.values():
                await prod.stop()

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning()
            got, total, deadline = {}, 0, time.monotonic() + timeout
            while total < len(records) and time.monotonic() < deadline:
                for tp, msgs in (await consumer.getmany(timeout_ms=500)).items():
                    for m in msgs:
                        got.setdefault(tp.partition, []).append((m.offset, m.key, m.value, norm_headers(m.headers)))
                        total += 1
            end = {tp.partition: off for tp, off in (await consumer.end_offsets(tps)).items()}
        finally:
            await consumer.stop()
        check(records, got, end)

        await admin.delete_topics([topic])
    finally:
        await admin.close()


def run_aiokafka(bootstrap, topic, records, codecs, timeout):
    asyncio.run(run_aiokafka_async(bootstrap, topic, records, codecs, timeout))


RUNNERS = {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True, help="HOST:PORT")
    ap.add_argument("--client", required=True, choices=sorted(RUNNERS))
    ap.add_argument("--compression", help="comma list of codecs (none,gzip,snappy,lz4,zstd), one per partition "
                                          "round-robin; default depends on the client")
    ap.add_argument("--skip-end-offsets", action="store_true",
                    help="don't check ListOffsets(LATEST) == record count (Tansu 0.6 answers with the base "
                         "offset of the last batch instead)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds for the whole run")
    args = ap.parse_args()

    # Hard wall-clock bound: a watchdog thread, because a client stuck inside a
    # C call or a retry loop would never see a Python-level timeout.
    def expire():
        print(f"FAIL {args.client}: timed out after {args.timeout}s", file=sys.stderr, flush=True)
        os._exit(3)
    watchdog = threading.Timer(args.timeout, expire)
    watchdog.daemon = True
    watchdog.start()

    global SKIP_END_OFFSETS
    SKIP_END_OFFSETS = args.skip_end_offsets
    codecs = (args.compression or DEFAULT_CODECS[args.client]).split(",")
    topic = f"roundtrip-{args.client}-{uuid.uuid4().hex[:8]}"
    # Inner waits get most of the budget, leaving the watchdog as the backstop.
    inner_timeout = max(5, args.timeout - 10)
    try:
        RUNNERS[args.client](args.bootstrap, topic, make_records(args.client != "kafka-python"), codecs, inner_timeout)
    except Mismatch as e:
        print(f"FAIL {args.client} (topic {topic}): {e}", file=sys.stderr)
        sys.exit(1)
    except Exception as e:  # client errors: show type and message, not just a traceback
        print(f"FAIL {args.client} (topic {topic}): {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"PASS {args.client}")
    sys.stdout.flush()
    os._exit(0)  # don't let lingering client threads delay exit


if __name__ == "__main__":
    main()
