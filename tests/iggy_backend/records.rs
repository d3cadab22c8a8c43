//! Records both ways: Kafka records read back and read natively, native Iggy messages
//! served to Kafka consumers; offsets looked up by time, log-append-time topics.

use crate::support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iggy::prelude::{
    IggyMessage, MessageClient, Partitioning, StreamClient, TopicClient, TopicCreateOptions,
};
use kafka_protocol::messages::{ApiKey, MetadataRequest, RequestKind, ResponseKind};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::Timestamp;
use rdkafka::{Offset, TopicPartitionList};

use support::iggy::IggyServer;
use support::kafka::{consume, create_topic, produce, Expected};
use support::RawClient;

use super::{
    check_native_view, consume_and_check, header, id, iggy_messages, produce_per_codec, record,
    served, STREAM,
};

fn records_count() -> usize {
    std::env::var("IGGY_TEST_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_records_round_trip_through_iggy_and_read_natively() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let topic = "roundtrip";
    const PARTITIONS: i32 = 4;
    create_topic(&gw.bootstrap(), topic, PARTITIONS, &[]).await;

    let total = records_count();
    let codecs = ["none", "lz4", "zstd", "gzip", "snappy"];
    let started = Instant::now();
    let expected = produce_per_codec(&gw.bootstrap(), topic, (PARTITIONS, total), &codecs).await;
    println!("produced {total} records in {:?}", started.elapsed());
    let started = Instant::now();
    consume_and_check(&gw.bootstrap(), topic, &expected).await;
    println!("consumed {total} records in {:?}", started.elapsed());

    // The same records, read natively: same partitions, same offsets.
    let sdk = server.sdk().await;
    for (p, records) in &expected {
        let messages = iggy_messages(&sdk, topic, *p as u32).await;
        assert_eq!(messages.len(), records.len(), "Iggy partition {p}");
        for (i, (m, r)) in messages.iter().zip(records).enumerate() {
            assert_eq!(m.header.offset, i as u64);
            check_native_view(m, r);
        }
    }
}

/// The record form keeps records one message each, yet a batch produced compressed
/// reaches consumers compressed by its codec again (its first record says which), for
/// every codec Kafka has; consumers read the same records (#33).
#[tokio::test(flavor = "multi_thread")]
async fn batches_produced_compressed_are_served_compressed() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let topic = "squeezed";
    create_topic(&gw.bootstrap(), topic, 1, &[]).await;
    let codecs = ["none", "gzip", "snappy", "lz4", "zstd"];
    let expected = produce_per_codec(&gw.bootstrap(), topic, (1, 1_500), &codecs).await;
    let mut raw = RawClient::connect(gw.addr);
    let mut codecs_served = std::collections::BTreeSet::new();
    let mut next = 0;
    while next < expected[&0].len() as i64 {
        for (base, count, codec) in served(&mut raw, topic, 0, next) {
            assert_eq!(base, next, "batches follow one another");
            codecs_served.insert(codec);
            next = base + i64::from(count);
        }
    }
    assert_eq!(codecs_served, (0..=4).collect());
    consume_and_check(&gw.bootstrap(), topic, &expected).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn native_iggy_messages_are_served_to_kafka_consumers() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    // Made natively before the gateway starts, which loads topics at startup.
    let sdk = server.sdk().await;
    sdk.create_stream(STREAM).await.expect("stream");
    sdk.create_topic(
        &id(STREAM),
        "native",
        &TopicCreateOptions {
            partitions_count: Some(2),
            ..TopicCreateOptions::default()
        },
    )
    .await
    .expect("topic");
    let before = chrono::Utc::now().timestamp_millis();
    let mut messages: Vec<IggyMessage> = (0..10)
        .map(|i| {
            let headers = std::collections::BTreeMap::from([
                (
                    iggy::prelude::HeaderKey::try_from("source").unwrap(),
                    iggy::prelude::HeaderValue::try_from("native").unwrap(),
                ),
                (
                    iggy::prelude::HeaderKey::try_from("n").unwrap(),
                    iggy::prelude::HeaderValue::from(i as u64),
                ),
            ]);
            IggyMessage::builder()
                .payload(Bytes::from(format!("message {i}")))
                .user_headers(headers)
                .build()
                .unwrap()
        })
        .collect();
    sdk.send_messages(
        &id(STREAM),
        &id("native"),
        &Partitioning::partition_id(1),
        &mut messages,
    )
    .await
    .expect("send");
    let after = chrono::Utc::now().timestamp_millis();

    let gw = server.gateway();
    let bootstrap = gw.bootstrap();
    let got = tokio::task::spawn_blocking(move || {
        consume(&bootstrap, "native", &HashMap::from([(1, 10)]))
    })
    .await
    .unwrap();
    for (i, (offset, r, ts)) in got[&1].iter().enumerate() {
        assert_eq!(*offset, i as i64);
        assert_eq!(r.key, None);
        assert_eq!(r.value.as_deref(), Some(format!("message {i}").as_bytes()));
        // Iggy's headers form a map: the SDK sends them sorted by name.
        assert_eq!(
            r.headers,
            vec![
                ("n".to_string(), Some(i.to_string().into_bytes())),
                ("source".to_string(), Some(b"native".to_vec())),
            ]
        );
        assert!(matches!(ts, Timestamp::CreateTime(_)));
        assert!(
            (before - 1..=after + 1).contains(&r.timestamp),
            "{} outside [{before}, {after}]",
            r.timestamp
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn topics_made_natively_while_the_gateway_runs_appear_and_are_served() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let sdk = server.sdk().await;
    sdk.create_topic(
        &id(STREAM),
        "late",
        &TopicCreateOptions {
            partitions_count: Some(1),
            ..TopicCreateOptions::default()
        },
    )
    .await
    .expect("topic");
    // The topic admin re-reads the backend every `topic_refresh_ms` (5 s by default).
    let mut raw = RawClient::connect(gw.addr);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let request = MetadataRequest::default().with_topics(None);
        let ResponseKind::Metadata(m) =
            raw.call(ApiKey::Metadata, 12, RequestKind::Metadata(request))
        else {
            panic!("not a metadata answer");
        };
        if m.topics
            .iter()
            .any(|t| t.name.as_ref().is_some_and(|n| n.as_str() == "late"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a native topic never appeared in Metadata"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut messages: Vec<IggyMessage> = (0..3)
        .map(|i| {
            IggyMessage::builder()
                .payload(Bytes::from(format!("late {i}")))
                .build()
                .unwrap()
        })
        .collect();
    sdk.send_messages(
        &id(STREAM),
        &id("late"),
        &Partitioning::partition_id(0),
        &mut messages,
    )
    .await
    .expect("send");
    let bootstrap = gw.bootstrap();
    let got =
        tokio::task::spawn_blocking(move || consume(&bootstrap, "late", &HashMap::from([(0, 3)])))
            .await
            .unwrap();
    let values: Vec<_> = got[&0]
        .iter()
        .map(|(_, r, _)| r.value.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        values,
        ["late 0", "late 1", "late 2"].map(|v| v.as_bytes().to_vec())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn list_offsets_by_time_and_log_append_time_topics_work_on_iggy() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    create_topic(&gw.bootstrap(), "timed", 1, &[]).await;
    create_topic(
        &gw.bootstrap(),
        "appended",
        1,
        &[("message.timestamp.type", "LogAppendTime")],
    )
    .await;
    let records: Vec<(i32, Expected)> = (0..20).map(|n| (0, record(n))).collect();
    let (bootstrap, copy) = (gw.bootstrap(), records.clone());
    tokio::task::spawn_blocking(move || produce(&bootstrap, "timed", "lz4", &copy))
        .await
        .unwrap();
    let before = chrono::Utc::now().timestamp_millis();
    let bootstrap = gw.bootstrap();
    tokio::task::spawn_blocking(move || produce(&bootstrap, "appended", "none", &records))
        .await
        .unwrap();
    let after = chrono::Utc::now().timestamp_millis();

    let bootstrap = gw.bootstrap();
    let (watermarks, by_time, past_end) = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .set("group.id", "unused")
            .create()
            .unwrap();
        let watermarks = consumer
            .fetch_watermarks("timed", 0, Duration::from_secs(10))
            .unwrap();
        let at = |ts: i64| {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset("timed", 0, Offset::Offset(ts))
                .unwrap();
            let found = consumer
                .offsets_for_times(tpl, Duration::from_secs(10))
                .unwrap();
            found.find_partition("timed", 0).unwrap().offset()
        };
        (
            watermarks,
            at(1_700_000_000_005),
            at(1_700_000_000_000 + 1_000),
        )
    })
    .await
    .unwrap();
    assert_eq!(watermarks, (0, 20));
    assert_eq!(by_time, Offset::Offset(5));
    assert_eq!(past_end, Offset::End);

    let bootstrap = gw.bootstrap();
    let got = tokio::task::spawn_blocking(move || {
        consume(&bootstrap, "appended", &HashMap::from([(0, 20)]))
    })
    .await
    .unwrap();
    for (offset, r, ts) in &got[&0] {
        let Timestamp::LogAppendTime(t) = ts else {
            panic!("offset {offset}: {ts:?}")
        };
        assert!(
            (before..=after).contains(t),
            "{t} outside [{before}, {after}]"
        );
        assert_eq!(r.value, record(*offset as usize).value);
        assert_eq!(r.headers, record(*offset as usize).headers);
    }
    let sdk = server.sdk().await;
    let messages = iggy_messages(&sdk, "appended", 0).await;
    assert_eq!(
        header(&messages[0], "kafka.timestamp_type").as_deref(),
        Some(&b"LogAppendTime"[..])
    );
}

/// Iggy's read-ahead: a consumer catching up is served reads started ahead of its Fetch,
/// counted in `backend_read_ahead_hits` (over the read calls, the hit rate); with
/// `iggy_read_ahead_bytes=0` none is (#33).
#[tokio::test(flavor = "multi_thread")]
async fn read_ahead_hits_are_counted() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let topic = "ahead";
    create_topic(&gw.bootstrap(), topic, 1, &[]).await;
    let expected = produce_per_codec(&gw.bootstrap(), topic, (1, 20_000), &["none"]).await;
    let hits = |admin| {
        support::admin::Scrape::take(admin)
            .sum("iggy_kafka_gateway_backend_read_ahead_hits_total", &[])
    };
    consume_and_check(&gw.bootstrap(), topic, &expected).await;
    let hit = hits(gw.admin);
    assert!(hit > 0.0, "a consumer catching up is read ahead for");
    // Started now, it loads the topic at startup. Alone, so that it serves every read
    // (beside the first, it would lead about half the partitions).
    drop(gw);
    let without = server.gateway_with(&[("iggy_read_ahead_bytes", "0")]);
    consume_and_check(&without.bootstrap(), topic, &expected).await;
    assert_eq!(hits(without.admin), 0.0, "read-ahead off");
    println!("{hit} reads served from the read-ahead");
}

/// A consumer of compressed topics is served the sections their producers compressed,
/// kept from Produce, instead of records compressed again on every read: each batch
/// counted in `backend_compressed_batches_total{section="kept"}`, the records exact.
/// A gateway with `iggy_kept_compressed_bytes=0` compresses every one again (#33).
#[tokio::test(flavor = "multi_thread")]
async fn compressed_batches_are_served_with_their_producers_sections() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let topic = "kept-sections";
    create_topic(&gw.bootstrap(), topic, 2, &[]).await;
    let codecs = ["lz4", "zstd", "snappy", "gzip"];
    let expected = produce_per_codec(&gw.bootstrap(), topic, (2, 8_000), &codecs).await;
    let sections = |admin, section| {
        support::admin::Scrape::take(admin).sum(
            "iggy_kafka_gateway_backend_compressed_batches_total",
            &[("section", section)],
        )
    };
    consume_and_check(&gw.bootstrap(), topic, &expected).await;
    let (kept, made) = (sections(gw.admin, "kept"), sections(gw.admin, "made"));
    println!("{kept} batches served with their producers' sections, {made} compressed again");
    assert!(kept >= codecs.len() as f64, "{kept} kept");
    assert_eq!(made, 0.0, "every batch was produced here, just now");
    // Started now, it keeps nothing: every batch is compressed again, as exact. Alone,
    // so that it leads every partition (beside the first, it would lead about half).
    drop(gw);
    let without = server.gateway_with(&[("iggy_kept_compressed_bytes", "0")]);
    consume_and_check(&without.bootstrap(), topic, &expected).await;
    assert_eq!(sections(without.admin, "kept"), 0.0);
    assert!(sections(without.admin, "made") >= codecs.len() as f64);
}

/// The Java client reads every codec the gateway compresses itself: records produced
/// by the Java producer, gzip, snappy, lz4 and zstd (Produce decompresses them to keep
/// one message per record), read back by the Java consumer from a gateway that keeps
/// no producer's section and so compresses every batch it serves, exactly
/// (`tests/clients/CompressionJava.java`; kafka-clients 3.9 and 4.x).
#[test]
fn java_clients_read_the_batches_the_gateway_compresses() {
    for jars in support::client_checks::java_jars() {
        let Some(server) = IggyServer::start() else {
            return;
        };
        let gw = server.gateway_with(&[("iggy_kept_compressed_bytes", "0")]);
        let said = support::client_checks::java(&jars, "CompressionJava", &gw.bootstrap());
        assert!(said.contains("PASS java-compression"), "{said}");
        let made = support::admin::Scrape::take(gw.admin).sum(
            "iggy_kafka_gateway_backend_compressed_batches_total",
            &[("section", "made")],
        );
        assert!(made >= 4.0, "{}: {made} batches compressed", jars.display());
    }
}

/// A consumer of large records makes Iggy read about what it is served: a partition's
/// first read, its record size not known yet, polls a few messages, then what fits by
/// the size they measured, not a guessed size's worth (with 4 KiB records, a poll sized
/// for 128 B records brought 8 MB for a 1 MiB answer). `backend_stored_read` over
/// `backend_read` shows it (#33).
#[tokio::test(flavor = "multi_thread")]
async fn reads_of_large_records_poll_about_what_they_serve() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let topic = "large";
    create_topic(&gw.bootstrap(), topic, 1, &[]).await;
    let (count, size) = (2_000, 4_096);
    let large = Expected {
        key: None,
        value: Some(vec![7; size]),
        headers: Vec::new(),
        timestamp: 1_700_000_000_000,
    };
    produce(&gw.bootstrap(), topic, "none", &vec![(0, large); count]);
    let got = consume(&gw.bootstrap(), topic, &HashMap::from([(0, count)]));
    assert_eq!(got[&0].len(), count);
    let scrape = support::admin::Scrape::take(gw.admin);
    let read = [("call", "read")];
    let served = scrape.sum("iggy_kafka_gateway_backend_read_bytes_total", &read);
    let polled = scrape.sum("iggy_kafka_gateway_backend_stored_read_bytes_total", &read);
    println!("{polled} bytes polled for {served} served");
    assert!(served >= (count * size) as f64, "{served} bytes served");
    assert!(
        polled <= 1.25 * served,
        "{polled} bytes polled from Iggy for {served} served"
    );
}

