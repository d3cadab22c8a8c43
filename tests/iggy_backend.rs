//! The gateway on the Iggy backend, against a real `iggy-server`: Kafka clients and
//! native Iggy clients on the same data.
//!
//! The server binary comes from `IGGY_SERVER_BIN` or `iggy-server` on PATH; each test
//! starts its own on a free loopback port with a temporary directory. Without one,
//! the tests print one SKIPPED line and return.
//!
//! `IGGY_TEST_RECORDS` sets the size of the round-trip workload (default 100,000).

use crate::support;

use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iggy::prelude::{
    Consumer, Identifier, IggyByteSize, IggyDuration, IggyExpiry, IggyMessage, MaxTopicSize,
    MessageClient, Partitioning, PollingStrategy, SegmentClient, StreamClient, TcpClient,
    TopicClient, TopicCreateOptions,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{
    ApiKey, DeleteTopicsRequest, MetadataRequest, RequestKind, ResponseKind,
};
use rdkafka::admin::{AdminOptions, NewTopic, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::message::{Message, Timestamp};
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use support::admin::{eventually, get, Scrape};
use support::configs;
use support::groups;
use support::iggy::{free_port, snapshot_upto, IggyServer};
use support::kafka::{
    admin, assign_from_start, commit_offsets, committed, consume, create_topic, group_consumer,
    produce, Expected,
};
use support::{Gateway, RawClient};

const STREAM: &str = "kafka";
/// The stream of the gateway's own logs (`iggy_gateway_stream`).
const GATEWAY_STREAM: &str = "kafka-gateway";

fn id(name: &str) -> Identifier {
    Identifier::named(name).unwrap()
}

/// One record as written, to compare with what comes back.
/// Every shape the mapping treats differently: null, empty, short and long keys;
/// null and empty values; native headers; repeated, null, empty, long and reserved
/// header names.
fn record(n: usize) -> Expected {
    let key = match n % 7 {
        0 => None,
        1 => Some(Vec::new()),
        2 => Some(vec![b'k'; 300 + n % 50]),
        _ => Some(format!("key-{n}").into_bytes()),
    };
    let value = match n % 11 {
        0 => None,
        1 => Some(Vec::new()),
        _ => Some(
            (0..(n % 300) as u32)
                .map(|i| (i ^ n as u32) as u8)
                .collect(),
        ),
    };
    let headers = match n % 6 {
        0 => Vec::new(),
        1 => vec![
            ("h".into(), Some(b"1".to_vec())),
            ("h".into(), Some(b"2".to_vec())),
        ],
        2 => vec![("null".into(), None), ("empty".into(), Some(Vec::new()))],
        3 => vec![("long".into(), Some(vec![b'x'; 256]))],
        4 => vec![("kafka.key".into(), Some(b"not the key".to_vec()))],
        _ => vec![
            (format!("n{n}"), Some(n.to_string().into_bytes())),
            ("trace".into(), Some(b"t".to_vec())),
        ],
    };
    Expected {
        key,
        value,
        headers,
        timestamp: 1_700_000_000_000 + n as i64,
    }
}

/// Every message of an Iggy partition, read with the SDK.
async fn iggy_messages(client: &TcpClient, topic: &str, partition: u32) -> Vec<IggyMessage> {
    let mut out = Vec::new();
    loop {
        let polled = client
            .poll_messages(
                &id(STREAM),
                &id(topic),
                Some(partition),
                &Consumer::default(),
                &PollingStrategy::offset(out.len() as u64),
                1_000,
                false,
            )
            .await
            .expect("poll");
        if polled.messages.is_empty() {
            return out;
        }
        out.extend(polled.messages);
    }
}

/// A message's user headers by name, decoded by the SDK (a map: last of a name wins).
fn header(m: &IggyMessage, name: &str) -> Option<Vec<u8>> {
    let map = m.user_headers_map().expect("headers")?;
    map.iter()
        .find(|(k, _)| k.as_bytes() == name.as_bytes())
        .map(|(_, v)| v.as_bytes().to_vec())
}

/// What a native Iggy client must see for a record, per `docs/IGGY_MAPPING.md`.
fn check_native_view(m: &IggyMessage, r: &Expected) {
    assert_eq!(header(m, "kafka.mapping"), Some(vec![2]), "marker");
    // These records' timestamps fit Iggy's origin timestamp (µs), so no header holds it.
    assert_eq!(m.header.origin_timestamp, r.timestamp as u64 * 1000);
    assert_eq!(header(m, "kafka.timestamp"), None);
    // Keys here stay far below Iggy's 100 KB of headers: the payload is the value.
    assert_eq!(
        m.payload.as_ref(),
        r.value.as_deref().unwrap_or_default(),
        "payload is the value"
    );
    assert_eq!(
        header(m, "kafka.value"),
        r.value.is_none().then(|| b"null".to_vec())
    );
    let native_key = r.key.as_ref().is_none_or(|k| (1..=255).contains(&k.len()));
    match &r.key {
        Some(k) if native_key => assert_eq!(header(m, "kafka.key").as_ref(), Some(k)),
        _ => assert_eq!(header(m, "kafka.key"), None),
    }
    let native_headers = r.headers.iter().enumerate().all(|(i, (k, v))| {
        v.as_ref().is_some_and(|v| (1..=255).contains(&v.len()))
            && !k.starts_with("kafka.")
            && !r.headers[..i].iter().any(|(n, _)| n == k)
    });
    if native_headers {
        for (k, v) in &r.headers {
            assert_eq!(header(m, k).as_ref(), v.as_ref(), "native header {k}");
        }
    }
    assert_eq!(
        header(m, "kafka.extra.000").is_some(),
        !(native_key && native_headers),
        "fallback blob exactly when needed: {r:?}"
    );
}

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
    let per_codec = total.div_ceil(codecs.len());
    let mut expected: HashMap<i32, Vec<Expected>> = HashMap::new();
    let started = Instant::now();
    for (c, codec) in codecs.iter().enumerate() {
        let records: Vec<(i32, Expected)> = (c * per_codec..((c + 1) * per_codec).min(total))
            .map(|n| ((n % PARTITIONS as usize) as i32, record(n)))
            .collect();
        for (p, r) in &records {
            expected.entry(*p).or_default().push(r.clone());
        }
        let bootstrap = gw.bootstrap();
        let codec = codec.to_string();
        tokio::task::spawn_blocking(move || produce(&bootstrap, topic, &codec, &records))
            .await
            .unwrap();
    }
    println!("produced {total} records in {:?}", started.elapsed());

    let want = expected.iter().map(|(p, v)| (*p, v.len())).collect();
    let bootstrap = gw.bootstrap();
    let started = Instant::now();
    let got = tokio::task::spawn_blocking(move || consume(&bootstrap, topic, &want))
        .await
        .unwrap();
    println!("consumed {total} records in {:?}", started.elapsed());
    for (p, records) in &expected {
        let back = &got[p];
        assert_eq!(back.len(), records.len(), "partition {p}");
        for (i, ((offset, r, ts), want)) in back.iter().zip(records).enumerate() {
            assert_eq!(*offset, i as i64, "offsets dense from 0 in partition {p}");
            assert_eq!(r, want, "record {i} of partition {p}");
            assert!(matches!(ts, Timestamp::CreateTime(_)), "{ts:?}");
        }
    }

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
async fn a_consumer_group_resumes_from_its_commits_after_iggy_and_the_gateway_restart() {
    let Some(mut server) = IggyServer::start() else {
        return;
    };
    // A process, so that dropping it is a SIGKILL: what follows reads what it stored.
    let gw = server.process_gateway();
    let b = gw.bootstrap();
    let first = tokio::task::spawn_blocking(move || {
        groups::create_topic(&b, "grouped", 2);
        groups::produce(&b, "grouped", 0, 100);
        let c = groups::member(&b, "gi", "grouped", "cooperative-sticky");
        let got = groups::consume(&[&c], 100, Duration::from_secs(60));
        groups::commit(&c);
        got[0].len()
    })
    .await
    .unwrap();
    assert_eq!(first, 100);
    drop(gw);

    // Both restart: group membership is gone, committed offsets are in Iggy.
    server.restart();
    let gw = server.gateway();
    let b = gw.bootstrap();
    let mut resumed: Vec<usize> = tokio::task::spawn_blocking(move || {
        groups::produce(&b, "grouped", 100, 20);
        let c = groups::member(&b, "gi", "grouped", "range");
        let got = groups::consume(&[&c], 20, Duration::from_secs(60));
        got[0].iter().map(|(_, v)| v.parse().unwrap()).collect()
    })
    .await
    .unwrap();
    resumed.sort_unstable();
    assert_eq!(
        resumed,
        (100..120).collect::<Vec<_>>(),
        "did not resume from the commits"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_and_delete_topics_map_to_iggy_topics_and_keep_the_stream() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    // A process, so that dropping it is a SIGKILL: what follows reads what it stored.
    let gw = server.process_gateway();
    create_topic(
        &gw.bootstrap(),
        "orders",
        3,
        &[("retention.ms", "3600000"), ("cleanup.policy", "delete")],
    )
    .await;
    create_topic(&gw.bootstrap(), "keep", 1, &[]).await;
    let sdk = server.sdk().await;
    let details = sdk
        .get_topic(&id(STREAM), &id("orders"))
        .await
        .unwrap()
        .expect("Iggy topic made");
    assert_eq!(details.partitions_count, 3);
    assert_eq!(
        details.partitions.iter().map(|p| p.id).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!(
        details.message_expiry,
        IggyExpiry::ExpireDuration(IggyDuration::new(Duration::from_secs(3600)))
    );

    // A second create of the same name is refused, the first stays whole.
    let again = admin(&gw.bootstrap())
        .create_topics(
            &[NewTopic::new("orders", 1, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    assert!(matches!(
        again[0],
        Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists))
    ));

    let deleted = admin(&gw.bootstrap())
        .delete_topics(&["orders"], &AdminOptions::new())
        .await
        .unwrap();
    assert!(deleted.iter().all(|r| r.is_ok()), "{deleted:?}");
    assert!(sdk
        .get_topic(&id(STREAM), &id("orders"))
        .await
        .unwrap()
        .is_none());
    assert!(
        sdk.get_stream(&id(STREAM)).await.unwrap().is_some(),
        "stream kept"
    );
    assert!(sdk
        .get_topic(&id(STREAM), &id("keep"))
        .await
        .unwrap()
        .is_some());

    // Topic ids and configs survive a gateway restart (kept in the gateway stream).
    let metadata_before = topic_ids(&gw);
    drop(gw);
    let gw = server.gateway();
    assert_eq!(topic_ids(&gw), metadata_before);
}

#[tokio::test(flavor = "multi_thread")]
async fn topic_configs_map_onto_iggy_topics() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    // retention.ms → expiry, retention.bytes → size cap × partitions; a compacted topic
    // never expires; segment.bytes → segment size.
    let mut c = RawClient::connect(gw.addr);
    let limited = [
        ("retention.ms", Some("60000")),
        ("retention.bytes", Some("2097152")),
        ("segment.bytes", Some("1048576")),
    ];
    assert_eq!(
        configs::create(&mut c, 7, "limited", &limited, false).error_code,
        0
    );
    let compacted = [
        ("cleanup.policy", Some("compact")),
        ("retention.ms", Some("60000")),
    ];
    assert_eq!(
        configs::create(&mut c, 7, "compacted", &compacted, false).error_code,
        0
    );
    let sdk = server.sdk().await;
    let topic = |name: &'static str| {
        let sdk = &sdk;
        async move {
            sdk.get_topic(&id(STREAM), &id(name))
                .await
                .unwrap()
                .expect(name)
        }
    };
    let t = topic("limited").await;
    assert_eq!(
        t.message_expiry,
        IggyExpiry::ExpireDuration(IggyDuration::new(Duration::from_secs(60)))
    );
    assert_eq!(
        t.max_topic_size,
        MaxTopicSize::Custom(IggyByteSize::from(3 * 2097152))
    );
    let segment = t
        .options
        .iter()
        .find(|(k, _)| k.as_bytes() == b"segment_size");
    let segment = segment.map(|(_, o)| o.value.to_string_value());
    assert_eq!(segment.as_deref(), Some("1048576"), "{:?}", t.options);
    let t = topic("compacted").await;
    assert_eq!(t.message_expiry, IggyExpiry::NeverExpire);
    assert_eq!(t.max_topic_size, MaxTopicSize::Unlimited);
}

/// The Iggy topic's (expiry, size cap) as the SDK reads them.
async fn iggy_limits(sdk: &TcpClient, topic: &str) -> (IggyExpiry, MaxTopicSize) {
    let t = sdk
        .get_topic(&id(STREAM), &id(topic))
        .await
        .unwrap()
        .expect(topic);
    (t.message_expiry, t.max_topic_size)
}

fn expires_after(secs: u64) -> IggyExpiry {
    IggyExpiry::ExpireDuration(IggyDuration::new(Duration::from_secs(secs)))
}

#[tokio::test(flavor = "multi_thread")]
async fn altered_configs_reach_the_iggy_topic() {
    use configs::{incremental, APPEND, DELETE, SET};
    let Some(server) = IggyServer::start() else {
        return;
    };
    // A process, so that dropping it is a SIGKILL: what follows reads what it stored.
    let gw = server.process_gateway();
    let sdk = server.sdk().await;
    let mut c = RawClient::connect(gw.addr);
    let kept = (IggyExpiry::NeverExpire, MaxTopicSize::Unlimited);
    let segment = [("segment.bytes", Some("1048576"))];
    assert_eq!(
        configs::create(&mut c, 7, "altered", &segment, false).error_code,
        0
    );
    assert_eq!(
        configs::create(&mut c, 7, "own-retention", &[], false).error_code,
        0
    );
    assert_eq!(iggy_limits(&sdk, "altered").await, kept);
    // Iggy keeps at least one segment: a smaller cap is raised to the segment size.
    let tiny = [("retention.bytes", Some("1000"))];
    assert_eq!(
        configs::create(&mut c, 7, "tiny-cap", &tiny, false).error_code,
        0
    );
    let set = [("retention.bytes", SET, Some("2000"))];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "own-retention"), &set)], false),
        [(0, None)]
    );
    for t in ["tiny-cap", "own-retention"] {
        let MaxTopicSize::Custom(cap) = iggy_limits(&sdk, t).await.1 else {
            panic!("{t}: no cap")
        };
        assert!(cap.as_bytes_u64() >= 1 << 20, "{t}: {cap}");
    }
    assert_eq!(
        incremental(
            &mut c,
            1,
            &[((2, "own-retention"), &[("retention.bytes", DELETE, None)])],
            false
        ),
        [(0, None)]
    );

    let set = [
        ("retention.ms", SET, Some("120000")),
        ("retention.bytes", SET, Some("1048576")),
    ];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "altered"), &set)], false),
        [(0, None)]
    );
    let capped = MaxTopicSize::Custom(IggyByteSize::from(3 << 20));
    assert_eq!(
        iggy_limits(&sdk, "altered").await,
        (expires_after(120), capped)
    );
    // Compaction keeps everything; taking it out again restores the limits.
    let compact = [("cleanup.policy", APPEND, Some("compact"))];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "altered"), &compact)], false),
        [(0, None)]
    );
    assert_eq!(iggy_limits(&sdk, "altered").await, kept);
    let delete = [("cleanup.policy", DELETE, None)];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "altered"), &delete)], false),
        [(0, None)]
    );
    assert_eq!(
        iggy_limits(&sdk, "altered").await,
        (expires_after(120), capped)
    );

    // A broker-wide retention reaches topics without their own, and only those.
    let own = [("retention.ms", SET, Some("60000"))];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "own-retention"), &own)], false),
        [(0, None)]
    );
    let broker = [("log.retention.ms", SET, Some("3600000"))];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &broker)], false),
        [(0, None)]
    );
    assert_eq!(
        iggy_limits(&sdk, "own-retention").await.0,
        expires_after(60)
    );
    let unset = [("retention.ms", DELETE, None)];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "own-retention"), &unset)], false),
        [(0, None)]
    );
    assert_eq!(
        iggy_limits(&sdk, "own-retention").await.0,
        expires_after(3600)
    );
    assert_eq!(
        incremental(&mut c, 1, &[((2, "altered"), &unset)], false),
        [(0, None)]
    );
    assert_eq!(iggy_limits(&sdk, "altered").await.0, expires_after(3600));
    let clear = [("log.retention.ms", DELETE, None)];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &clear)], false),
        [(0, None)]
    );
    assert_eq!(
        iggy_limits(&sdk, "own-retention").await.0,
        IggyExpiry::NeverExpire
    );

    // A topic made natively gets its first record, with the id it was served under.
    let options = TopicCreateOptions {
        partitions_count: Some(2),
        ..TopicCreateOptions::default()
    };
    sdk.create_topic(&id(STREAM), "native-configs", &options)
        .await
        .expect("native topic");
    let served = wait_for_topic(&gw, "native-configs");
    let set = [("retention.ms", SET, Some("240000"))];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "native-configs"), &set)], false),
        [(0, None)]
    );
    assert_eq!(
        iggy_limits(&sdk, "native-configs").await.0,
        expires_after(240)
    );
    drop(gw);
    let gw = server.gateway();
    let mut c = RawClient::connect(gw.addr);
    let retention = configs::topic_configs(&mut c, "native-configs")["retention.ms"].clone();
    assert_eq!(retention, ("240000".into(), configs::DYNAMIC_TOPIC_CONFIG));
    assert_eq!(
        topic_ids(&gw)
            .into_iter()
            .find(|(n, _)| n == "native-configs")
            .map(|(_, id)| id),
        Some(served)
    );
}

