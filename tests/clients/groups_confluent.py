#!/usr/bin/env python3
"""Consumer groups through confluent-kafka (librdkafka) against a Kafka-compatible broker.

Two scenarios, one per assignment strategy (range, then cooperative-sticky), each with
a fresh 6-partition topic and group:
  1. Three consumers, each its own process (so one can be SIGKILLed), join one group
     (session.timeout.ms=6000). Once assigned, the three assignments are disjoint, two
     partitions each, covering the topic; DescribeGroups agrees.
  2. Batch 1 (100 records a partition) is consumed and committed exactly once.
  3. Batch 2: the victim consumes one batch of it, does not commit, and hangs (still
     heartbeating); the others consume and commit theirs. While it hangs it is still a
     member holding its partitions (DescribeGroups) and no assignment has changed. Then
     the victim is SIGKILLed.
  4. Its partitions move to the two survivors once its session expires (no LeaveGroup
     came: only the expiry can free them); DescribeGroups then lists the two survivors
     alone. Cooperative-sticky survivors must also keep what they had. How long the
     takeover took is printed, not asserted (timed assertions flake on shared cores).
  5. Batch 3 is produced; every record is consumed and committed.
At-least-once limits checked: every record is delivered; a record is delivered twice
only if it is on a victim partition at or after the victim's last commit there
(the victim consumed it without committing); nothing before a commit is redelivered.
Workers commit after each batch they consume, so no other redelivery is allowed.

Commit in on_revoke (skip with --skip-revoke-commit): a member consumes 40 records
without committing; a second member joins; the first commits them in its on_revoke
callback, while the group is PreparingRebalance, as Kafka allows; none is read again
before a marker record produced on each partition once both members have one.

A consume error fails the check at once, printed (partition EOF reporting is off).

Admin paths (AdminClient), on the first scenario's group:
  - while live: describe (Stable, members, assignments); delete refused (NON_EMPTY_GROUP);
    alter offsets refused (the group has members).
  - once empty: list_consumer_groups (state Empty), list_consumer_group_offsets with a null
    topic list (all 6 partitions at 300), alter_consumer_group_offsets to earliest, then
    a new member starts from 0, delete_consumer_groups, then the group and its offsets are gone.

    groups_confluent.py --bootstrap 127.0.0.1:9092
Prints `PASS confluent-groups` or exits non-zero naming the first failure. The group
coordinator's initial rebalance delay (3 s by default) adds to each scenario's run time.
"""
import argparse
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid

PARTITIONS = 6
MEMBERS = 3
PER_BATCH = 100  # records per partition per batch
SESSION_MS = 6000


class Fail(Exception):
    pass


def record(m, where):
    """A polled message, or None for no message; a consume error fails at once rather
    than showing up later as a wrong count or a timeout. _PARTITION_EOF is not an error
    (consumer_conf turns its reporting off; it is passed over if a caller turns it on)."""
    from confluent_kafka import KafkaError
    if m is None or m.error() is None:
        return m
    if m.error().code() == KafkaError._PARTITION_EOF:
        return None
    raise Fail(f"{where}: consume error: {m.error()}")


def consumer_conf(bootstrap, group, strategy, **extra):
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_MS,
        "heartbeat.interval.ms": 500,
        "partition.assignment.strategy": strategy,
        "enable.partition.eof": False,
    }
    conf.update(extra)
    return conf


