#!/usr/bin/env node
// KafkaJS admin: createTopics without partitions or replication factor, as apps do.
//
// KafkaJS sends -1 for both at CreateTopics v3 (Kafka's Java client refuses -1 below
// v4); the broker must take them as its defaults, not refuse them:
//   - createTopics of a topic with no numPartitions/replicationFactor is created, sent
//     at CreateTopics v3, with the broker's num.partitions (--partitions, 1 unless the
//     gateway was started otherwise);
//   - replication factor 3 on this one-node gateway is accepted; fetchTopicMetadata
//     shows the one replica the store really keeps;
//   - creating either again answers false (TOPIC_ALREADY_EXISTS); deleteTopics removes both.
//
//   usage: node topics_kafkajs.js HOST:PORT [--partitions N]   (npm install --prefix tests/clients first)
// Prints `PASS kafkajs-topics` or exits non-zero with the first mismatch.
'use strict';
const { Kafka, logLevel } = require('kafkajs');
const crypto = require('crypto');

const BOOTSTRAP = process.argv[2];
if (!BOOTSTRAP) {
  console.error('usage: topics_kafkajs.js HOST:PORT [--partitions N]');
  process.exit(64);
}
const at = process.argv.indexOf('--partitions');
const DEFAULT_PARTITIONS = at > 0 ? Number(process.argv[at + 1]) : 1;
const TIMEOUT_S = 60;
setTimeout(() => {
  console.error(`FAIL kafkajs-topics: timed out after ${TIMEOUT_S}s`);
  process.exit(3);
}, TIMEOUT_S * 1000).unref();

// NOTHING: KafkaJS logs the expected TOPIC_ALREADY_EXISTS answers as errors.
const kafka = new Kafka({ clientId: 'topics-kafkajs', brokers: [BOOTSTRAP], logLevel: logLevel.NOTHING });
const tag = crypto.randomBytes(4).toString('hex');
const defaulted = `topics-kafkajs-defaults-${tag}`;
const replicated = `topics-kafkajs-rf3-${tag}`;

function fail(msg) {
  throw new Error(msg);
}

async function main() {
  const admin = kafka.admin();
  const versions = [];
  admin.on(admin.events.REQUEST, ({ payload }) => {
    if (payload.apiName === 'CreateTopics') versions.push(payload.apiVersion);
  });
  await admin.connect();
  try {
    if (!(await admin.createTopics({ topics: [{ topic: defaulted }], waitForLeaders: true }))) {
      fail(`createTopics with the defaults: ${defaulted} not created`);
    }
    if (!versions.length || versions.some((v) => v !== 3)) fail(`CreateTopics sent at versions ${versions}, expected 3`);
    const rf3 = { topic: replicated, numPartitions: 2, replicationFactor: 3 };
    if (!(await admin.createTopics({ topics: [rf3], waitForLeaders: true }))) {
      fail(`createTopics with replication factor 3: ${replicated} not created`);
    }

    const { topics } = await admin.fetchTopicMetadata({ topics: [defaulted, replicated] });
    const shape = Object.fromEntries(
      topics.map((t) => [t.name, t.partitions.map((p) => p.replicas.length)]),
    );
    const want = {
      [defaulted]: Array(DEFAULT_PARTITIONS).fill(1),
      [replicated]: [1, 1],
    };
    for (const name of [defaulted, replicated]) {
      if (JSON.stringify(shape[name]) !== JSON.stringify(want[name])) {
        fail(`${name}: replicas per partition ${JSON.stringify(shape[name])}, expected ${JSON.stringify(want[name])}`);
      }
    }

    if (await admin.createTopics({ topics: [{ topic: defaulted }, rf3] })) fail('created an existing topic again');
    await admin.deleteTopics({ topics: [defaulted, replicated] });
    const left = (await admin.listTopics()).filter((t) => t === defaulted || t === replicated);
    if (left.length) fail(`listed after deleteTopics: ${left}`);
  } finally {
    await admin.disconnect();
  }
}

main().then(
  () => {
    console.log('PASS kafkajs-topics');
    process.exit(0);
  },
  (e) => {
    console.error(`FAIL kafkajs-topics (${defaulted}): ${e.stack || e}`);
    process.exit(1);
  },
);