/// The real-client configuration checks `.ci/run` runs on the embedded store
/// (`tests/clients/java_check.sh ConfigsJava`, `configs_confluent.py`: Connect, Streams, Schema
/// Registry, Debezium, MirrorMaker 2 … through the Java AdminClient and confluent-kafka),
/// here against a gateway on Iggy. They need `.ci/client-deps.sh` to have run.
#[test]
fn framework_config_calls_through_real_admin_clients_work_on_iggy() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (python, jars) = (root.join(".venv/bin/python"), root.join(".venv/kafka-java"));
    if !python.is_file() || !jars.is_dir() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED real-client config checks on Iggy: run .ci/client-deps.sh"
        );
        return;
    }
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let clients = root.join("tests/clients");
    let checks: [(&str, Vec<std::ffi::OsString>); 2] = [
        (
            "bash",
            vec![
                clients.join("java_check.sh").into(),
                "ConfigsJava".into(),
                gw.bootstrap().into(),
            ],
        ),
        (
            python.to_str().expect("path"),
            vec![
                clients.join("configs_confluent.py").into(),
                "--bootstrap".into(),
                gw.bootstrap().into(),
            ],
        ),
    ];
    for (program, args) in checks {
        let out = Command::new(program)
            .args(&args)
            .output()
            .expect("run the check");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && said.contains("PASS"),
            "{args:?}: {said}"
        );
    }
}

