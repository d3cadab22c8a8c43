//! Kafka topics as Iggy topics: made, deleted, configured (limits onto Iggy topic
//! options), shared by gateways, and placed elsewhere by `iggy_topics`.

use crate::support;

use std::io::Read;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iggy::prelude::{
    Consumer, IggyByteSize, IggyDuration, IggyExpiry, MaxTopicSize, MessageClient, PollingStrategy,
    StreamClient, TcpClient, TopicClient, TopicCreateOptions,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{ApiKey, DeleteTopicsRequest, RequestKind, ResponseKind};
use rdkafka::admin::{AdminOptions, NewTopic, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};

use support::client_checks;
use support::configs;
use support::iggy::IggyServer;
use support::kafka::{admin, create_topic, produce, Expected};
use support::{Gateway, RawClient};

use super::{check_native_view, id, record, STREAM};

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

/// Iggy makes at most 1,000 partitions a call: a larger topic is made in steps, and
/// is whole when CreateTopics answers (#33).
#[tokio::test(flavor = "multi_thread")]
async fn topics_of_more_than_a_thousand_partitions_are_made_whole() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    create_topic(&gw.bootstrap(), "wide", 2_500, &[]).await;
    let sdk = server.sdk().await;
    let details = sdk
        .get_topic(&id(STREAM), &id("wide"))
        .await
        .unwrap()
        .expect("Iggy topic made");
    assert_eq!(details.partitions_count, 2_500);
    // Its last partition takes and serves records like its first.
    let records: Vec<(i32, Expected)> = [0, 2_499].map(|p| (p, record(p as usize))).to_vec();
    let bootstrap = gw.bootstrap();
    let copy = records.clone();
    tokio::task::spawn_blocking(move || produce(&bootstrap, "wide", "none", &copy))
        .await
        .unwrap();
    let bootstrap = gw.bootstrap();
    let want = std::collections::HashMap::from([(0, 1), (2_499, 1)]);
    let got =
        tokio::task::spawn_blocking(move || support::kafka::consume(&bootstrap, "wide", &want))
            .await
            .unwrap();
    for (p, r) in &records {
        assert_eq!(&got[p][0].1, r, "partition {p}");
    }
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
    // Both: compacted by the gateway, and Iggy expires whole segments past retention.
    let both = [
        ("cleanup.policy", Some("compact,delete")),
        ("retention.ms", Some("60000")),
    ];
    assert_eq!(
        configs::create(&mut c, 7, "compacted-deleted", &both, false).error_code,
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
    let t = topic("compacted-deleted").await;
    assert_eq!(t.message_expiry, expires_after(60));
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
    // `delete,compact` keeps the limits; compaction alone keeps everything; taking it
    // out again restores them.
    let both = [("cleanup.policy", APPEND, Some("compact"))];
    assert_eq!(
        incremental(&mut c, 1, &[((2, "altered"), &both)], false),
        [(0, None)]
    );
    assert_eq!(
        iggy_limits(&sdk, "altered").await,
        (expires_after(120), capped)
    );
    let compact = [("cleanup.policy", SET, Some("compact"))];
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
        support::skipped("real-client config checks on Iggy: run .ci/client-deps.sh");
        return;
    }
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    client_checks::java(&jars, "ConfigsJava", &gw.bootstrap());
    let script = root.join("tests/clients/configs_confluent.py");
    client_checks::run(
        Command::new(python)
            .arg(script)
            .args(["--bootstrap", &gw.bootstrap()]),
    );
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
    let broker = [("log.cleaner.threads", SET, Some("4"))];
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
                .get("log.cleaner.threads")
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

/// A topic made through one gateway is known to another at once, whatever it is asked
/// first: DescribeConfigs (with the configurations it was made with), an incremental
/// AlterConfigs, CreatePartitions and DeleteTopics, each the first request naming the
/// topic on the second gateway, right after the first answered its creation (Apicurio
/// Registry's startup does this through a Service's two replicas).
#[test]
fn a_topic_made_through_one_gateway_is_at_once_known_to_another() {
    use configs::{incremental, SET};
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (one, two) = (server.gateway(), server.gateway());
    let (mut c1, mut c2) = (RawClient::connect(one.addr), RawClient::connect(two.addr));
    // Asked right after a read of the second gateway's table (a Metadata request for
    // another topic), so a re-read at most every so often would answer from it.
    let fresh_read = |c: &mut RawClient| assert!(!configs::exists(c, "nobody-made-this"));
    for i in 0..6 {
        let topic = format!("made-elsewhere-{i}");
        let policy = [("cleanup.policy", Some("compact"))];
        fresh_read(&mut c2);
        assert_eq!(
            configs::create(&mut c1, 7, &topic, &policy, false).error_code,
            0
        );
        let described =
            configs::describe(&mut c2, 4, (2, &topic), Some(&["cleanup.policy"]), false);
        assert_eq!(
            described.error_code, 0,
            "{topic}: {:?}",
            described.error_message
        );
        let value = described.configs[0].value.as_ref().map(|v| v.to_string());
        assert_eq!(value.as_deref(), Some("compact"), "{topic}");

        let topic = format!("altered-elsewhere-{i}");
        fresh_read(&mut c2);
        assert_eq!(
            configs::create(&mut c1, 7, &topic, &[], false).error_code,
            0
        );
        let change = [("retention.ms", SET, Some("3600000"))];
        let altered = incremental(&mut c2, 1, &[((2, &topic), &change)], false);
        assert_eq!(altered, [(0, None)], "{topic}");

        let topic = format!("grown-elsewhere-{i}");
        fresh_read(&mut c2);
        assert_eq!(
            configs::create(&mut c1, 7, &topic, &[], false).error_code,
            0
        );
        let grown = support::partitions::grow(&mut c2, 3, &[(&topic, 4, None)], false);
        assert_eq!(grown, [(topic.clone(), 0, None)]);

        let topic = format!("deleted-elsewhere-{i}");
        fresh_read(&mut c2);
        assert_eq!(
            configs::create(&mut c1, 7, &topic, &[], false).error_code,
            0
        );
        assert_eq!(configs::delete(&mut c2, &topic), 0, "{topic}");
    }
}

/// A topic another gateway is making, seen between its Iggy topic and its definition
/// (a Metadata request naming it makes the gateway read its table again as soon as
/// it misses), is served with its definition, never as a native topic: the same topic
/// id as its creator's and the configurations it was made with.
#[test]
fn a_topic_caught_while_another_gateway_makes_it_has_its_definition() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let (one, two) = (server.gateway(), server.gateway());
    let names: Vec<String> = (0..40).map(|i| format!("mid-creation-{i}")).collect();
    let watcher = {
        let (names, addr) = (names.clone(), two.addr);
        std::thread::spawn(move || {
            let mut c = RawClient::connect(addr);
            let deadline = Instant::now() + Duration::from_secs(60);
            let seen = |c: &mut RawClient, name: &str| loop {
                if let Some(id) = named_topic_id(c, name) {
                    let policy = configs::topic_configs(c, name)["cleanup.policy"].0.clone();
                    return (id, policy);
                }
                assert!(Instant::now() < deadline, "{name} never appeared");
            };
            (names.iter().map(|name| seen(&mut c, name))).collect::<Vec<_>>()
        })
    };
    let mut c1 = RawClient::connect(one.addr);
    let compact = [("cleanup.policy", Some("compact"))];
    let made: Vec<_> = (names.iter())
        .map(|name| {
            let r = configs::create(&mut c1, 7, name, &compact, false);
            assert_eq!(r.error_code, 0, "{name}");
            (r.topic_id, "compact".to_string())
        })
        .collect();
    let seen = watcher.join().expect("watcher");
    for ((name, made), seen) in names.iter().zip(made).zip(seen) {
        assert_eq!(seen, made, "{name}: as the second gateway first served it");
    }
}