# ------------------------------------------------------------------ worker
def worker(args):
    """One group member. Reports on stdout, one event a line:
       A <t> <p,p,..>   its whole assignment after each change (t: time.monotonic())
       M <p> <offset>   a record handed to the application
       C <p>:<next>,..  a synchronous commit that succeeded
       H                it consumed a batch it will never commit and now hangs
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # Never outlive the test, whatever happens to the parent.
    threading.Timer(args.timeout, lambda: os._exit(4)).start()

    def out(line):
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    owned = set()

    def report():
        out(f"A {time.monotonic():.3f} {','.join(map(str, sorted(owned)))}")

    def on_assign(c, parts):
        owned.update(tp.partition for tp in parts)
        report()

    def on_revoke(c, parts):
        owned.difference_update(tp.partition for tp in parts)
        report()

    c = Consumer(consumer_conf(args.bootstrap, args.group, args.strategy, **{"client.id": args.name}))
    c.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not stop.is_set():
        msgs = c.consume(num_messages=50, timeout=0.2)
        last = {}
        for m in msgs:
            if m.error():
                out(f"E consume: {m.error()}")
                os._exit(2)
            out(f"M {m.partition()} {m.offset()}")
            last[m.partition()] = m.offset()
        if not last:
            continue
        if args.hang_at is not None and any(o >= args.hang_at for o in last.values()):
            out("H")
            while True:  # librdkafka's threads keep heartbeating; the test SIGKILLs us
                time.sleep(1)
        try:
            c.commit(offsets=[TopicPartition(args.topic, p, o + 1) for p, o in last.items()], asynchronous=False)
        except KafkaException as e:
            out(f"E commit {last}: {e}")
            os._exit(2)
        out("C " + ",".join(f"{p}:{o + 1}" for p, o in sorted(last.items())))
    c.close()  # LeaveGroup
    out("X")
    os._exit(0)


class Member:
    """A worker process and what it reported; a thread turns its stdout into events."""

    def __init__(self, name, events, bootstrap, topic, group, strategy, hang_at, timeout):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--bootstrap", bootstrap, "--topic", topic,
               "--group", group, "--strategy", strategy, "--name", name, "--timeout", str(timeout)]
        if hang_at is not None:
            cmd += ["--hang-at", str(hang_at)]
        self.name = name
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        self.owned, self.assigned_at = set(), 0.0
        self.hung = self.exited = False
        threading.Thread(target=self._read, args=(events,), daemon=True).start()

    def _read(self, events):
        for line in self.proc.stdout:
            events.put((self, line.split()))
        events.put((self, ["EOF"]))


class Scenario:
    def __init__(self, bootstrap, admin, strategy, deadline):
        self.bootstrap, self.admin, self.strategy, self.deadline = bootstrap, admin, strategy, deadline
        tag = uuid.uuid4().hex[:8]
        self.topic = f"groups-confluent-{strategy}-{tag}"
        self.group = f"groups-confluent-{strategy}-{tag}"
        self.events = queue.Queue()
        self.members = []
        self.delivered = {}  # (p, offset) -> [member names]
        self.committed = {}  # p -> next offset, from the commits the members reported
        self.member_commits = {}  # (name, p) -> next offset
        self.produced = 0  # records per partition so far

    def pump(self, until, what, within=None):
        """Handles member events until `until()` holds; fails after `within` s or the deadline."""
        end = min(self.deadline, time.monotonic() + within) if within else self.deadline
        while not until():
            left = end - time.monotonic()
            if left <= 0:
                raise Fail(f"{self.strategy}: timed out waiting for {what}; assignments "
                           f"{ {m.name: sorted(m.owned) for m in self.members} }, committed {self.committed}")
            try:
                m, ev = self.events.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            kind = ev[0]
            if kind == "A":
                m.owned, m.assigned_at = {int(p) for p in (ev[2:] or [""])[0].split(",") if p}, float(ev[1])
            elif kind == "M":
                self.delivered.setdefault((int(ev[1]), int(ev[2])), []).append(m.name)
            elif kind == "C":
                for pair in ev[1].split(","):
                    p, nxt = map(int, pair.split(":"))
                    self.committed[p] = max(self.committed.get(p, 0), nxt)
                    self.member_commits[(m.name, p)] = nxt
            elif kind == "H":
                m.hung = True
            elif kind == "E":
                raise Fail(f"{self.strategy}: member {m.name}: {' '.join(ev[1:])}")
            elif kind in ("EOF", "X"):
                m.exited = True

    def produce(self):
        from confluent_kafka import Producer
        prod = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        errors = []
        for p in range(PARTITIONS):
            for i in range(self.produced, self.produced + PER_BATCH):
                prod.produce(self.topic, key=b"%d" % p, value=b"%d-%d" % (p, i), partition=p,
                             on_delivery=lambda err, _: err and errors.append(err))
        if prod.flush(20) != 0 or errors:
            raise Fail(f"{self.strategy}: produce failed: {errors[:1] or 'undelivered after flush'}")
        self.produced += PER_BATCH

    def all_committed(self):
        return all(self.committed.get(p) == self.produced for p in range(PARTITIONS))

    def describe(self):
        return self.admin.describe_consumer_groups([self.group], request_timeout=10)[self.group].result()

    def members_described(self):
        """{client.id: sorted partitions} of a Stable group, from DescribeGroups."""
        from confluent_kafka import ConsumerGroupState
        d = self.describe()
        if d.state != ConsumerGroupState.STABLE:
            raise Fail(f"{self.strategy}: describe_consumer_groups: state {d.state}, expected Stable")
        return {mb.client_id: sorted(tp.partition for tp in mb.assignment.topic_partitions) for mb in d.members}

    def run(self):
        from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaError, TopicPartition
        from confluent_kafka.admin import NewTopic
        s = self.strategy
        for fut in self.admin.create_topics([NewTopic(self.topic, PARTITIONS, 1)], request_timeout=15).values():
            fut.result()
        # 1) three members, separate processes; member 0 is the victim.
        for i in range(MEMBERS):
            m = Member(f"m{i}", self.events, self.bootstrap, self.topic, self.group, s,
                       PER_BATCH if i == 0 else None, int(self.deadline - time.monotonic()) + 5)
            self.members.append(m)
        victim, survivors = self.members[0], self.members[1:]

        def shared(members, per):
            sets = [m.owned for m in members]
            return (all(len(x) == per for x in sets) and set().union(*sets) == set(range(PARTITIONS)))
        self.pump(lambda: shared(self.members, PARTITIONS // MEMBERS), "3 disjoint assignments of 2 partitions")
        d = self.describe()
        got = {tuple(sorted(tp.partition for tp in mb.assignment.topic_partitions)) for mb in d.members}
        want = {tuple(sorted(m.owned)) for m in self.members}
        if d.state != ConsumerGroupState.STABLE or len(d.members) != MEMBERS or got != want:
            raise Fail(f"{s}: describe_consumer_groups: state {d.state}, members {len(d.members)}, "
                       f"assignments {sorted(got)}; members report {sorted(want)}")

        # 2) batch 1: consumed and committed exactly once.
        self.produce()
        self.pump(self.all_committed, "batch 1 committed")
        dup = [k for k, who in self.delivered.items() if len(who) > 1]
        if dup:
            raise Fail(f"{s}: batch 1 delivered twice with a stable group: {sorted(dup)[:5]}")

        # 3) batch 2: the victim consumes some without committing and hangs; then SIGKILL.
        before = {m.name: set(m.owned) for m in survivors}
        self.produce()
        self.pump(lambda: victim.hung and all(self.committed.get(p) == self.produced
                                              for p in range(PARTITIONS) if p not in victim.owned),
                  "the victim to hang and the others to commit batch 2")
        # The hung victim keeps heartbeating, so it is still a member with its partitions,
        # and nothing was reassigned: its partitions are freed below by the SIGKILL alone.
        changed = {m.name: (sorted(before[m.name]), sorted(m.owned)) for m in survivors if m.owned != before[m.name]}
        if changed:
            raise Fail(f"{s}: assignments changed while the victim hung, still heartbeating: {changed}")
        members = self.members_described()
        if members != {m.name: sorted(m.owned) for m in self.members}:
            raise Fail(f"{s}: describe while the victim hung: {members}; the members report "
                       f"{ {m.name: sorted(m.owned) for m in self.members} }")
        victim_parts = set(victim.owned)
        victim_last = {p: self.member_commits[(victim.name, p)] for p in victim_parts}
        uncommitted = sorted(k for k, who in self.delivered.items() if victim.name in who and k[1] >= victim_last[k[0]])
        victim.proc.send_signal(signal.SIGKILL)
        killed = time.monotonic()

        # 4) survivors take its partitions once its session expires.
        self.pump(lambda: shared(survivors, PARTITIONS // (MEMBERS - 1)), "survivors to take the victim's partitions")
        took = max(m.assigned_at for m in survivors) - killed
        if s == "cooperative-sticky":
            lost = {m.name: sorted(before[m.name] - m.owned) for m in survivors if before[m.name] - m.owned}
            if lost:
                raise Fail(f"{s}: survivors lost partitions they owned before the kill: {lost}")
        members = self.members_described()
        if members != {m.name: sorted(m.owned) for m in survivors}:
            raise Fail(f"{s}: describe after the takeover: {members}; the survivors report "
                       f"{ {m.name: sorted(m.owned) for m in survivors} }")
        # Live group: DeleteGroups and an admin offset commit are refused.
        err = self.admin.delete_consumer_groups([self.group], request_timeout=10)[self.group].exception()
        if err is None or err.args[0].code() != KafkaError.NON_EMPTY_GROUP:
            raise Fail(f"{s}: delete_consumer_groups on a live group: expected NON_EMPTY_GROUP, got {err}")
        req = ConsumerGroupTopicPartitions(self.group, [TopicPartition(self.topic, 0, 0)])
        fut = self.admin.alter_consumer_group_offsets([req], request_timeout=10)[self.group]
        err = fut.exception() or fut.result().topic_partitions[0].error
        if err is None:
            raise Fail(f"{s}: alter_consumer_group_offsets on a live group succeeded (Kafka refuses it)")

        # 5) batch 3, then everything is committed.
        self.produce()
        self.pump(self.all_committed, "batches 2 and 3 committed")
        for m in survivors:
            m.proc.send_signal(signal.SIGTERM)
        self.pump(lambda: all(m.exited for m in survivors), "survivors to leave", within=15)

        missing = [(p, o) for p in range(PARTITIONS) for o in range(self.produced) if (p, o) not in self.delivered]
        if missing:
            raise Fail(f"{s}: records never delivered: {missing[:5]} ({len(missing)} in all)")
        bad = sorted(k for k, who in self.delivered.items()
                     if len(who) > 1 and not (k[0] in victim_parts and k[1] >= victim_last[k[0]]))
        if bad:
            raise Fail(f"{s}: redelivered outside the victim's uncommitted range: {bad[:5]} "
                       f"(victim partitions {sorted(victim_parts)}, last commits {victim_last})")
        redelivered = sum(len(w) - 1 for w in self.delivered.values())
        print(f"  {s}: victim had {sorted(victim_parts)} committed up to {victim_last}, consumed {len(uncommitted)} "
              f"more uncommitted; takeover {took:.1f}s after SIGKILL (session {SESSION_MS} ms, not asserted); "
              f"{redelivered} records redelivered", flush=True)
        if redelivered > len(uncommitted) or not uncommitted:
            raise Fail(f"{s}: {redelivered} records redelivered, only the victim's {len(uncommitted)} may be")

    def stop(self):
        for m in self.members:
            if m.proc.poll() is None:
                m.proc.kill()
            m.proc.wait()


def check_revoke_commit(bootstrap, admin):
    """The usual eager pattern: commit what was consumed in on_revoke. The group is in
    PreparingRebalance then (a member joined), and Kafka accepts commits from members of
    the current generation in that state, so nothing committed there is read again."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import NewTopic
    tag = uuid.uuid4().hex[:8]
    topic = group = f"groups-confluent-revoke-{tag}"
    for fut in admin.create_topics([NewTopic(topic, 2, 1)], request_timeout=15).values():
        fut.result()
    prod = Producer({"bootstrap.servers": bootstrap})
    for i in range(40):
        prod.produce(topic, value=b"%d" % i, partition=i % 2)
    if prod.flush(20) != 0:
        raise Fail("revoke-commit: produce failed")

    seen, pending, commit_errors, commits = [], {}, [], []

    def on_revoke(c, parts):
        if pending:
            commits.append(dict(pending))
            try:
                c.commit(offsets=[TopicPartition(topic, p, o + 1) for p, o in pending.items()], asynchronous=False)
                pending.clear()
            except KafkaException as e:
                commit_errors.append(e.args[0])

    a = Consumer(consumer_conf(bootstrap, group, "range", **{"client.id": "a"}))
    b = Consumer(consumer_conf(bootstrap, group, "range", **{"client.id": "b"}))
    try:
        a.subscribe([topic], on_revoke=on_revoke)
        end = time.monotonic() + 20
        while len(seen) < 40 and time.monotonic() < end:
            m = record(a.poll(0.2), "revoke-commit: first member")
            if m is not None:
                seen.append((m.partition(), m.offset()))
                pending[m.partition()] = m.offset()
        if len(seen) != 40:
            raise Fail(f"revoke-commit: the first member consumed {len(seen)} of 40 records")
        b.subscribe([topic])
        # Once both have a partition, a marker record goes to each partition: a record
        # committed in on_revoke but read again would come before its partition's marker.
        end, markers = time.monotonic() + 30, None
        while markers != {0, 1}:
            if time.monotonic() > end:
                raise Fail(f"revoke-commit: no marker read on partitions {sorted({0, 1} - (markers or set()))} "
                           f"(assignments a {a.assignment()}, b {b.assignment()})")
            for c in (a, b):
                m = record(c.poll(0.1), "revoke-commit")
                if m is None:
                    continue
                if m.value() == b"marker":
                    markers.add(m.partition())
                else:
                    seen.append((m.partition(), m.offset()))
            if markers is None and a.assignment() and b.assignment():
                markers = set()
                for p in (0, 1):
                    prod.produce(topic, value=b"marker", partition=p)
                if prod.flush(20) != 0:
                    raise Fail("revoke-commit: markers not acknowledged")
    finally:
        a.close()
        b.close()
    if commit_errors:
        raise Fail(f"revoke-commit: commit in on_revoke (group rebalancing, generation current) failed: "
                   f"{commit_errors[0]}; Kafka accepts commits in PreparingRebalance")
    if not commits:
        raise Fail("revoke-commit: on_revoke was not called with records to commit")
    if len(seen) != 40:
        raise Fail(f"revoke-commit: {len(seen) - 40} records committed in on_revoke were delivered again")
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=10)
    got = {tp.partition: tp.offset for tp in res[group].result().topic_partitions}
    if got != {0: 20, 1: 20}:
        raise Fail(f"revoke-commit: committed offsets {got}, expected 20 on both partitions")
    for fut in admin.delete_topics([topic], request_timeout=15).values():
        fut.result()


