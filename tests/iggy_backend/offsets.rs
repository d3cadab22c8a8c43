//! Committed offsets on Iggy: kept as sent, mirrored for Iggy tools, restored from
//! snapshots once Iggy drops old records, and committed and read through each offset
//! slot's own clients.

use crate::support;

use std::time::{Duration, Instant};

use iggy::prelude::{Consumer, SegmentClient, StreamClient, TopicClient};
use rdkafka::consumer::Consumer as _;
use rdkafka::{Offset, TopicPartitionList};

use support::groups;
use support::iggy::{first_offset, small_segment_log, snapshot_upto, IggyServer};
use support::kafka::{commit_offsets, committed, create_topic, group_consumer, produce, Expected};
use support::Gateway;

use super::{id, record, GATEWAY_STREAM, STREAM};

/// SIGKILLs iggy-server and starts it again on its data: rerun once if the server
/// fails its own crash recovery (`support::iggy::rerun_after_recovery_failure`).
#[test]
fn a_consumer_group_resumes_from_its_commits_after_iggy_and_the_gateway_restart() {
    support::iggy::rerun_after_recovery_failure(
        a_consumer_group_resumes_from_its_commits_after_iggy_and_the_gateway_restart_once,
    );
}

async fn a_consumer_group_resumes_from_its_commits_after_iggy_and_the_gateway_restart_once() {
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

#[tokio::test(flavor = "multi_thread")]
async fn gateway_logs_restart_from_snapshots_once_their_old_records_are_gone() {
    let Some(mut server) = IggyServer::start() else {
        return;
    };
    // The commit log made beforehand with the smallest segments, so old ones can be dropped.
    let sdk = server.sdk().await;
    sdk.create_stream(GATEWAY_STREAM).await.unwrap();
    sdk.create_topic(&id(GATEWAY_STREAM), "meta.offsets", &small_segment_log())
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
        // Commits land, whichever slot a partition hashes to.
        create_topic(&gw.bootstrap(), "slots", 4, &[]).await;
        let offsets: Vec<(i32, i64)> = (0..4).map(|p| (p, 10 + p as i64)).collect();
        commit_offsets(&gw.bootstrap(), "g", "slots", &offsets);
        assert_eq!(
            committed(&gw.bootstrap(), "g", "slots", 4),
            [10, 11, 12, 13]
        );
        // A record makes a transaction index for the checkpoints' owner to save.
        produce(&gw.bootstrap(), "slots", "none", &[(0, record(1))]);
        // The gateway's connections, without this one: IGGY_MAPPING.md's count, 11 +
        // produce and read clients (4 each) + 2 per offset slot + 1 per transaction slot
        // (4), but for the snapshot connection, opened at the first snapshot. Counted
        // once the clients that sign in on first use (the transaction slots' first
        // rescan, the checkpoints' first save) have, within a bound.
        let expected = 11 + 4 + 4 + 2 * slots.parse::<usize>().unwrap() + 4 - 1;
        let sdk = server.sdk().await;
        let started = std::time::Instant::now();
        let count = loop {
            let count = sdk.get_clients().await.expect("clients").len() - 1;
            if count >= expected || started.elapsed() > std::time::Duration::from_secs(20) {
                break count;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        assert_eq!(
            count, expected,
            "the gateway's Iggy connections, {slots} offset slots"
        );
        clients.push(count);
    }
    assert_eq!(
        clients[1] - clients[0],
        2 * 5,
        "clients by slot count: {clients:?}"
    );
}
