//! Idempotent producers: a retried batch is answered with the offset it already got
//! and stored once, sequence gaps and fenced epochs are refused, and all of it holds
//! across a crash of the gateway, since the state is rebuilt from the stored batches.
//! Hand-built batches (RawClient) pin down the exact answers; an rdkafka producer shows
//! a real client gets exactly-once writes across a SIGKILL that leaves written
//! batches unacknowledged (a proxy holds the answers back), so its retries must be
//! recognised by the restarted gateway, and that several rdkafka producers writing one
//! partition at once (their batches written together) each get every record stored
//! once, in order, where they were told.

use crate::support;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use kafka_protocol::messages::produce_request::{
    PartitionProduceData, ProduceRequest, TopicProduceData,
};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchDecoder};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use support::proxy::Proxy;
use support::{batch, record, Gateway, RawClient, StartOn, Store};

pub(crate) const TOPIC: &str = "idem";
// Newest versions that still name topics (v13 of Produce and Fetch use topic ids).
const PRODUCE_V: i16 = 12;
const FETCH_V: i16 = 12;
const LIST_OFFSETS_V: i16 = 7;
const OUT_OF_ORDER: i16 = 45;
pub(crate) const REQUEST_TIMED_OUT: i16 = 7;
const FENCED_EPOCH: i16 = 47;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

pub(crate) fn create_topic(c: &mut RawClient, topic: &str, partitions: i32) {
    let req = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1)]);
    let ResponseKind::CreateTopics(r) =
        c.call(ApiKey::CreateTopics, 5, RequestKind::CreateTopics(req))
    else {
        panic!("not a CreateTopics response")
    };
    let t = &r.topics[0];
    assert_eq!(t.error_code, 0, "create {topic}: {:?}", t.error_message);
}

/// InitProducerId without a transactional id: `(error code, producer id, epoch)`.
fn init_producer(c: &mut RawClient, transactional_id: Option<&str>) -> (i16, i64, i16) {
    // The request's default carries Some(""), a transactional id: clear it explicitly.
    let req = InitProducerIdRequest::default()
        .with_transactional_id(
            transactional_id.map(|t| TransactionalId(StrBytes::from_string(t.into()))),
        )
        .with_transaction_timeout_ms(60_000);
    let ResponseKind::InitProducerId(r) =
        c.call(ApiKey::InitProducerId, 4, RequestKind::InitProducerId(req))
    else {
        panic!("not an InitProducerId response")
    };
    (r.error_code, r.producer_id.0, r.producer_epoch)
}

pub(crate) fn new_producer(c: &mut RawClient) -> i64 {
    let (code, id, epoch) = init_producer(c, None);
    assert_eq!(
        (code, epoch),
        (0, 0),
        "InitProducerId: error {code}, epoch {epoch}"
    );
    assert!(id >= 0, "producer id {id}");
    id
}

/// `n` records of one idempotent batch starting at sequence `seq`; values `tag-i`.
fn records(pid: i64, epoch: i16, seq: i32, n: i32, tag: &str) -> Vec<Record> {
    (0..n)
        .map(|i| Record {
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            offset: i as i64,
            sequence: seq.wrapping_add(i),
            ..record(
                None,
                format!("{tag}-{i}").as_bytes(),
                1_700_000_000_000 + i as i64,
            )
        })
        .collect()
}

pub(crate) fn idempotent_batch(pid: i64, epoch: i16, seq: i32, n: i32, tag: &str) -> Bytes {
    batch(&records(pid, epoch, seq, n, tag), Compression::None)
}

/// Produces one batch to partition 0 with acks=all: `(error code, base offset)`.
pub(crate) fn produce(
    c: &mut RawClient,
    batch: Bytes,
    transactional_id: Option<&str>,
) -> (i16, i64) {
    produce_to(c, 0, batch, transactional_id)
}

/// [`produce`] to another partition of the topic.
pub(crate) fn produce_to(
    c: &mut RawClient,
    partition: i32,
    batch: Bytes,
    transactional_id: Option<&str>,
) -> (i16, i64) {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_transactional_id(
            transactional_id.map(|t| TransactionalId(StrBytes::from_string(t.into()))),
        )
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(batch))])]);
    let ResponseKind::Produce(r) = c.call(ApiKey::Produce, PRODUCE_V, RequestKind::Produce(req))
    else {
        panic!("not a Produce response")
    };
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// The partition's high watermark through ListOffsets (latest).
fn high_watermark(c: &mut RawClient, topic: &str, partition: i32) -> i64 {
    let req = ListOffsetsRequest::default()
        .with_replica_id((-1).into())
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(partition)
                .with_timestamp(-1)])]);
    let ResponseKind::ListOffsets(r) = c.call(
        ApiKey::ListOffsets,
        LIST_OFFSETS_V,
        RequestKind::ListOffsets(req),
    ) else {
        panic!("not a ListOffsets response")
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "ListOffsets {topic}-{partition}");
    p.offset
}

