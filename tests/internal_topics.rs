//! `__consumer_offsets` on both stores: listed in Metadata as Kafka's internal topic
//! (clients' regex subscriptions and `listTopics` act on the flag), with one id across
//! restarts, never auto-created as an ordinary topic, refusing creation, deletion,
//! alteration and produce with the codes a broker sends, and read as an empty log.

use crate::support;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{FetchRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest};
use kafka_protocol::records::Compression;
use uuid::Uuid;

use support::configs::{
    alter, create, delete, incremental, topic_configs, INVALID_REQUEST, INVALID_TOPIC, SET,
    TOPIC_EXISTS,
};
use support::{batch, call, record, topic_name, Gateway, RawClient, Store};

const OFFSETS: &str = "__consumer_offsets";
const OFFSET_OUT_OF_RANGE: i16 = 1;

/// Every topic Metadata lists at `v` (`names` None: all of them), by name.
fn metadata(c: &mut RawClient, v: i16, names: Option<&[&str]>) -> Vec<MetadataResponseTopic> {
    let topics = names.map(|names| {
        let topic = |n: &&str| MetadataRequestTopic::default().with_name(Some(topic_name(n)));
        names.iter().map(topic).collect()
    });
    let request = MetadataRequest::default()
        .with_topics(topics)
        .with_allow_auto_topic_creation(true);
    call!(c, Metadata, v, request).topics
}

fn find<'a>(topics: &'a [MetadataResponseTopic], name: &str) -> &'a MetadataResponseTopic {
    topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.as_str() == name))
        .unwrap_or_else(|| panic!("{name} not in {topics:?}"))
}

fn consumer_offsets_is_listed_as_internal(store: Store) {
    let Some(mut gw) = Gateway::process_on(store, &[("auto_create_topics_enable", "true")]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(create(&mut c, 7, "ordinary", &[], false).error_code, 0);

    // A list of all topics, at v1 (the first with the flag) and v12 (with topic ids).
    for v in [1, 12] {
        let all = metadata(&mut c, v, None);
        let offsets = find(&all, OFFSETS);
        assert_eq!(
            (offsets.error_code, offsets.is_internal),
            (0, true),
            "v{v}: {offsets:?}"
        );
        assert_eq!(offsets.partitions.len(), 50, "v{v}");
        assert!(!find(&all, "ordinary").is_internal, "v{v}");
    }
    // Named, with auto-creation allowed: found as it is, not made into an ordinary topic.
    let named = metadata(&mut c, 12, Some(&[OFFSETS]));
    assert_eq!(
        (named[0].error_code, named[0].is_internal),
        (0, true),
        "{named:?}"
    );
    let id = named[0].topic_id;
    assert_ne!(id, Uuid::nil());

    // Every gateway of the cluster derives the same id, so a restart keeps it.
    drop(c);
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    let again = metadata(&mut c, 12, Some(&[OFFSETS]));
    assert_eq!((again[0].topic_id, again[0].is_internal), (id, true));
    let all = metadata(&mut c, 12, None);
    assert_eq!(all.iter().filter(|t| t.is_internal).count(), 1, "{all:?}");
}

fn consumer_offsets_refuses_changes_and_reads_empty(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);

    // It exists, so creating it is TOPIC_ALREADY_EXISTS, validate_only or not.
    for validate_only in [true, false] {
        let made = create(&mut c, 7, OFFSETS, &[], validate_only);
        assert_eq!(made.error_code, TOPIC_EXISTS, "{made:?}");
    }
    // It stands for the offset store: neither deleted nor altered.
    assert_eq!(delete(&mut c, OFFSETS), INVALID_REQUEST);
    let configs: &[(&str, Option<&str>)] = &[("retention.ms", Some("1000"))];
    let (code, message) = &alter(&mut c, 2, &[((2, OFFSETS), configs)], false)[0];
    assert_eq!(*code, INVALID_REQUEST, "{message:?}");
    assert!(
        message.as_deref().unwrap_or("").contains("internal"),
        "{message:?}"
    );
    let ops: &[(&str, i8, Option<&str>)] = &[("retention.ms", SET, Some("1000"))];
    assert_eq!(
        incremental(&mut c, 1, &[((2, OFFSETS), ops)], false)[0].0,
        INVALID_REQUEST
    );
    // Described as Kafka's is: compacted.
    let configs = topic_configs(&mut c, OFFSETS);
    assert_eq!(configs["cleanup.policy"].0, "compact", "{configs:?}");

    // Clients cannot append to it.
    let records = batch(
        &[record(None, b"forged commit", 1_700_000_000_000)],
        Compression::None,
    );
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(OFFSETS))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(3)
                .with_records(Some(records))])]);
    let produced = call!(c, Produce, 9, request);
    let p = &produced.responses[0].partition_responses[0];
    assert_eq!(p.error_code, INVALID_TOPIC, "{p:?}");

    // Reads find an empty log: nothing at 0, out of range past it (no watermark with an
    // error, as Kafka answers), 0 at both ends.
    for (offset, code, high) in [(0, 0, 0), (5, OFFSET_OUT_OF_RANGE, -1)] {
        let request = FetchRequest::default()
            .with_max_wait_ms(0)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(OFFSETS))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(7)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(1 << 20)])]);
        let fetched = call!(c, Fetch, 12, request);
        let p = &fetched.responses[0].partitions[0];
        assert_eq!(
            (p.error_code, p.high_watermark),
            (code, high),
            "at {offset}: {p:?}"
        );
        assert!(p.records.as_ref().is_none_or(|r| r.is_empty()), "{p:?}");
    }
    for timestamp in [-1, -2] {
        let request = ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(topic_name(OFFSETS))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(7)
                    .with_timestamp(timestamp)])]);
        let listed = call!(c, ListOffsets, 7, request);
        let p = &listed.topics[0].partitions[0];
        assert_eq!(
            (p.error_code, p.offset),
            (0, 0),
            "timestamp {timestamp}: {p:?}"
        );
    }
    // Still one internal topic, unchanged.
    let all = metadata(&mut c, 12, None);
    assert_eq!(find(&all, OFFSETS).partitions.len(), 50);
}

support::on_every_store!(
    consumer_offsets_is_listed_as_internal,
    consumer_offsets_refuses_changes_and_reads_empty,
);
