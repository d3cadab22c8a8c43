//! librdkafka consumer-group helpers: numbered records, members subscribed to a topic,
//! polling several members at once, synchronous commits. Shared by the group tests of
//! both backends.

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

pub fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let results = rt
        .block_on(admin.create_topics(&[topic], &AdminOptions::new()))
        .unwrap();
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

/// Produces `count` records numbered from `first`, spread over the partitions.
pub fn produce(bootstrap: &str, topic: &str, first: usize, count: usize) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "2")
        .create()
        .unwrap();
    for n in first..first + count {
        let value = n.to_string();
        let key = format!("k{n}");
        producer
            .send(BaseRecord::to(topic).key(&key).payload(&value))
            .map_err(|(e, _)| e)
            .unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

pub fn member(bootstrap: &str, group: &str, topic: &str, assignor: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "500")
        .set("partition.assignment.strategy", assignor)
        .create()
        .unwrap();
    c.subscribe(&[topic]).unwrap();
    c
}

/// Polls every consumer in turn until `want` records arrived in all or time runs out.
/// Returns the records each consumer got, as `(partition, value)`.
pub fn consume(
    consumers: &[&BaseConsumer],
    want: usize,
    within: Duration,
) -> Vec<Vec<(i32, String)>> {
    let mut got: Vec<Vec<(i32, String)>> = vec![Vec::new(); consumers.len()];
    let deadline = Instant::now() + within;
    while got.iter().map(Vec::len).sum::<usize>() < want && Instant::now() < deadline {
        for (i, c) in consumers.iter().enumerate() {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
                let value = String::from_utf8(m.payload().unwrap().to_vec()).unwrap();
                got[i].push((m.partition(), value));
            }
        }
    }
    got
}

pub fn commit(c: &BaseConsumer) {
    c.commit_consumer_state(CommitMode::Sync).expect("commit");
}