/// Every stored record of a partition as `(offset, value)`, read with Fetch up to the
/// high watermark. Whole batches come back, so records below the asked offset are skipped.
fn fetch_all(c: &mut RawClient, topic: &str, partition: i32) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = Vec::new();
    let mut next = 0;
    for _ in 0..1_000 {
        let req = FetchRequest::default()
            .with_max_wait_ms(0)
            .with_topics(vec![FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(next)
                    .with_partition_max_bytes(1 << 20)])]);
        let ResponseKind::Fetch(r) = c.call(ApiKey::Fetch, FETCH_V, RequestKind::Fetch(req)) else {
            panic!("not a Fetch response")
        };
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "Fetch {topic}-{partition} at {next}");
        if next >= p.high_watermark {
            return out;
        }
        let mut data = p.records.clone().unwrap_or_default();
        let sets = RecordBatchDecoder::decode_all(&mut data).expect("stored batches decode");
        let from = next;
        for r in sets
            .into_iter()
            .flat_map(|s| s.records)
            .filter(|r| r.offset >= from)
        {
            let value = String::from_utf8(r.value.clone().unwrap_or_default().to_vec()).unwrap();
            out.push((r.offset, value));
            next = r.offset + 1;
        }
    }
    panic!("Fetch of {topic}-{partition} made no progress at offset {next}");
}

/// The values `tag-0 .. tag-(n-1)`, as [`records`] writes them.
pub(crate) fn values(parts: &[(&str, i32)]) -> Vec<String> {
    parts
        .iter()
        .flat_map(|(tag, n)| (0..*n).map(move |i| format!("{tag}-{i}")))
        .collect()
}

pub(crate) fn stored_values(c: &mut RawClient) -> Vec<String> {
    let stored = fetch_all(c, TOPIC, 0);
    // Offsets are dense from 0: nothing was skipped or written in between.
    let offsets: Vec<i64> = stored.iter().map(|(o, _)| *o).collect();
    assert_eq!(offsets, (0..stored.len() as i64).collect::<Vec<_>>());
    stored.into_iter().map(|(_, v)| v).collect()
}

/// A gateway from `start` (`Gateway::start_on`, or `Gateway::process_on` for a test
/// that kills it) with the topic made; `None` when the store cannot run here.
fn gateway_with_topic(
    start: StartOn,
    store: Store,
    partitions: i32,
) -> Option<(Gateway, RawClient)> {
    let gw = start(store, &[])?;
    let mut c = RawClient::connect(gw.addr);
    create_topic(&mut c, TOPIC, partitions);
    Some((gw, c))
}

/// Produces `n` records of producer `pid` from sequence `seq`: `(error code, base offset)`.
fn send(c: &mut RawClient, pid: i64, epoch: i16, seq: i32, n: i32, tag: &str) -> (i16, i64) {
    produce(c, idempotent_batch(pid, epoch, seq, n, tag), None)
}

fn a_retried_batch_gets_its_first_offset_and_is_stored_once(store: Store) {
    let Some((_gw, mut c)) = gateway_with_topic(Gateway::start_on, store, 1) else {
        return;
    };
    let pid = new_producer(&mut c);
    let a = idempotent_batch(pid, 0, 0, 5, "a");
    assert_eq!(produce(&mut c, a.clone(), None), (0, 0));
    // The same bytes again, as a producer retries after a lost answer: the first
    // offset and no error, and nothing written.
    assert_eq!(produce(&mut c, a.clone(), None), (0, 0), "duplicate");
    assert_eq!(high_watermark(&mut c, TOPIC, 0), 5, "duplicate written");

    // Sequence 7 when 5 is expected: a gap, refused without writing.
    assert_eq!(send(&mut c, pid, 0, 7, 1, "gap").0, OUT_OF_ORDER);
    assert_eq!(high_watermark(&mut c, TOPIC, 0), 5);

    assert_eq!(send(&mut c, pid, 0, 5, 3, "b"), (0, 5));
    // An older batch still in the kept window is still recognised.
    assert_eq!(produce(&mut c, a, None), (0, 0));
    assert_eq!(stored_values(&mut c), values(&[("a", 5), ("b", 3)]));
}

