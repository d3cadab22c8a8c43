#!/usr/bin/env node
// KafkaJS group consumer: subscribe, consume, commit, resume.
//
// On a fresh 3-partition topic with 10 records a partition:
//   run 1: a consumer in group G (fromBeginning) consumes all 30 with autoCommit off,
//          commits them with commitOffsets, disconnects.
//   15 more records are produced.
//   run 2: a new consumer in G (fromBeginning, so a lost commit would show as old
//          records) gets exactly the 15 new ones, from offset 10 on each partition,
//          with KafkaJS's own auto commit.
//   admin: fetchOffsets(G) reads 15 on each partition; listGroups and describeGroups
//          show G Empty; deleteGroups removes it.
//
//   usage: node groups_kafkajs.js HOST:PORT     (npm install --prefix tests/clients first)
// Prints `PASS kafkajs-groups` or exits non-zero with the first mismatch.
'use strict';
const { Kafka, logLevel } = require('kafkajs');
const crypto = require('crypto');

const BOOTSTRAP = process.argv[2];
if (!BOOTSTRAP) {
  console.error('usage: groups_kafkajs.js HOST:PORT');
  process.exit(64);
}
const TIMEOUT_S = 90;
const PARTITIONS = 3;
setTimeout(() => {
  console.error(`FAIL kafkajs-groups: timed out after ${TIMEOUT_S}s`);
  process.exit(3);
}, TIMEOUT_S * 1000).unref();

const kafka = new Kafka({ clientId: 'groups-kafkajs', brokers: [BOOTSTRAP], logLevel: logLevel.ERROR });
const tag = crypto.randomBytes(4).toString('hex');
const topic = `groups-kafkajs-${tag}`;
const groupId = `groups-kafkajs-${tag}`;

function fail(msg) {
  throw new Error(msg);
}

async function produce(first, perPartition) {
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let p = 0; p < PARTITIONS; p++) {
    for (let i = first; i < first + perPartition; i++) messages.push({ partition: p, value: `${p}-${i}` });
  }
  await producer.send({ topic, messages });
  await producer.disconnect();
}

// Joins the group and consumes until `want` records arrived (then 1 s more, to catch
// extra ones); returns them as 'partition:offset' strings.
async function consume(want, autoCommit) {
  // maxWaitTimeInMs: disconnect() waits for the fetch in flight, 5 s by default.
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 500 });
  const got = [];
  const seen = new Set();
  const problems = [];
  let done;
  const enough = new Promise((resolve) => (done = resolve));
  // KafkaJS retries a failing fetch or join, then crashes the consumer and restarts it:
  // an error would show up only as a wrong count 30 s later. It fails the check at once.
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    problems.push(`consumer crashed: ${payload.error.stack || payload.error}`);
    done();
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit,
    eachMessage: async ({ partition, message }) => {
      // Throwing here would only make KafkaJS retry the message; note it and check below.
      const key = `${partition}:${message.offset}`;
      if (seen.has(key)) problems.push(`${key} delivered twice`);
      if (message.value.toString() !== `${partition}-${message.offset}`) {
        problems.push(`${key}: value ${message.value}, expected ${partition}-${message.offset}`);
      }
      seen.add(key);
      got.push(key);
      if (got.length >= want) done();
    },
  });
  const timer = setTimeout(done, 30000);
  await enough;
  clearTimeout(timer);
  await new Promise((r) => setTimeout(r, 1000));
  if (problems.length) fail(problems.join('; '));
  if (got.length !== want) fail(`consumed ${got.length} records, expected ${want}: ${got.slice(0, 10)}`);
  if (!autoCommit) {
    const next = {};
    for (const k of got) {
      const [p, o] = k.split(':').map(Number);
      next[p] = Math.max(next[p] || 0, o + 1);
    }
    await consumer.commitOffsets(
      Object.entries(next).map(([p, o]) => ({ topic, partition: Number(p), offset: String(o) })),
    );
  }
  await consumer.disconnect(); // auto commit: commits what eachMessage resolved, then LeaveGroup
  return got;
}

const expected = (from, to) => {
  const out = [];
  for (let p = 0; p < PARTITIONS; p++) for (let o = from; o < to; o++) out.push(`${p}:${o}`);
  return out.sort();
};

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true }))) {
      fail(`createTopics: ${topic} not created`);
    }
    await produce(0, 10);
    const first = await consume(30, false);
    if (JSON.stringify(first.sort()) !== JSON.stringify(expected(0, 10))) fail(`run 1 consumed ${first}`);

    await produce(10, 5);
    const second = await consume(15, true);
    if (JSON.stringify(second.sort()) !== JSON.stringify(expected(10, 15))) {
      fail(`run 2 did not resume after run 1's commit: got ${second}`);
    }

    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const committed = offsets.partitions.map((p) => `${p.partition}:${p.offset}`).sort();
    if (JSON.stringify(committed) !== JSON.stringify(['0:15', '1:15', '2:15'])) {
      fail(`fetchOffsets after run 2: ${committed}, expected 15 on each partition`);
    }
    const { groups } = await admin.listGroups();
    if (!groups.some((g) => g.groupId === groupId && g.protocolType === 'consumer')) {
      fail(`listGroups does not show ${groupId}: ${JSON.stringify(groups)}`);
    }
    const described = (await admin.describeGroups([groupId])).groups[0];
    if (described.state !== 'Empty' || described.members.length !== 0) {
      fail(`describeGroups after both runs left: ${JSON.stringify(described)}`);
    }
    await admin.deleteGroups([groupId]);
    if ((await admin.listGroups()).groups.some((g) => g.groupId === groupId)) fail('group listed after deleteGroups');
    await admin.deleteTopics({ topics: [topic] });
  } finally {
    await admin.disconnect();
  }
}

main().then(
  () => {
    console.log('PASS kafkajs-groups');
    process.exit(0);
  },
  (e) => {
    console.error(`FAIL kafkajs-groups (topic ${topic}): ${e.stack || e}`);
    process.exit(1);
  },
);