/// Waits (up to 10 s) until the gateway serves `topic`; its topic id.
fn wait_for_topic(gw: &Gateway, topic: &str) -> uuid::Uuid {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some((_, id)) = topic_ids(gw).into_iter().find(|(n, _)| n == topic) {
            return id;
        }
        assert!(Instant::now() < deadline, "{topic} never appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn gateways_on_one_iggy_share_topic_and_broker_configs() {
    use configs::{incremental, SET};
    let Some(server) = IggyServer::start() else {
        return;
    };
    let fast = [("topic_refresh_ms", "200")];
    let (one, two) = (server.gateway_with(&fast), server.gateway_with(&fast));
    let (mut c1, mut c2) = (RawClient::connect(one.addr), RawClient::connect(two.addr));
    assert_eq!(
        configs::create(&mut c1, 7, "shared", &[], false).error_code,
        0
    );
    let topic = [("cleanup.policy", SET, Some("compact"))];
    assert_eq!(
        incremental(&mut c1, 1, &[((2, "shared"), &topic)], false),
        [(0, None)]
    );
    let broker = [("num.partitions", SET, Some("4"))];
    assert_eq!(
        incremental(&mut c1, 1, &[((4, ""), &broker)], false),
        [(0, None)]
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = (
            configs::exists(&mut c2, "shared")
                .then(|| configs::topic_configs(&mut c2, "shared")["cleanup.policy"].clone()),
            configs::broker_configs(&mut c2, "")
                .get("num.partitions")
                .cloned(),
        );
        let want = (
            Some(("compact".to_string(), configs::DYNAMIC_TOPIC_CONFIG)),
            Some(("4".to_string(), configs::DYNAMIC_DEFAULT_BROKER_CONFIG)),
        );
        if seen == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the second gateway still sees {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_topics_never_reaches_a_stream_or_an_unreachable_topic() {
    // Kafka names map to Iggy topics only: the streams' names are topics that do not
    // exist (3), and an Iggy topic whose name no Kafka name can be is never looked up
    // (17 before any call to Iggy).
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let sdk = server.sdk().await;
    let unreachable = "made natively";
    let options = TopicCreateOptions {
        partitions_count: Some(1),
        ..TopicCreateOptions::default()
    };
    sdk.create_topic(&id(STREAM), unreachable, &options)
        .await
        .expect("native topic");
    let names = [STREAM, "kafka-gateway", unreachable]
        .map(|n| DeleteTopicState::default().with_name(Some(support::topic_name(n))));
    let request = DeleteTopicsRequest::default().with_topics(names.to_vec());
    let mut raw = RawClient::connect(gw.addr);
    let r = support::call!(raw, DeleteTopics, 6, request.with_timeout_ms(5000));
    let codes: Vec<i16> = r.responses.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, [3, 3, 17]);
    for stream in [STREAM, "kafka-gateway"] {
        assert!(
            sdk.get_stream(&id(stream)).await.unwrap().is_some(),
            "{stream}"
        );
    }
    let native = sdk.get_topic(&id(STREAM), &id(unreachable)).await.unwrap();
    assert!(native.is_some(), "the native topic was deleted");
}

/// Topic name → id, from a Metadata v12 answer.
fn topic_ids(gw: &Gateway) -> Vec<(String, uuid::Uuid)> {
    use kafka_protocol::messages::MetadataRequest;
    let mut raw = RawClient::connect(gw.addr);
    let ResponseKind::Metadata(m) = raw.call(
        ApiKey::Metadata,
        12,
        RequestKind::Metadata(MetadataRequest::default().with_topics(None)),
    ) else {
        panic!("not a metadata answer")
    };
    let mut ids: Vec<(String, uuid::Uuid)> = m
        .topics
        .iter()
        .map(|t| (t.name.as_ref().unwrap().to_string(), t.topic_id))
        .collect();
    ids.sort();
    ids
}

/// Runs the gateway binary expecting it to fail at startup; returns its stderr.
fn failed_start(settings: &[(&str, String)]) -> (std::process::ExitStatus, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iggy-kafka-gateway"));
    cmd.env("IGGY_KAFKA_BIND_ADDRESS", "127.0.0.1:0")
        .env("IGGY_KAFKA_ADMIN_BIND_ADDRESS", "127.0.0.1:0")
        .env("IGGY_KAFKA_DATA_DIR", dir.path())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in settings {
        cmd.env(format!("IGGY_KAFKA_{}", k.to_uppercase()), v);
    }
    let out = cmd.output().expect("run gateway");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unreachable_iggy_stops_startup_naming_the_address() {
    // Needs no server: nothing listens on this port.
    let addr = format!("127.0.0.1:{}", free_port());
    let started = Instant::now();
    let (status, stderr) = failed_start(&[
        ("backend", "iggy".into()),
        ("iggy_address", addr.clone()),
        ("iggy_connect_timeout_ms", "1500".into()),
    ]);
    assert!(!status.success());
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "retried for a while"
    );
    assert!(
        stderr.contains(&format!("error: Iggy server at {addr} is unreachable")),
        "{stderr}"
    );
}

#[test]
fn bad_credentials_stop_startup_with_a_clear_error_and_no_password() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (status, stderr) = failed_start(&[
        ("backend", "iggy".into()),
        ("iggy_address", server.addr.to_string()),
        ("iggy_username", "iggy".into()),
        ("iggy_password", "s3cret-wrong".into()),
    ]);
    assert!(!status.success());
    assert!(
        stderr.contains("refused the credentials of user 'iggy'"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("s3cret-wrong"),
        "password leaked: {stderr}"
    );
}

/// An acknowledged record: partition, offset, value.
type Acked = (i32, i64, Vec<u8>);

/// Delivery reports of a producer: what was acknowledged, and how many failed.
#[derive(Clone, Default)]
struct Acks {
    acked: Arc<std::sync::Mutex<Vec<Acked>>>,
    failed: Arc<std::sync::atomic::AtomicUsize>,
}

impl rdkafka::ClientContext for Acks {}

impl rdkafka::producer::ProducerContext for Acks {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &rdkafka::message::DeliveryResult<'_>, _: ()) {
        match result {
            Ok(m) => self.acked.lock().unwrap().push((
                m.partition(),
                m.offset(),
                m.payload().unwrap_or_default().to_vec(),
            )),
            Err(_) => {
                self.failed
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// `(offset, value)` of every record up to `last[p]` in each partition.
fn read_until(
    bootstrap: &str,
    topic: &str,
    last: &HashMap<i32, i64>,
) -> HashMap<i32, Vec<(i64, Vec<u8>)>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "unused")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    assign_from_start(&consumer, topic, last.keys().copied());
    let mut got: HashMap<i32, Vec<(i64, Vec<u8>)>> = HashMap::new();
    let done = |got: &HashMap<i32, Vec<(i64, Vec<u8>)>>| {
        last.iter().all(|(p, l)| {
            got.get(p)
                .and_then(|v| v.last())
                .is_some_and(|(o, _)| o >= l)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done(&got) {
        assert!(Instant::now() < deadline, "timed out reading back");
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            // Transport errors while Iggy restarts are the client's to retry; what
            // matters is that every acknowledged record comes back.
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("consumer error (retried): {e}");
                    continue;
                }
            };
            got.entry(m.partition())
                .or_default()
                .push((m.offset(), m.payload().unwrap_or_default().to_vec()));
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread")]
async fn iggy_restarted_mid_stream_loses_no_acknowledged_record() {
    let Some(mut server) = IggyServer::start() else {
        return;
    };
    // Default durability: every write reaches Iggy's files before it is acknowledged
    // (no fsync), which survives a crash of the Iggy process.
    let mut settings = server.gateway_settings();
    settings.push(("iggy_request_timeout_ms", "3000".into()));
    let refs: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let gw = Gateway::start_with(&refs);
    let topic = "survivor";
    create_topic(&gw.bootstrap(), topic, 2, &[]).await;

    const RECORDS: usize = 20_000;
    let acks = Acks::default();
    let producer: ThreadedProducer<Acks> = ClientConfig::new()
        .set("bootstrap.servers", gw.bootstrap())
        .set("enable.idempotence", "true")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "60000")
        .set("retry.backoff.ms", "100")
        .create_with_context(acks.clone())
        .expect("producer");
    let sender = std::thread::spawn(move || {
        for n in 0..RECORDS {
            let value = format!("v{n}");
            let mut record = BaseRecord::<(), [u8]>::to(topic)
                .partition((n % 2) as i32)
                .payload(value.as_bytes());
            loop {
                match producer.send(record) {
                    Ok(()) => break,
                    Err((_, back)) => {
                        producer.poll(Duration::from_millis(10));
                        record = back;
                    }
                }
            }
            // Spread the workload over the restart.
            if n % 1_000 == 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        producer.flush(Duration::from_secs(90)).expect("flush");
    });

    let deadline = Instant::now() + Duration::from_secs(60);
    while acks.acked.lock().unwrap().len() < 3_000 {
        assert!(Instant::now() < deadline, "no progress before the restart");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.restart();
    println!(
        "Iggy restarted after {} acknowledged records",
        acks.acked.lock().unwrap().len()
    );
    sender.join().expect("producer thread");

    let acked = acks.acked.lock().unwrap().clone();
    println!(
        "{} acknowledged, {} failed",
        acked.len(),
        acks.failed.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert!(acked.len() > 3_000);
    let mut last: HashMap<i32, i64> = HashMap::new();
    for (p, o, _) in &acked {
        let l = last.entry(*p).or_insert(-1);
        *l = (*l).max(*o);
    }
    let bootstrap = gw.bootstrap();
    let stored = tokio::task::spawn_blocking(move || read_until(&bootstrap, topic, &last))
        .await
        .unwrap();
    for (p, o, value) in &acked {
        let at = stored[p].iter().find(|(offset, _)| offset == o);
        assert_eq!(
            at.map(|(_, v)| v),
            Some(value),
            "acknowledged record at {p}/{o}"
        );
    }
    // The idempotent producer's retries never stored a record twice.
    let mut values: Vec<&Vec<u8>> = stored.values().flatten().map(|(_, v)| v).collect();
    let total = values.len();
    values.sort();
    values.dedup();
    assert_eq!(values.len(), total, "duplicates stored");
}

#[tokio::test(flavor = "multi_thread")]
async fn committed_offsets_are_kept_as_sent_and_mirrored_for_iggy_tools() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    // A process, so that dropping it is a SIGKILL: what follows reads what it stored.
    let gw = server.process_gateway();
    let topic = "commits";
    create_topic(&gw.bootstrap(), topic, 3, &[]).await;
    let records: Vec<(i32, Expected)> = (0..10).map(|n| (0, record(n + 3))).collect();
    let bootstrap = gw.bootstrap();
    tokio::task::spawn_blocking(move || produce(&bootstrap, topic, "none", &records))
        .await
        .unwrap();

    // 7 on a partition of 10 records; 0 on an empty one; past the end of an empty one.
    let bootstrap = gw.bootstrap();
    let back = tokio::task::spawn_blocking(move || {
        commit_offsets(&bootstrap, "app", topic, &[(0, 7), (1, 0), (2, 42)]);
        committed(&bootstrap, "app", topic, 3)
    })
    .await
    .unwrap();
    assert_eq!(back, vec![7, 0, 42]);

    // Iggy tools see the group's progress: last consumed = 6.
    let sdk = server.sdk().await;
    let group = Consumer::group(id("kafka.app"));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stored = iggy::prelude::ConsumerOffsetClient::get_consumer_offset(
            &sdk,
            &group,
            &id(STREAM),
            &id(topic),
            Some(0),
        )
        .await
        .expect("consumer offset");
        if stored.as_ref().map(|s| s.stored_offset) == Some(6) {
            break;
        }
        assert!(Instant::now() < deadline, "mirror not updated: {stored:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The commits survive a gateway restart.
    drop(gw);
    let gw = server.gateway();
    let bootstrap = gw.bootstrap();
    let back = tokio::task::spawn_blocking(move || committed(&bootstrap, "app", topic, 3))
        .await
        .unwrap();
    assert_eq!(back, vec![7, 0, 42]);
}

/// Commits offsets `first..first + count` of partition 0, one commit each, on one
/// consumer, each with 4000 bytes of metadata so the commit log grows fast.
fn commit_each(bootstrap: &str, group: &str, topic: &str, first: i64, count: i64) {
    let consumer = group_consumer(bootstrap, group);
    for offset in first..first + count {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, Offset::Offset(offset))
            .unwrap();
        let metadata = format!("{offset:04000}");
        tpl.find_partition(topic, 0).unwrap().set_metadata(metadata);
        consumer
            .commit(&tpl, rdkafka::consumer::CommitMode::Sync)
            .expect("commit");
    }
}

/// The first offset a gateway log still holds.
async fn first_offset(sdk: &TcpClient, log: &str) -> u64 {
    let polled = sdk
        .poll_messages(
            &id(GATEWAY_STREAM),
            &id(log),
            Some(0),
            &Consumer::default(),
            &PollingStrategy::offset(0),
            1,
            false,
        )
        .await
        .expect("poll gateway log");
    polled.messages[0].header.offset
}

#[tokio::test(flavor = "multi_thread")]
async fn gateway_logs_restart_from_snapshots_once_their_old_records_are_gone() {
    let Some(mut server) = IggyServer::start() else {
        return;
    };
    // The commit log made beforehand with the smallest segments, so old ones can be dropped.
    let sdk = server.sdk().await;
    sdk.create_stream(GATEWAY_STREAM).await.unwrap();
    let options = TopicCreateOptions {
        partitions_count: Some(1),
        message_expiry: Some(IggyExpiry::NeverExpire),
        max_topic_size: Some(MaxTopicSize::Unlimited),
        segment_size: Some(IggyByteSize::from(1 << 20)),
        messages_required_to_save: Some(1),
        ..TopicCreateOptions::default()
    };
    sdk.create_topic(&id(GATEWAY_STREAM), "meta.offsets", &options)
        .await
        .unwrap();
    let snapshots = [("iggy_snapshot_records", "100")];
    // Processes: the first is SIGKILLed when dropped, the second restarted after
    // SIGKILLs and refusing to start (exit code, stderr).
    let gw = server.process_gateway_with(&snapshots);
    let topic = "snapshotted";
    create_topic(&gw.bootstrap(), topic, 1, &[]).await;
    // Snapshots are taken as the table grows: commit until one covers 300 commits.
    let mut last = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while snapshot_upto(&sdk, "meta.offsets").await < Some(300) {
        assert!(Instant::now() < deadline, "no snapshot of the commits");
        let (bootstrap, first) = (gw.bootstrap(), last + 1);
        tokio::task::spawn_blocking(move || commit_each(&bootstrap, "app", topic, first, 50))
            .await
            .unwrap();
        last += 50;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(gw);

    // Drop every sealed segment: the commits before the snapshot are gone from Iggy.
    sdk.delete_segments(&id(GATEWAY_STREAM), &id("meta.offsets"), 0, 1_000)
        .await
        .unwrap();
    let first = first_offset(&sdk, "meta.offsets").await;
    assert!(
        first > 100,
        "segments not dropped: the log starts at {first}"
    );

    // A new gateway reads the snapshot and the records after it.
    let mut gw = server.process_gateway_with(&snapshots);
    let bootstrap = gw.bootstrap();
    let back = tokio::task::spawn_blocking(move || committed(&bootstrap, "app", topic, 1))
        .await
        .unwrap();
    assert_eq!(back, vec![last]);

    // Records no snapshot covers lost: the gateway refuses to start, naming the log.
    let bootstrap = gw.bootstrap();
    let no_snapshots = [("iggy_snapshot_records", "1000000")];
    gw.restart_with(no_snapshots[0].0, Some(no_snapshots[0].1));
    tokio::task::spawn_blocking(move || commit_each(&bootstrap, "app", topic, last + 1, 300))
        .await
        .unwrap();
    sdk.delete_segments(&id(GATEWAY_STREAM), &id("meta.offsets"), 0, 1_000)
        .await
        .unwrap();
    let (code, stderr) = gw.refused_restart_with(&[]);
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("gateway log 'meta.offsets' lost records"),
        "{stderr}"
    );
    server.stop();
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

/// A gateway started with a settings file (`--config`), for settings the
/// environment cannot express; killed when dropped.
struct ConfiguredGateway {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl ConfiguredGateway {
    /// Starts it, or returns its exit status and stderr if it refuses to start.
    fn start(
        server: &IggyServer,
        file: &str,
    ) -> Result<ConfiguredGateway, (std::process::ExitStatus, String)> {
        use std::io::BufRead;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.toml");
        std::fs::write(&path, file).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_iggy-kafka-gateway"));
        cmd.arg("--config")
            .arg(&path)
            .env("IGGY_KAFKA_BIND_ADDRESS", "127.0.0.1:0")
            .env("IGGY_KAFKA_ADMIN_BIND_ADDRESS", "127.0.0.1:0")
            .env("IGGY_KAFKA_DATA_DIR", dir.path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in server.gateway_settings() {
            cmd.env(format!("IGGY_KAFKA_{}", k.to_uppercase()), v);
        }
        let mut child = cmd.spawn().expect("start gateway");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        match line.trim().rsplit(' ').next().and_then(|a| a.parse().ok()) {
            Some(addr) => Ok(ConfiguredGateway {
                child,
                addr,
                _dir: dir,
            }),
            None => {
                let status = child.wait().unwrap();
                let mut stderr = String::new();
                child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut stderr)
                    .unwrap();
                Err((status, stderr))
            }
        }
    }
}

impl Drop for ConfiguredGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn topic_overrides_put_a_kafka_topic_elsewhere_in_iggy() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let file = r#"
[[iggy_topics]]
kafka = "orders"
stream = "legacy"
topic = "orders-v1"
"#;
    let gw = ConfiguredGateway::start(&server, file).expect("gateway");
    let bootstrap = gw.addr.to_string();
    create_topic(&bootstrap, "orders", 2, &[]).await;
    create_topic(&bootstrap, "plain", 1, &[]).await;
    let records: Vec<(i32, Expected)> = (0..5).map(|n| (1, record(n + 3))).collect();
    let copy = records.clone();
    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || produce(&b, "orders", "none", &copy))
        .await
        .unwrap();

    let sdk = server.sdk().await;
    assert!(sdk
        .get_topic(&id(STREAM), &id("orders"))
        .await
        .unwrap()
        .is_none());
    let polled = sdk
        .poll_messages(
            &id("legacy"),
            &id("orders-v1"),
            Some(1),
            &Consumer::default(),
            &PollingStrategy::offset(0),
            10,
            false,
        )
        .await
        .expect("poll the override");
    assert_eq!(polled.messages.len(), 5);
    for (m, (_, r)) in polled.messages.iter().zip(&records) {
        check_native_view(m, r);
    }

    // Listed under its Kafka name after a restart, next to the default-stream topic.
    drop(gw);
    let gw = ConfiguredGateway::start(&server, file).expect("gateway");
    let bootstrap = gw.addr.to_string();
    let names = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &bootstrap)
            .create()
            .unwrap();
        let metadata = consumer
            .fetch_metadata(None, Duration::from_secs(10))
            .unwrap();
        let mut names: Vec<(String, usize)> = metadata
            .topics()
            .iter()
            .map(|t| (t.name().to_string(), t.partitions().len()))
            .collect();
        names.sort();
        names
    })
    .await
    .unwrap();
    assert_eq!(
        names,
        vec![("orders".to_string(), 2), ("plain".to_string(), 1)]
    );

    // Two Kafka names on one Iggy topic: refused at startup, naming both.
    let clash = format!("{file}\n[[iggy_topics]]\nkafka = \"orders2\"\nstream = \"legacy\"\ntopic = \"orders-v1\"\n");
    let Err((status, stderr)) = ConfiguredGateway::start(&server, &clash) else {
        panic!("a clashing override was accepted")
    };
    assert!(!status.success());
    assert!(
        stderr.contains("'orders' and 'orders2' both map to Iggy topic 'legacy/orders-v1'"),
        "{stderr}"
    );
}

/// Each offset slot commits through an Iggy connection of its own and reads through
/// another (two more clients on the server per slot), so one slot's commits never
/// queue behind another's, nor its reads behind its commits.
#[tokio::test(flavor = "multi_thread")]
async fn each_offset_slot_has_its_own_iggy_commit_and_read_clients() {
    use iggy::prelude::SystemClient;
    let mut clients = Vec::new();
    for slots in ["1", "6"] {
        let Some(server) = IggyServer::start() else {
            return;
        };
        let mut settings = server.gateway_settings();
        settings.push(("offset_slots", slots.to_string()));
        let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let gw = Gateway::start_with(&settings);
        let sdk = server.sdk().await;
        // The gateway's connections, without this one.
        clients.push(sdk.get_clients().await.expect("clients").len() - 1);
        // Commits land, whichever slot a partition hashes to.
        create_topic(&gw.bootstrap(), "slots", 4, &[]).await;
        let offsets: Vec<(i32, i64)> = (0..4).map(|p| (p, 10 + p as i64)).collect();
        commit_offsets(&gw.bootstrap(), "g", "slots", &offsets);
        assert_eq!(
            committed(&gw.bootstrap(), "g", "slots", 4),
            [10, 11, 12, 13]
        );
    }
    assert_eq!(
        clients[1] - clients[0],
        2 * 5,
        "clients by slot count: {clients:?}"
    );
}

#[test]
fn readiness_follows_the_iggy_server() {
    let Some(mut server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let status = |path| get(gw.admin, path).status;
    assert!(eventually(Duration::from_secs(10), || status("/readyz") == 200));

    server.stop();
    assert!(
        eventually(Duration::from_secs(10), || status("/readyz") == 503),
        "still ready with Iggy stopped"
    );
    let not_ready = get(gw.admin, "/readyz");
    assert!(not_ready.body.contains("backend"), "{not_ready:?}");
    // Alive all the same: a restart would not bring Iggy back.
    assert_eq!(status("/healthz"), 200);
    let failed_pings = Scrape::take(gw.admin).sum(
        "iggy_kafka_gateway_backend_errors_total",
        &[("call", "ping"), ("error", "unavailable")],
    );
    assert!(failed_pings >= 1.0, "{failed_pings}");

    server.start_again();
    assert!(
        eventually(Duration::from_secs(30), || status("/readyz") == 200),
        "not ready again after Iggy came back: {:?}",
        get(gw.admin, "/readyz")
    );
}