fn an_older_epoch_is_fenced(store: Store) {
    let Some((_gw, mut c)) = gateway_with_topic(Gateway::start_on, store, 1) else {
        return;
    };
    let pid = new_producer(&mut c);
    assert_eq!(send(&mut c, pid, 0, 0, 2, "e0"), (0, 0));
    // A bumped epoch restarts the sequence at 0.
    assert_eq!(send(&mut c, pid, 1, 0, 2, "e1"), (0, 2));
    // A zombie of the older epoch, continuing its sequence.
    assert_eq!(send(&mut c, pid, 0, 2, 1, "zombie").0, FENCED_EPOCH);
    assert_eq!(stored_values(&mut c), values(&[("e0", 2), ("e1", 2)]));
}

fn producer_state_survives_a_crash(store: Store) {
    let Some((mut gw, mut c)) = gateway_with_topic(Gateway::process_on, store, 1) else {
        return;
    };
    let pid = new_producer(&mut c);
    assert_eq!(send(&mut c, pid, 0, 0, 3, "a"), (0, 0));
    let b = idempotent_batch(pid, 0, 3, 2, "b");
    assert_eq!(produce(&mut c, b.clone(), None), (0, 3));

    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    // The producer never saw B's answer and retries it against the new process.
    assert_eq!(produce(&mut c, b, None), (0, 3), "retry after restart");
    assert_eq!(high_watermark(&mut c, TOPIC, 0), 5, "retry written again");
    // An unknown producer may start at any sequence, so refusing this gap shows the
    // state was reloaded rather than forgotten.
    assert_eq!(send(&mut c, pid, 0, 9, 1, "gap").0, OUT_OF_ORDER);
    assert_eq!(send(&mut c, pid, 0, 5, 4, "c"), (0, 5));
    let expected = values(&[("a", 3), ("b", 2), ("c", 4)]);
    assert_eq!(stored_values(&mut c), expected);
}

/// After a crash the producer state is read back from the log, which cannot say whether
/// the producer heard of its last batch (an append that timed out may have landed). A
/// later batch out of order is then answered retriably, not OUT_OF_ORDER: told that,
/// librdkafka would start a new epoch and send the unacknowledged batch again under new
/// sequence numbers, storing it twice. Its retry is found a duplicate, and after that a
/// gap is refused for good.
fn a_gap_before_the_producer_heard_of_its_last_batch_is_retriable(store: Store) {
    let Some((mut gw, mut c)) = gateway_with_topic(Gateway::process_on, store, 1) else {
        return;
    };
    let pid = new_producer(&mut c);
    assert_eq!(send(&mut c, pid, 0, 0, 2, "a"), (0, 0));
    let b = idempotent_batch(pid, 0, 2, 2, "b");
    assert_eq!(produce(&mut c, b.clone(), None), (0, 2));

    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    // Sequence 5 while 4 is expected (4's request refused retriably, say), and this
    // process has not answered the producer for B.
    assert_eq!(send(&mut c, pid, 0, 5, 1, "c").0, REQUEST_TIMED_OUT);
    assert_eq!(produce(&mut c, b, None), (0, 2), "B's retry, a duplicate");
    assert_eq!(send(&mut c, pid, 0, 5, 1, "c").0, OUT_OF_ORDER);
    assert_eq!(send(&mut c, pid, 0, 4, 1, "d"), (0, 4));
    assert_eq!(send(&mut c, pid, 0, 5, 1, "c"), (0, 5));
    let expected = values(&[("a", 2), ("b", 2), ("d", 1), ("c", 1)]);
    assert_eq!(stored_values(&mut c), expected);
}

fn sequences_wrap_past_i32_max_across_a_crash(store: Store) {
    let Some((mut gw, mut c)) = gateway_with_topic(Gateway::process_on, store, 1) else {
        return;
    };
    let pid = new_producer(&mut c);
    // Sequences MAX-1, MAX, 0: the stored index must compute the same last sequence (0)
    // as the live check, or the restarted gateway misjudges the retry and the next batch.
    let wrapping = idempotent_batch(pid, 0, i32::MAX - 1, 3, "w");
    assert_eq!(produce(&mut c, wrapping.clone(), None), (0, 0));
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        produce(&mut c, wrapping, None),
        (0, 0),
        "retry after restart"
    );
    assert_eq!(send(&mut c, pid, 0, 5, 1, "gap").0, OUT_OF_ORDER);
    assert_eq!(send(&mut c, pid, 0, 1, 2, "next"), (0, 3));
    assert_eq!(stored_values(&mut c), values(&[("w", 3), ("next", 2)]));
}

