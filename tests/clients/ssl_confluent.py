#!/usr/bin/env python3
"""confluent-kafka (librdkafka) over an SSL listener (issue 7).

  1. Metadata through the SSL listener names the broker at that listener's port.
  2. A topic is created, ten records produced and consumed back, all over TLS with the
     server certificate checked against --ca and the host name.
  3. A client trusting another CA (made here with openssl) fails the handshake because
     the certificate cannot be verified: not an answer, nor any other failure.

    ssl_confluent.py --bootstrap 127.0.0.1:9094 --ca ca.pem
Prints `PASS confluent-ssl` or exits non-zero naming the first failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import uuid

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from confluent_common import TIMEOUT, Fail, check, expect_error, round_trip


def config(bootstrap, ca):
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": ca,
        "ssl.endpoint.identification.algorithm": "https",
    }


def run(bootstrap, ca):
    tag = uuid.uuid4().hex[:8]
    conf = config(bootstrap, ca)
    admin = AdminClient(conf)
    brokers = admin.list_topics(timeout=TIMEOUT).brokers.values()
    port = int(bootstrap.rsplit(":", 1)[1])
    check([b.port for b in brokers] == [port], f"brokers {[str(b) for b in brokers]}")

    topic = f"ssl-confluent-{tag}"
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=TIMEOUT)
    round_trip(conf, topic, f"g-{tag}")

    with tempfile.TemporaryDirectory() as tmp:
        other_ca = os.path.join(tmp, "other-ca.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=other-ca", "-keyout", os.path.join(tmp, "other-ca.key"),
                        "-out", other_ca], check=True, capture_output=True)
        # librdkafka: "SSL handshake failed: ...certificate verify failed: broker certificate
        # could not be verified". A refused or closed connection would be _TRANSPORT.
        expect_error({**conf, "ssl.ca.location": other_ca},
                     lambda e: e.code() == KafkaError._SSL and "certificate verify failed" in e.str(),
                     "certificate verification error")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--ca", required=True)
    args = parser.parse_args()
    try:
        run(args.bootstrap, args.ca)
    except (Fail, KafkaException) as e:
        print(f"FAIL confluent-ssl: {e}", file=sys.stderr)
        sys.exit(1)
    print("PASS confluent-ssl")


if __name__ == "__main__":
    main()
