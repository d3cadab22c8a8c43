//! Deadlines a request carries, met while Iggy does not answer (the server paused with
//! SIGSTOP): OffsetCommit at `offsets_commit_timeout_ms` (Kafka's
//! `offsets.commit.timeout.ms`), DeleteTopics at its `timeout_ms`, Fetch at its
//! `max_wait_ms` (Produce's is in `lifecycle.rs`). Each is
//! answered as Kafka answers within its deadline plus a margin, and once Iggy answers
//! again the next request is served; nothing is left half done.

use crate::support;

use std::time::{Duration, Instant};

use crate::wire_abuse::{fetch_request, one_record, produce, record_values};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::*;
use support::configs::s;
use support::iggy::IggyServer;
use support::kafka::{create_topic, read_values};
use support::{call, topic_name, RawClient};

/// What a late answer may take beyond its deadline on a loaded machine.
const MARGIN: Duration = Duration::from_millis(1_500);

fn within(took: Duration, deadline: Duration, what: &str) {
    assert!(
        took < deadline + MARGIN,
        "{what} answered after {took:?}, not at its {deadline:?}"
    );
}

#[test]
fn an_offset_commit_iggy_does_not_answer_times_out_at_the_commit_timeout_whole_or_not_at_all() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway_with(&[("offsets_commit_timeout_ms", "1000")]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(create_topic(&gw.bootstrap(), "commit-deadline", 2, &[]));
    let mut c = RawClient::connect(gw.addr);
    let commit = |c: &mut RawClient, offset: i64| {
        let partitions = (0..2)
            .map(|p| {
                OffsetCommitRequestPartition::default()
                    .with_partition_index(p)
                    .with_committed_offset(offset)
            })
            .collect();
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(s("deadline")))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(topic_name("commit-deadline"))
                .with_partitions(partitions)]);
        let started = Instant::now();
        let r = call!(c, OffsetCommit, 8, request);
        let codes: Vec<i16> = r.topics[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        (codes, started.elapsed())
    };
    let committed = |c: &mut RawClient| -> Vec<i64> {
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(s("deadline")))
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(topic_name("commit-deadline"))
                .with_partition_indexes(vec![0, 1])]));
        let r = call!(c, OffsetFetch, 7, request);
        r.topics[0]
            .partitions
            .iter()
            .map(|p| p.committed_offset)
            .collect()
    };
    assert_eq!(commit(&mut c, 5).0, [0, 0]);

    server.pause();
    let (codes, took) = commit(&mut c, 9);
    server.resume();
    assert_eq!(codes, [7, 7], "REQUEST_TIMED_OUT for each partition");
    within(took, Duration::from_millis(1_000), "the OffsetCommit");
    // Whole or not at all, never one partition of the two.
    let after = committed(&mut c);
    assert!(after == [5, 5] || after == [9, 9], "committed {after:?}");
    let (codes, took) = commit(&mut c, 12);
    assert_eq!(codes, [0, 0], "the next commit after Iggy came back");
    within(took, Duration::from_millis(1_000), "the next OffsetCommit");
    assert_eq!(committed(&mut c), [12, 12]);
}

#[test]
fn a_delete_topics_iggy_does_not_answer_times_out_at_its_own_timeout() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(create_topic(&gw.bootstrap(), "delete-deadline", 1, &[]));
    let mut c = RawClient::connect(gw.addr);
    let delete = |c: &mut RawClient, timeout_ms: i32| {
        let request = DeleteTopicsRequest::default()
            .with_timeout_ms(timeout_ms)
            .with_topics(vec![
                DeleteTopicState::default().with_name(Some(topic_name("delete-deadline")))
            ]);
        let started = Instant::now();
        let r = call!(c, DeleteTopics, 6, request);
        (r.responses[0].error_code, started.elapsed())
    };
    server.pause();
    let (code, took) = delete(&mut c, 1_000);
    server.resume();
    assert_eq!(code, 7, "REQUEST_TIMED_OUT");
    within(took, Duration::from_millis(1_000), "the DeleteTopics");
    // The deletion goes on or is asked again: either way the topic goes, and the
    // gateway answers the next request.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, _) = delete(&mut c, 5_000);
        if code == 3 {
            break; // UNKNOWN_TOPIC_OR_PARTITION: gone
        }
        assert!(Instant::now() < deadline, "the topic never went: {code}");
        assert!([0, 7].contains(&code), "DeleteTopics answered {code}");
    }
}

#[test]
fn a_fetch_iggy_does_not_answer_is_answered_empty_at_its_max_wait() {
    let Some(server) = IggyServer::start() else {
        return;
    };
    let gw = server.gateway();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(create_topic(&gw.bootstrap(), "fetch-deadline", 1, &[]));
    let mut c = RawClient::connect(gw.addr);
    for v in ["a", "b", "c"] {
        assert_eq!(produce(&mut c, "fetch-deadline", 0, one_record(v), -1).0, 0);
    }
    let fetch = |c: &mut RawClient, offset: i64| {
        let started = Instant::now();
        let r = call!(c, Fetch, 12, fetch_request("fetch-deadline", offset, 500));
        let p = r.responses[0].partitions[0].clone();
        let took = started.elapsed();
        (record_values(&p), p.high_watermark, took)
    };

    server.pause();
    // The read waits on Iggy past the Fetch; the next Fetch from there takes it, and
    // one from elsewhere starts no second read: each is answered at its max wait.
    let answers = [fetch(&mut c, 0), fetch(&mut c, 0), fetch(&mut c, 1)];
    server.resume();
    for (values, high, took) in answers {
        assert!(values.is_empty(), "served {values:?} while Iggy was paused");
        assert_eq!(high, -1, "a watermark Iggy never gave");
        within(took, Duration::from_millis(500), "the Fetch");
    }
    // Once the kept read has ended, unasked for, a Fetch from elsewhere is served.
    let started = Instant::now();
    let from_one = loop {
        let (values, ..) = fetch(&mut c, 1);
        if !values.is_empty() || started.elapsed() > Duration::from_secs(10) {
            break values;
        }
    };
    assert_eq!(
        from_one,
        ["b", "c"],
        "a Fetch from elsewhere after Iggy came back"
    );
    let (values, high, took) = fetch(&mut c, 0);
    assert_eq!(values, ["a", "b", "c"], "the Fetch after Iggy came back");
    assert_eq!(high, 3);
    within(took, Duration::from_millis(500), "the next Fetch");
    // A real consumer reads on.
    let mut config = rdkafka::ClientConfig::new();
    config.set("bootstrap.servers", gw.bootstrap());
    assert_eq!(read_values(&config, "fetch-deadline", 3), ["a", "b", "c"]);
}