/// The id Metadata v12 gives the topic `name` (asked for by name), if it knows it.
fn named_topic_id(c: &mut RawClient, name: &str) -> Option<uuid::Uuid> {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::MetadataRequest;
    let wanted = MetadataRequestTopic::default().with_name(Some(support::topic_name(name)));
    let request = MetadataRequest::default()
        .with_topics(Some(vec![wanted]))
        .with_allow_auto_topic_creation(false);
    let r = support::call!(c, Metadata, 12, request);
    (r.topics[0].error_code == 0).then_some(r.topics[0].topic_id)
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
    // Beside the internal `__consumer_offsets`, which every gateway lists.
    assert_eq!(
        names,
        vec![
            ("__consumer_offsets".to_string(), 50),
            ("orders".to_string(), 2),
            ("plain".to_string(), 1)
        ]
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

/// For a few milliseconds after a topic is deleted, iggy-server (0.9.0-edge.5) serves
/// its messages through a topic made right after it (found by franz-go's TestGroupETL:
/// KIP-848 members read the deleted topic's records at offset 0). CreateTopics answers
/// only once every partition of the new topic reads empty, so nothing of the old one
/// reaches a consumer.
#[tokio::test(flavor = "multi_thread")]
async fn a_topic_made_right_after_a_deletion_reads_only_its_own_records() {
    use support::records::{fetch_from, produce_n};
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let mut c = RawClient::connect(gw.addr);
    const PARTITIONS: i32 = 30;
    let admin = admin(&gw.bootstrap());
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let topics = |prefix: &str| (0..4).map(|i| format!("{prefix}-{i}")).collect::<Vec<_>>();
    fn new(names: &[String]) -> Vec<NewTopic<'_>> {
        (names.iter())
            .map(|n| NewTopic::new(n, PARTITIONS, TopicReplication::Fixed(1)))
            .collect()
    }
    for round in 0..3 {
        let (gone, fresh) = (
            topics(&format!("gone{round}")),
            topics(&format!("fresh{round}")),
        );
        admin
            .create_topics(&new(&gone), &options)
            .await
            .expect("create");
        for t in &gone {
            for p in 0..PARTITIONS {
                produce_n(&mut c, t, p, 2);
            }
        }
        let names: Vec<&str> = gone.iter().map(String::as_str).collect();
        admin.delete_topics(&names, &options).await.expect("delete");
        admin
            .create_topics(&new(&fresh), &options)
            .await
            .expect("create");
        for t in &fresh {
            for p in 0..PARTITIONS {
                let (code, _, high, offsets) = fetch_from(&mut c, t, p, 0);
                assert_eq!(
                    (code, offsets),
                    (0, Vec::new()),
                    "round {round}: {t}-{p}, made right after deletions, served records (high {high})"
                );
            }
        }
    }
}
