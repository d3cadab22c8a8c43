//! Transactions through real clients and raw requests, on both stores: librdkafka's
//! transactional producer and read-committed consumer (`librdkafka.rs`), what a
//! SIGKILLed gateway leaves behind (`restarts.rs`), the refusals Kafka answers
//! (`refusals.rs`), a coordinator killed among several gateways on one Iggy
//! (`cluster.rs`), the admin APIs' ACLs and per-gateway scope (`admin.rs`),
//! transactions v2 as Kafka 4 clients speak them (`v2.rs`), a batch of an epoch a
//! marker ended, which no reader waits for (`fenced.rs`), and a producer fenced by a
//! newer one with its transactional id told so at every API and version
//! (`fencing.rs`) and through librdkafka and the Java client (`zombies.rs`), and an
//! idle transactional id forgotten after `transactional_id_expiration_ms`
//! (`expiration.rs`).

mod admin;
mod cluster;
mod expiration;
mod fenced;
mod fencing;
mod librdkafka;
mod refusals;
mod restarts;
mod v2;
mod zombies;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerGroupMetadata};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::Message;

use crate::support::kafka::assign_from_start;

/// A librdkafka producer of transactional id `id`, its transactions initialized.
pub fn txn_producer(bootstrap: &str, id: &str, timeout_ms: u32) -> BaseProducer {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", id)
        .set("transaction.timeout.ms", timeout_ms.to_string())
        .set("linger.ms", "5")
        .create()
        .expect("transactional producer");
    producer
        .init_transactions(Duration::from_secs(30))
        .expect("init_transactions");
    producer
}

/// Sends `values` round robin over `partitions` partitions, and waits for them all.
pub fn send(producer: &BaseProducer, topic: &str, partitions: i32, values: &[String]) {
    for (i, v) in values.iter().enumerate() {
        let record = BaseRecord::<(), _>::to(topic)
            .partition(i as i32 % partitions)
            .payload(v);
        producer.send(record).map_err(|(e, _)| e).expect("send");
    }
    producer.flush(Duration::from_secs(30)).expect("flush");
}

pub fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Every value of `topic` from the start, per partition in offset order, read at
/// `isolation` until `want` came and then a second more for anything extra.
pub fn read(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    isolation: &str,
    want: usize,
) -> BTreeMap<i32, Vec<String>> {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap);
    config.set("isolation.level", isolation);
    read_with(config, topic, partitions, want)
}

/// `read` by a consumer of `config` (its bootstrap servers and isolation level set).
pub fn read_with(
    mut config: ClientConfig,
    topic: &str,
    partitions: i32,
    want: usize,
) -> BTreeMap<i32, Vec<String>> {
    let consumer: BaseConsumer = config
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    assign_from_start(&consumer, topic, 0..partitions);
    let mut got: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut quiet_until = None;
    loop {
        let now = Instant::now();
        if now > deadline || quiet_until.is_some_and(|q| now > q) {
            return got;
        }
        if let Some(m) = consumer.poll(Duration::from_millis(100)) {
            let m = m.expect("consume error");
            let value = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
            got.entry(m.partition()).or_default().push(value);
        }
        if quiet_until.is_none() && got.values().map(Vec::len).sum::<usize>() >= want {
            quiet_until = Some(Instant::now() + Duration::from_secs(1));
        }
    }
}

/// `values` as `send` spreads them: per partition, in order.
pub fn spread(values: &[String], partitions: i32) -> BTreeMap<i32, Vec<String>> {
    let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for (i, v) in values.iter().enumerate() {
        out.entry(i as i32 % partitions)
            .or_default()
            .push(v.clone());
    }
    out
}

/// What `send_offsets_to_transaction` names a group by: librdkafka takes it from a
/// consumer of the group (which joins nothing here).
pub fn group_metadata(bootstrap: &str, group: &str) -> ConsumerGroupMetadata {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .create()
        .expect("consumer");
    consumer.group_metadata().expect("group metadata")
}
