//! DeleteRecords through real clients, on both stores: librdkafka's AdminClient
//! deletes records below an offset and answers the new low watermark; a consumer from
//! the beginning then reads only what is kept, as does one placed below the start
//! (OFFSET_OUT_OF_RANGE, then `auto.offset.reset`); the start survives a SIGKILL of the
//! gateway, and an idempotent producer writes on after it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rdkafka::admin::AdminOptions;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use crate::support;
use support::kafka::{admin, consume, create_topic, produce, Expected};
use support::records::list_offset;
use support::{Gateway, RawClient, Store};

support::on_every_store!(
    librdkafka_deletes_records_and_consumers_read_only_what_is_kept,
    the_log_start_survives_a_restart,
);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// librdkafka's AdminClient deleting partition 0 of `topic` below `offset`: the low
/// watermark it reports, or the error.
fn delete_below(bootstrap: &str, topic: &str, offset: Offset) -> Result<i64, String> {
    let mut asked = TopicPartitionList::new();
    asked.add_partition_offset(topic, 0, offset).unwrap();
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let result = runtime()
        .block_on(admin(bootstrap).delete_records(&asked, &options))
        .expect("DeleteRecords answered");
    let p = result
        .find_partition(topic, 0)
        .expect("partition 0 answered");
    p.error().map_err(|e| e.to_string())?;
    match p.offset() {
        Offset::Offset(o) => Ok(o),
        other => Err(format!("low watermark {other:?}")),
    }
}

fn records(n: usize) -> Vec<(i32, Expected)> {
    (0..n)
        .map(|i| {
            let value = format!("r{i}").into_bytes();
            (
                0,
                Expected {
                    key: None,
                    value: Some(value),
                    headers: Vec::new(),
                    timestamp: 1_700_000_000_000,
                },
            )
        })
        .collect()
}

fn values(got: &HashMap<i32, Vec<(i64, Expected, rdkafka::Timestamp)>>) -> Vec<(i64, String)> {
    got[&0]
        .iter()
        .map(|(o, e, _)| (*o, String::from_utf8(e.value.clone().unwrap()).unwrap()))
        .collect()
}

/// Offsets read from partition 0 by a consumer placed at `offset` that resets to the
/// earliest, until `n` came.
fn read_from(bootstrap: &str, topic: &str, offset: i64, n: usize) -> Vec<i64> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("{topic}-reset"))
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    let mut at = TopicPartitionList::new();
    at.add_partition_offset(topic, 0, Offset::Offset(offset))
        .unwrap();
    consumer.assign(&at).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut got = Vec::new();
    while got.len() < n {
        assert!(Instant::now() < deadline, "read {got:?}");
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) {
            got.push(m.offset());
        }
    }
    got
}

fn librdkafka_deletes_records_and_consumers_read_only_what_is_kept(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let b = gw.bootstrap();
    runtime().block_on(create_topic(&b, "trimmed", 1, &[]));
    produce(&b, "trimmed", "none", &records(10));

    assert_eq!(delete_below(&b, "trimmed", Offset::Offset(7)), Ok(7));
    let got = consume(&b, "trimmed", &HashMap::from([(0, 3)]));
    let kept: Vec<(i64, String)> = (7..10).map(|i| (i, format!("r{i}"))).collect();
    assert_eq!(values(&got), kept, "only what is kept, from the new start");
    assert_eq!(
        read_from(&b, "trimmed", 2, 3),
        [7, 8, 9],
        "reset to the start"
    );

    let past = delete_below(&b, "trimmed", Offset::Offset(11));
    assert!(past.is_err(), "past the high watermark: {past:?}");
    assert_eq!(
        delete_below(&b, "trimmed", Offset::End),
        Ok(10),
        "everything"
    );
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(list_offset(&mut c, "trimmed", 0, -2), 10);
}

fn the_log_start_survives_a_restart(store: Store) {
    // A process: SIGKILLed.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let b = gw.bootstrap();
    runtime().block_on(create_topic(&b, "kept-short", 1, &[]));
    produce(&b, "kept-short", "none", &records(6));
    assert_eq!(delete_below(&b, "kept-short", Offset::Offset(4)), Ok(4));

    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        list_offset(&mut c, "kept-short", 0, -2),
        4,
        "the start survives"
    );
    produce(&b, "kept-short", "none", &records(1));
    let got = consume(&b, "kept-short", &HashMap::from([(0, 3)]));
    let offsets: Vec<i64> = values(&got).into_iter().map(|(o, _)| o).collect();
    assert_eq!(offsets, [4, 5, 6]);
}
