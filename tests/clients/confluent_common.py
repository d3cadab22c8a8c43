"""What the confluent-kafka checks over TLS and SASL share (ssl_confluent.py,
sasl_confluent.py): failing with a message, waiting for one expected client error, and a
ten-record round trip."""
import time

from confluent_kafka import Consumer, Producer, TopicPartition

TIMEOUT = 20


class Fail(Exception):
    pass


def check(ok, what):
    if not ok:
        raise Fail(what)


def expect_error(conf, expected, what):
    """Polls a producer built from `conf` until librdkafka reports an error `expected`
    accepts (through error_cb); fails naming every error seen if none does within TIMEOUT."""
    errors = []
    producer = Producer({**conf, "error_cb": errors.append})
    deadline = time.time() + TIMEOUT
    while not any(expected(e) for e in errors) and time.time() < deadline:
        producer.poll(0.2)
    check(any(expected(e) for e in errors), f"no {what} reported; errors: {errors}")


def round_trip(conf, topic, group):
    """Produces ten keyed records to partition 0 of `topic` and reads them back."""
    producer = Producer(conf)
    for i in range(10):
        producer.produce(topic, value=f"v{i}".encode(), key=f"k{i}".encode())
    check(producer.flush(TIMEOUT) == 0, "records not acknowledged")
    consumer = Consumer({**conf, "group.id": group, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.time() + TIMEOUT
    while len(got) < 10 and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None:
            check(m.error() is None, f"consume error {m.error()}")
            got.append(m.value().decode())
    consumer.close()
    check(got == [f"v{i}" for i in range(10)], f"consumed {got}")