def check_admin(bootstrap, admin, group, topic, produced):
    """Admin paths on `group`, empty now, with offsets at `produced` on every partition."""
    from confluent_kafka import (Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition,
                                 OFFSET_BEGINNING)
    from confluent_kafka.admin import OffsetSpec

    def offsets():
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=10)
        tps = res[group].result().topic_partitions or []
        for tp in tps:
            if tp.error:
                raise Fail(f"admin: list_consumer_group_offsets {tp}: {tp.error}")
        return {(tp.topic, tp.partition): tp.offset for tp in tps}

    listed = admin.list_consumer_groups(request_timeout=10).result()
    mine = [g for g in listed.valid if g.group_id == group]
    if listed.errors or len(mine) != 1 or mine[0].state != ConsumerGroupState.EMPTY:
        raise Fail(f"admin: list_consumer_groups: errors {listed.errors}, {group} listed as {mine}")
    d = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    if d.state != ConsumerGroupState.EMPTY or d.members:
        raise Fail(f"admin: describe after all members left: state {d.state}, members {d.members}")

    want = {(topic, p): produced for p in range(PARTITIONS)}
    if offsets() != want:
        raise Fail(f"admin: list_consumer_group_offsets (all topics): {offsets()}, expected {want}")

    # Reset to earliest, as kafka-consumer-groups --reset-offsets --to-earliest does it.
    specs = {TopicPartition(topic, p): OffsetSpec.earliest() for p in range(PARTITIONS)}
    earliest = {tp.partition: r.result().offset for tp, r in admin.list_offsets(specs, request_timeout=10).items()}
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, earliest[p]) for p in range(PARTITIONS)])
    res = admin.alter_consumer_group_offsets([req], request_timeout=10)[group].result()
    errs = [tp for tp in res.topic_partitions if tp.error]
    if errs:
        raise Fail(f"admin: alter_consumer_group_offsets: {errs}")
    if offsets() != {(topic, p): 0 for p in range(PARTITIONS)}:
        raise Fail(f"admin: after reset to earliest: {offsets()}")
    # A new member resumes from the reset offsets (auto.offset.reset=latest would skip all).
    c = Consumer(consumer_conf(bootstrap, group, "range", **{"auto.offset.reset": "latest"}))
    try:
        c.subscribe([topic])
        first, end = {}, time.monotonic() + 20
        while len(first) < PARTITIONS and time.monotonic() < end:
            m = record(c.poll(0.5), "admin: member after the reset")
            if m is not None:
                first.setdefault(m.partition(), m.offset())
    finally:
        c.close()
    if first != {p: 0 for p in range(PARTITIONS)}:
        raise Fail(f"admin: after reset, a member's first offsets were {first}, expected 0 on each partition")

    for fut in admin.delete_consumer_groups([group], request_timeout=10).values():
        fut.result()
    listed = admin.list_consumer_groups(request_timeout=10).result()
    if any(g.group_id == group for g in listed.valid):
        raise Fail(f"admin: {group} still listed after delete_consumer_groups")
    left = {k: v for k, v in offsets().items() if v != OFFSET_BEGINNING and v >= 0}
    if left:
        raise Fail(f"admin: offsets still committed after delete_consumer_groups: {left}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--timeout", type=int, default=90, help="seconds for the whole run")
    ap.add_argument("--skip-revoke-commit", action="store_true",
                    help="skip the commit-in-on_revoke check (for brokers refusing OffsetCommit while a "
                         "group is PreparingRebalance)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for a in ("--topic", "--group", "--strategy", "--name"):
        ap.add_argument(a, help=argparse.SUPPRESS)
    ap.add_argument("--hang-at", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)

    from confluent_kafka.admin import AdminClient
    start = time.monotonic()
    threading.Timer(args.timeout, lambda: (print(f"FAIL confluent-groups: timed out after {args.timeout}s",
                                                 file=sys.stderr, flush=True), os._exit(3))).start()
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    scenarios = []
    try:
        for strategy in ("range", "cooperative-sticky"):
            sc = Scenario(args.bootstrap, admin, strategy, start + args.timeout - 20)
            scenarios.append(sc)
            try:
                sc.run()
            finally:
                sc.stop()
        if not args.skip_revoke_commit:
            check_revoke_commit(args.bootstrap, admin)
        first = scenarios[0]
        check_admin(args.bootstrap, admin, first.group, first.topic, first.produced)
        for sc in scenarios:
            for fut in admin.delete_topics([sc.topic], request_timeout=15).values():
                fut.result()
    except Fail as e:
        print(f"FAIL confluent-groups: {e}", file=sys.stderr)
        os._exit(1)
    except Exception as e:
        print(f"FAIL confluent-groups: {type(e).__name__}: {e}", file=sys.stderr)
        os._exit(2)
    print(f"PASS confluent-groups ({time.monotonic() - start:.0f}s)")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