fn producer_ids_are_never_reused(store: Store) {
    // A process: SIGKILLed.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let mut ids = BTreeSet::new();
    ids.insert(new_producer(&mut c));
    ids.insert(new_producer(&mut c));
    assert_eq!(ids.len(), 2, "the same id twice: {ids:?}");
    // A reused id would inherit the old producer's sequences and be refused or deduplicated.
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    for _ in 0..2 {
        let id = new_producer(&mut c);
        assert!(ids.insert(id), "id {id} again after a restart: {ids:?}");
    }
}

fn transactional_batches_outside_a_transaction_are_refused_and_nothing_is_stored(store: Store) {
    let Some((_gw, mut c)) = gateway_with_topic(Gateway::start_on, store, 1) else {
        return;
    };
    let pid = new_producer(&mut c);
    let mut txn = records(pid, 0, 0, 2, "txn");
    txn.iter_mut().for_each(|r| r.transactional = true);
    // Without the request's transactional id, as Kafka answers it.
    let refused = ResponseError::TransactionalIdAuthorizationFailed.code();
    let answer = produce(&mut c, batch(&txn, Compression::None), None);
    assert_eq!(
        answer,
        (refused, -1),
        "txn batch without a transactional id"
    );
    // With one no producer initialized: from Produce v12 the batch asks to join the
    // transaction, which has no producer (INVALID_PRODUCER_ID_MAPPING, as Kafka).
    let answer = produce(&mut c, batch(&txn, Compression::None), Some("tx-1"));
    let invalid = ResponseError::InvalidProducerIdMapping.code();
    assert_eq!(answer, (invalid, -1), "txn batch outside a transaction");
    assert_eq!(high_watermark(&mut c, TOPIC, 0), 0);
    assert!(stored_values(&mut c).is_empty());
}

fn rdkafka_idempotent_producer_writes_exactly_once_across_a_crash(store: Store) {
    const PARTITIONS: u32 = 3;
    const HALF: u32 = 600;
    // The producer reaches the gateway only through a proxy, which the gateway
    // advertises, so its answers can be held back while its writes go on.
    let port = support::iggy::free_port();
    let proxy = Proxy::start(([127, 0, 0, 1], port).into());
    let advertised = proxy.addr.port().to_string();
    let settings = [
        ("bind_address", &*format!("127.0.0.1:{port}")),
        ("advertised_host", "127.0.0.1"),
        ("advertised_port", &*advertised),
    ];
    // A process: SIGKILLed with batches in flight.
    let Some(mut gw) = Gateway::process_on(store, &settings) else {
        return;
    };
    create_topic(&mut RawClient::connect(gw.addr), TOPIC, PARTITIONS as i32);
    let producer: ThreadedProducer<_> = ClientConfig::new()
        .set("bootstrap.servers", proxy.addr.to_string())
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "60000")
        .set("reconnect.backoff.max.ms", "500")
        .create()
        .expect("producer");
    // A failed delivery shows up below as a missing record, so reports are not collected.
    let send_range = |numbers: std::ops::Range<u32>| {
        for n in numbers {
            let value = format!("m-{n}");
            let record = BaseRecord::<(), _>::to(TOPIC).partition((n % PARTITIONS) as i32);
            producer.send(record.payload(&value)).expect("enqueued");
        }
    };
    let stored = |c: &mut RawClient| -> i64 {
        (0..PARTITIONS as i32)
            .map(|p| high_watermark(c, TOPIC, p))
            .sum()
    };
    send_range(0..HALF);
    producer.flush(Duration::from_secs(30)).expect("flushed");

    // The second half is written but never acknowledged: the gateway dies with those
    // batches in flight, and the producer retries them, same ids and sequences, against
    // the restarted gateway, which must know them from its stored producer state.
    proxy.hold_answers(true);
    send_range(HALF..2 * HALF);
    let mut direct = RawClient::connect(gw.addr);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while stored(&mut direct) <= HALF as i64 {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing of the second half written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    gw.kill();
    proxy.hold_answers(false);
    gw.restart_after_kill();
    producer
        .flush(Duration::from_secs(60))
        .expect("flushed after the restart");
    drop(producer);

    let mut c = RawClient::connect(gw.addr);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for partition in 0..PARTITIONS as i32 {
        let stored = fetch_all(&mut c, TOPIC, partition);
        let numbers: Vec<u32> = stored
            .iter()
            .map(|(_, v)| v[2..].parse().unwrap())
            .collect();
        // Idempotence also keeps a partition's order.
        let ordered = numbers.windows(2).all(|w| w[0] < w[1]);
        assert!(ordered, "partition {partition} out of order: {numbers:?}");
        for (_, v) in stored {
            *seen.entry(v).or_default() += 1;
        }
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "stored more than once: {twice:?}");
    let missing: Vec<u32> = (0..2 * HALF)
        .filter(|n| !seen.contains_key(&format!("m-{n}")))
        .collect();
    assert!(missing.is_empty(), "acknowledged but missing: {missing:?}");
}

