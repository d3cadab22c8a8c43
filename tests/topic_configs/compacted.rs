//! A compacted topic (`cleanup.policy` holding `compact`) takes only records with a
//! key, as Kafka 3+ does (librdkafka's `0011-produce_batch` checks it): a batch with a
//! keyless record is refused INVALID_RECORD (87), each keyless record named by its
//! index in the batch (KIP-467, Produce v8+) in Kafka's words, and nothing of the
//! batch is stored. librdkafka fails the keyless records with INVALID_RECORD and, when
//! two or more are named, the batch's others with `_INVALID_DIFFERENT_RECORD`. An empty key is a key; a topic
//! that only deletes takes keyless records.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::ProduceRequest;
use kafka_protocol::records::Compression;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Message};

use crate::support::configs::create;
use crate::support::kafka::{create_topic, read_values};
use crate::support::records::list_offset;
use crate::support::{batch, call, on_every_store, record, topic_name, Gateway, RawClient, Store};

on_every_store!(
    async: librdkafka_fails_keyless_records_on_a_compacted_topic,
    keyless_records_are_named_as_kafka_names_them,
);

/// A record's delivery: done, or librdkafka's error for it.
type Delivery = Result<(), RDKafkaErrorCode>;

/// Each record's delivery, by its index in what was sent (the record's value).
#[derive(Clone, Default)]
struct Reports(Arc<Mutex<Vec<(usize, Delivery)>>>);

impl ClientContext for Reports {}

impl ProducerContext for Reports {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let (message, outcome) = match result {
            Ok(m) => (m, Ok(())),
            Err((e, m)) => (m, Err(e.rdkafka_error_code().expect("a broker's error"))),
        };
        let payload = String::from_utf8_lossy(message.payload().unwrap_or_default());
        let index = payload.parse().expect("an index");
        self.0.lock().unwrap().push((index, outcome));
    }
}

/// Sends a record of each key in one batch (`codec`-compressed): each one's delivery,
/// in order.
fn deliver(bootstrap: &str, topic: &str, codec: &str, keys: &[Option<&str>]) -> Vec<Delivery> {
    let reports = Reports::default();
    let producer: BaseProducer<Reports> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("compression.codec", codec)
        // Long enough that the flush, not the linger, sends them: one batch.
        .set("linger.ms", "1000")
        .create_with_context(reports.clone())
        .expect("producer");
    for (i, key) in keys.iter().enumerate() {
        let value = i.to_string();
        let mut r = BaseRecord::<str, _>::to(topic).partition(0).payload(&value);
        if let Some(key) = key {
            r = r.key(key);
        }
        producer.send(r).map_err(|(e, _)| e).expect("send");
    }
    let _ = producer.flush(Duration::from_secs(30));
    let mut got = reports.0.lock().unwrap().clone();
    got.sort_by_key(|(i, _)| *i);
    assert_eq!(got.len(), keys.len(), "{got:?}");
    got.into_iter().map(|(_, outcome)| outcome).collect()
}

async fn librdkafka_fails_keyless_records_on_a_compacted_topic(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let bootstrap = gw.bootstrap();
    use RDKafkaErrorCode::{InvalidDifferentRecord as Other, InvalidRecord as Keyless};
    for (topic, policy, codec) in [
        ("keys-compacted", "compact", "none"),
        ("keys-compacted-lz4", "delete,compact", "lz4"),
    ] {
        create_topic(&bootstrap, topic, 1, &[("cleanup.policy", policy)]).await;
        let mixed = [Some("k0"), None, Some("k2"), None, Some("")];
        let refused = [
            Err(Other),
            Err(Keyless),
            Err(Other),
            Err(Keyless),
            Err(Other),
        ];
        assert_eq!(
            deliver(&bootstrap, topic, codec, &mixed),
            refused,
            "{topic}"
        );
        // One record at fault: librdkafka gives the whole batch the partition's error.
        let one = [Some("k0"), None];
        assert_eq!(
            deliver(&bootstrap, topic, codec, &one),
            [Err(Keyless), Err(Keyless)]
        );
        let keyed = [Some("k0"), Some("")];
        assert_eq!(deliver(&bootstrap, topic, codec, &keyed), [Ok(()), Ok(())]);
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &bootstrap);
        // Refused batches were stored nowhere: the keyed one is all there is.
        assert_eq!(read_values(&config, topic, 2), ["0", "1"], "{topic}");
    }
    create_topic(
        &bootstrap,
        "keys-deleted",
        1,
        &[("cleanup.policy", "delete")],
    )
    .await;
    assert_eq!(
        deliver(&bootstrap, "keys-deleted", "none", &[None]),
        [Ok(())]
    );
}

/// Produce at `version` of one batch to partition 0, a record of each key.
fn produce(
    c: &mut RawClient,
    version: i16,
    topic: &str,
    keys: &[Option<&str>],
) -> PartitionProduceResponse {
    let records: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let mut r = record(key.map(str::as_bytes), b"v", 1_700_000_000_000);
            // One batch: the encoder splits where offset − sequence changes.
            r.offset = i as i64;
            r.sequence = i as i32 - 1;
            r
        })
        .collect();
    let data = TopicProduceData::default()
        .with_name(topic_name(topic))
        .with_partition_data(vec![
            PartitionProduceData::default().with_records(Some(batch(&records, Compression::None)))
        ]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![data]);
    call!(c, Produce, version, request)
        .responses
        .remove(0)
        .partition_responses
        .remove(0)
}

async fn keyless_records_are_named_as_kafka_names_them(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    const TOPIC: &str = "keys-raw";
    assert_eq!(
        create(
            &mut c,
            7,
            TOPIC,
            &[("cleanup.policy", Some("compact"))],
            false
        )
        .error_code,
        0
    );
    let why =
        format!("Compacted topic cannot accept message without key in topic partition {TOPIC}-0.");
    let shown = [0, 2, 3].map(|i| format!("RecordError(batchIndex={i}, message='{why}')"));
    let message = format!(
        "One or more records have been rejected due to 4 record errors in total, and only \
         showing the first three errors at most: [{}]",
        shown.join(", ")
    );
    for version in [3, 7, 8, 9, 12] {
        let p = produce(&mut c, version, TOPIC, &[None, Some("k"), None, None, None]);
        assert_eq!((p.error_code, p.base_offset), (87, -1), "v{version}: {p:?}");
        let named: Vec<_> = p
            .record_errors
            .iter()
            .map(|e| {
                (
                    e.batch_index,
                    e.batch_index_error_message.as_deref().map(str::to_string),
                )
            })
            .collect();
        if version >= 8 {
            assert_eq!(
                p.error_message.as_deref(),
                Some(message.as_str()),
                "v{version}"
            );
            let want: Vec<_> = [0, 2, 3, 4].map(|i| (i, Some(why.clone()))).into();
            assert_eq!(named, want, "v{version}");
        } else {
            assert_eq!((p.error_message, named), (None, vec![]), "v{version}");
        }
    }
    assert_eq!(list_offset(&mut c, TOPIC, 0, -1), 0, "nothing stored");
    assert_eq!(
        produce(&mut c, 9, TOPIC, &[Some("k"), Some("")]).error_code,
        0
    );
    assert_eq!(list_offset(&mut c, TOPIC, 0, -1), 2);
}