/// Two readers of one partition at different places taking turns (two groups, or a
/// consumer beside the compactor's pass) are each served the read started ahead for
/// them: one's read-ahead does not replace the other's (#36).
#[test]
fn readers_taking_turns_at_two_places_of_a_partition_are_each_read_ahead_for() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let topic = "ahead-two";
    support::groups::create_topic(&gw.bootstrap(), topic, 1);
    let mut c = RawClient::connect(gw.addr);
    support::records::produce_n(&mut c, topic, 0, 1_000);
    support::records::produce_n(&mut c, topic, 0, 1_000);
    // Reads of 1,000 bytes each leave the rest of the partition behind them.
    let mut at = [0, 1_000];
    let turns = 10;
    for _ in 0..turns {
        for at in &mut at {
            let (code, _, _, offsets) =
                support::records::fetch_with(&mut c, (topic, 0, *at), (0, 1_000));
            assert_eq!(code, 0);
            assert_eq!(
                offsets.first(),
                Some(&*at),
                "served from where it was asked"
            );
            *at = offsets.last().unwrap() + 1;
        }
    }
    let hits = support::admin::Scrape::take(gw.admin)
        .sum("iggy_kafka_gateway_backend_read_ahead_hits_total", &[]);
    // Each reader's first read had none started for it.
    assert!(
        hits >= (2 * turns - 2) as f64,
        "{hits} of {} reads served from a read started ahead",
        2 * turns
    );
}

