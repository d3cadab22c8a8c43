//! librdkafka consumer-group helpers: numbered records, members subscribed to a topic,
//! polling several members at once (every record exactly once, no errors), synchronous
//! commits. Shared by the group tests of both backends.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, DefaultConsumerContext,
};
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

/// KIP-848 members told to beat every 500 ms, as the classic members here do: below
/// Kafka's 5 s floor, so the floor is lowered with it.
pub const QUICK_BEATS: [(&str, &str); 2] = [
    ("group_consumer_min_heartbeat_interval_ms", "500"),
    ("group_consumer_heartbeat_interval_ms", "500"),
];

pub fn member(bootstrap: &str, group: &str, topic: &str, assignor: &str) -> BaseConsumer {
    member_with(bootstrap, group, topic, assignor, DefaultConsumerContext)
}

/// A member whose `context` sees its rebalances.
pub fn member_with<C: ConsumerContext>(
    bootstrap: &str,
    group: &str,
    topic: &str,
    assignor: &str,
    context: C,
) -> BaseConsumer<C> {
    let c: BaseConsumer<C> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "500")
        .set("partition.assignment.strategy", assignor)
        .create_with_context(context)
        .unwrap();
    c.subscribe(&[topic]).unwrap();
    c
}

/// Polls every consumer in turn until `want` records arrived in all, then on for a
/// moment to catch any record delivered twice: more than `want` fails, as does any
/// error a consumer reports, and so does time running out. Returns the records each
/// consumer got, as `(partition, value)`.
pub fn consume<C: ConsumerContext>(
    consumers: &[&BaseConsumer<C>],
    want: usize,
    within: Duration,
) -> Vec<Vec<(i32, String)>> {
    let mut got: Vec<Vec<(i32, String)>> = vec![Vec::new(); consumers.len()];
    let deadline = Instant::now() + within;
    let total = |got: &[Vec<(i32, String)>]| got.iter().map(Vec::len).sum::<usize>();
    let mut quiet_until = None;
    loop {
        let n = total(&got);
        assert!(n <= want, "{n} records where {want} were expected: {got:?}");
        if n == want {
            let until = *quiet_until.get_or_insert_with(|| Instant::now() + EXTRA_WINDOW);
            if Instant::now() >= until {
                let values: HashSet<&String> = got.iter().flatten().map(|(_, v)| v).collect();
                assert_eq!(values.len(), want, "a record read twice: {got:?}");
                return got;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{n} of {want} records within {within:?}"
        );
        for (i, c) in consumers.iter().enumerate() {
            match c.poll(Duration::from_millis(50)) {
                Some(Ok(m)) => {
                    let value = String::from_utf8(m.payload().unwrap().to_vec()).unwrap();
                    got[i].push((m.partition(), value));
                }
                Some(Err(e)) => panic!("consumer {i}: {e}"),
                None => {}
            }
        }
    }
}

/// How long [`consume`] goes on polling once it has all it wanted.
const EXTRA_WINDOW: Duration = Duration::from_millis(500);

pub fn commit<C: ConsumerContext>(c: &BaseConsumer<C>) {
    c.commit_consumer_state(CommitMode::Sync).expect("commit");
}

/// The node FindCoordinator names for `group`, asked of `gw`.
pub fn coordinator_of(gw: &super::Gateway, group: &str) -> i32 {
    use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
    use kafka_protocol::protocol::StrBytes;
    let mut c = super::RawClient::connect(gw.addr);
    let req = FindCoordinatorRequest::default().with_key(StrBytes::from_string(group.into()));
    super::call!(c, FindCoordinator, 3, req).node_id.0
}

/// OffsetCommit v8 as admin tools send it (generation -1, no member) of `offset` of
/// one partition: its error code.
pub fn commit_as_admin(
    c: &mut super::RawClient,
    group: &str,
    (topic, partition): (&str, i32),
    offset: i64,
) -> i16 {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest};
    use kafka_protocol::protocol::StrBytes;
    let t = OffsetCommitRequestTopic::default()
        .with_name(super::topic_name(topic))
        .with_partitions(vec![OffsetCommitRequestPartition::default()
            .with_partition_index(partition)
            .with_committed_offset(offset)
            .with_committed_leader_epoch(-1)]);
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_topics(vec![t]);
    super::call!(c, OffsetCommit, 8, request).topics[0].partitions[0].error_code
}