/// What a producer was told of each record: its value and offset.
#[derive(Clone, Default)]
struct Acknowledged(std::sync::Arc<std::sync::Mutex<Vec<(String, i64)>>>);

impl rdkafka::ClientContext for Acknowledged {}

impl rdkafka::producer::ProducerContext for Acknowledged {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &rdkafka::message::DeliveryResult<'_>, _: ()) {
        use rdkafka::Message;
        if let Ok(m) = result {
            let value = String::from_utf8(m.payload().unwrap_or_default().to_vec()).unwrap();
            self.0.lock().unwrap().push((value, m.offset()));
        }
    }
}

/// Several idempotent librdkafka producers writing small batches into one partition
/// at once, so batches queue behind each other in its log slot and are written
/// together (group commit): every record is stored once, each producer's in its order,
/// at the offset its producer was told.
fn producers_writing_one_partition_at_once_are_stored_once_at_their_offsets(store: Store) {
    const PRODUCERS: usize = 4;
    const EACH: usize = 500;
    let Some((gw, mut c)) = gateway_with_topic(Gateway::start_on, store, 1) else {
        return;
    };
    let acknowledged = Acknowledged::default();
    std::thread::scope(|s| {
        for p in 0..PRODUCERS {
            let (addr, acknowledged) = (gw.addr.to_string(), acknowledged.clone());
            s.spawn(move || {
                let producer: ThreadedProducer<Acknowledged> = ClientConfig::new()
                    .set("bootstrap.servers", addr)
                    .set("enable.idempotence", "true")
                    .set("acks", "all")
                    .set("linger.ms", "0")
                    .set("batch.num.messages", "10")
                    .create_with_context(acknowledged)
                    .expect("producer");
                for n in 0..EACH {
                    let value = format!("p{p}-{n}");
                    let record = BaseRecord::<(), _>::to(TOPIC).partition(0).payload(&value);
                    producer.send(record).expect("enqueued");
                }
                producer.flush(Duration::from_secs(60)).expect("flushed");
            });
        }
    });
    let told: HashMap<String, i64> = acknowledged.0.lock().unwrap().iter().cloned().collect();
    assert_eq!(
        told.len(),
        PRODUCERS * EACH,
        "every record acknowledged once"
    );
    let stored = fetch_all(&mut c, TOPIC, 0);
    assert_eq!(stored.len(), PRODUCERS * EACH, "every record stored once");
    let mut next = [0usize; PRODUCERS];
    for (offset, value) in &stored {
        assert_eq!(
            told.get(value),
            Some(offset),
            "{value} stored where it was acknowledged"
        );
        let (p, n) = value[1..].split_once('-').unwrap();
        let (p, n): (usize, usize) = (p.parse().unwrap(), n.parse().unwrap());
        assert_eq!(n, next[p], "producer {p}'s records in its order");
        next[p] += 1;
    }
}

support::on_every_store!(
    a_retried_batch_gets_its_first_offset_and_is_stored_once,
    an_older_epoch_is_fenced,
    producer_state_survives_a_crash,
    a_gap_before_the_producer_heard_of_its_last_batch_is_retriable,
    sequences_wrap_past_i32_max_across_a_crash,
    producer_ids_are_never_reused,
    transactional_batches_outside_a_transaction_are_refused_and_nothing_is_stored,
    rdkafka_idempotent_producer_writes_exactly_once_across_a_crash,
    producers_writing_one_partition_at_once_are_stored_once_at_their_offsets,
);