/// A read-committed reader below an open transaction, on a gateway that has not yet
/// asked Iggy where the partition starts (a fresh one, or one that took the partition
/// over): its read at the last stable offset serves the batches kept for it past that
/// offset, then reads on after them; what that read found of the log start must not
/// make the reader's offset out of range (it would reset to the earliest and read all
/// again, as a fault run showed).
#[test]
fn a_read_committed_fetch_below_an_open_transaction_stays_in_range_on_a_fresh_gateway() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let topic = "committed-fresh";
    let first = server.process_gateway();
    support::groups::create_topic(&first.bootstrap(), topic, 1);
    let mut c = RawClient::connect(first.addr);
    for _ in 0..20 {
        support::records::produce_n(&mut c, topic, 0, 1);
    }
    let p = support::transactions::init(&mut c, "committed-fresh-tx");
    assert_eq!(support::transactions::add(&mut c, &p, topic, 0), 0);
    let open = support::transactions::produce(&mut c, &p, (topic, 0), 0, 5, 1_700_000_000_000);
    assert_eq!(open, 20);
    for _ in 0..20 {
        support::records::produce_n(&mut c, topic, 0, 1);
    }
    drop(first);

    let gw = server.process_gateway();
    let mut c = RawClient::connect(gw.addr);
    // Small reads from 15 up to the open transaction: the one that reaches it stops a
    // few batches past it, and keeps them for the reader.
    let mut at = 15;
    // A read the gateway has not finished within the Fetch's wait answers empty and goes
    // on for the next Fetch from the same place (a loaded machine's fresh gateway may
    // take that long to load the partition): ask again, as a consumer would.
    let committed = |c: &mut RawClient, at| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (code, _, _, records) = support::records::fetch_with(c, (topic, 0, at), (1, 600));
            if code != 0 || !records.is_empty() || Instant::now() > deadline {
                return (code, records);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    while at < 20 {
        let (code, records) = committed(&mut c, at);
        assert_eq!(code, 0, "at {at}");
        assert_eq!(records.first(), Some(&at), "{records:?}");
        at = records.last().expect("records below the open transaction") + 1;
    }
    assert_eq!(at, 20, "read past the open transaction");
    let (code, _, _, records) = support::records::fetch_with(&mut c, (topic, 0, 20), (1, 600));
    assert_eq!(
        (code, records),
        (0, Vec::new()),
        "at the last stable offset"
    );
}