/// FindCoordinator's key types.
pub const GROUP_KEY: i8 = 0;
pub const TRANSACTION_KEY: i8 = 1;

/// The port of the gateway coordinating `key` (a group or a transactional id), as
/// `gw` answers FindCoordinator.
pub fn coordinator_port(gw: &super::Gateway, key_type: i8, key: &str) -> i32 {
    use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
    use kafka_protocol::protocol::StrBytes;
    let mut c = super::RawClient::connect(gw.addr);
    let request = FindCoordinatorRequest::default()
        .with_key_type(key_type)
        .with_key(StrBytes::from_string(key.into()));
    let r = super::call!(c, FindCoordinator, 3, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.port
}

/// `gw`'s own node id: the broker its Metadata lists at its own address.
pub fn node_id(gw: &super::Gateway) -> i32 {
    use kafka_protocol::messages::MetadataRequest;
    let mut c = super::RawClient::connect(gw.addr);
    let metadata = super::call!(
        c,
        Metadata,
        12,
        MetadataRequest::default().with_topics(None)
    );
    metadata
        .brokers
        .iter()
        .find(|b| b.port == i32::from(gw.addr.port()))
        .map(|b| b.node_id.0)
        .expect("the gateway lists itself")
}

/// Produces numbered values (`0`, `1`, …, keyed `k0`, `k1`, …) to `topic`, one every
/// 5 ms, idempotently with acks=all, until `stop`; returns how many.
pub fn producing(
    bootstrap: String,
    topic: &'static str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("linger.ms", "5")
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set("message.timeout.ms", "120000")
            .set("reconnect.backoff.max.ms", "500")
            .create()
            .expect("producer");
        let mut n = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let (key, value) = (format!("k{n}"), n.to_string());
            if producer
                .send(BaseRecord::to(topic).key(&key).payload(&value))
                .is_ok()
            {
                n += 1;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        producer.flush(Duration::from_secs(120)).expect("flush");
        n
    })
}

/// Every record each member gets, by value: how often it was read.
#[derive(Default)]
pub struct Read(pub BTreeMap<u64, usize>);

impl Read {
    /// Polls each member for what it has, then commits it (synchronously): until
    /// `done` holds or `within` passes.
    pub fn until<C: ConsumerContext>(
        &mut self,
        members: &[&BaseConsumer<C>],
        within: Duration,
        done: impl Fn(&Read) -> bool,
    ) {
        let deadline = Instant::now() + within;
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "{} values read; last {:?}",
                self.0.len(),
                self.0.keys().next_back()
            );
            for m in members {
                let fatal = m.client().fatal_error();
                assert!(fatal.is_none(), "a member failed for good: {fatal:?}");
                let mut got = false;
                // Transport errors while a gateway goes away are the client's to retry.
                while let Some(Ok(msg)) = m.poll(Duration::from_millis(10)) {
                    let v = std::str::from_utf8(msg.payload().unwrap()).unwrap();
                    *self.0.entry(v.parse().unwrap()).or_default() += 1;
                    got = true;
                }
                if got {
                    if let Err(e) = m.commit_consumer_state(CommitMode::Sync) {
                        // A coordinator moving: retried with the next poll's commit.
                        eprintln!("commit not done, retried: {e}");
                    }
                }
            }
        }
    }

    pub fn read_twice(&self) -> Vec<(u64, usize)> {
        self.0
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(v, n)| (*v, *n))
            .collect()
    }

    /// Whether every value below `n` was read.
    pub fn all_of(&self, n: u64) -> bool {
        (0..n).all(|v| self.0.contains_key(&v))
    }
}
