#!/usr/bin/env python3
"""confluent-kafka (librdkafka) over SASL_PLAINTEXT, or SASL_SSL with --ca, with
SCRAM-SHA-512 (issue 7).

  1. The bootstrap user (--user/--password) logs in; alter_user_scram_credentials adds
     a user with SCRAM-SHA-512; describe_user_scram_credentials lists it.
  2. The new user creates a topic, produces ten records and consumes them back.
  3. A wrong password gets the broker's authentication error for invalid credentials,
     not a timeout nor any other failure.

    sasl_confluent.py --bootstrap 127.0.0.1:9093 --user admin --password admin-secret [--ca CA]
Prints `PASS confluent-sasl` (`confluent-sasl-ssl` with --ca) or exits non-zero naming
the first failure.
"""
import argparse
import sys
import uuid

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

from confluent_common import TIMEOUT, Fail, check, expect_error, round_trip

# The CA of a SASL_SSL listener's certificate (--ca); None for SASL_PLAINTEXT.
CA = None


def config(bootstrap, user, password):
    tls = {"security.protocol": "SASL_SSL", "ssl.ca.location": CA} if CA else {}
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
        **tls,
    }


def run(bootstrap, admin_user, admin_password):
    tag = uuid.uuid4().hex[:8]
    user, password = f"py-{tag}", f"py-pass-{tag}"
    admin = AdminClient(config(bootstrap, admin_user, admin_password))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    upsert = UserScramCredentialUpsertion(user, info, password.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=TIMEOUT)
    described = admin.describe_user_scram_credentials([user])[user].result(timeout=TIMEOUT)
    infos = [(i.mechanism, i.iterations) for i in described.scram_credential_infos]
    check(infos == [(ScramMechanism.SCRAM_SHA_512, 8192)], f"described {infos}")

    mine = config(bootstrap, user, password)
    topic = f"sasl-confluent-{tag}"
    own_admin = AdminClient(mine)
    for future in own_admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=TIMEOUT)
    round_trip(mine, topic, f"g-{tag}")

    # Kafka's (and the gateway's) SaslAuthenticate message for a wrong password; the same
    # error code also covers e.g. a credential store that cannot be read.
    expect_error(config(bootstrap, user, "not-" + password),
                 lambda e: e.code() == KafkaError._AUTHENTICATION and "invalid credentials" in e.str(),
                 "invalid-credentials authentication error")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--user", default="admin")
    parser.add_argument("--password", default="admin-secret")
    parser.add_argument("--ca", help="CA file: SASL_SSL instead of SASL_PLAINTEXT")
    args = parser.parse_args()
    global CA
    CA = args.ca
    name = "confluent-sasl-ssl" if CA else "confluent-sasl"
    try:
        run(args.bootstrap, args.user, args.password)
    except (Fail, KafkaException) as e:
        print(f"FAIL {name}: {e}", file=sys.stderr)
        sys.exit(1)
    print(f"PASS {name}")


if __name__ == "__main__":
    main()
