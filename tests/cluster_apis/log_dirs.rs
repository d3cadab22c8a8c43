//! DescribeLogDirs (35) at every served version: one log directory, the store's (the
//! embedded store's data directory, `iggy://<address>` on Iggy), with each partition's
//! size (on the embedded store exactly the bytes of the batches Fetch serves), offset
//! lag 0, never a future replica; partitions of unknown topics and unknown partitions
//! left out; `__consumer_offsets` listed empty; the volume's bytes unknown (-1).

use crate::support;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::FetchRequest;
use support::configs::create_with;
use support::describe::{log_dirs, Log, LogDir};
use support::records::produce_n;
use support::versions::served;
use support::{call, topic_name, Gateway, RawClient, Store};

support::on_every_store!(every_version_sizes_the_partitions_asked_for);

const DESCRIBE_LOG_DIRS: i16 = 35;
const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Bytes of the record batches a Fetch from offset 0 of `partition` serves.
fn fetched_bytes(c: &mut RawClient, topic: &str, partition: i32) -> i64 {
    let wanted = FetchTopic::default()
        .with_topic(topic_name(topic))
        .with_partitions(vec![FetchPartition::default()
            .with_partition(partition)
            .with_partition_max_bytes(1 << 24)]);
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 24)
        .with_topics(vec![wanted]);
    let r = call!(c, Fetch, 12, request);
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    p.records.as_ref().map_or(0, |b| b.len() as i64)
}

/// The only log directory answered, with no error.
fn one_dir(answer: (i16, Vec<LogDir>), v: i16) -> LogDir {
    let (code, mut dirs) = answer;
    assert_eq!((code, dirs.len()), (0, 1), "v{v}: {dirs:?}");
    let dir = dirs.remove(0);
    assert_eq!(dir.error_code, 0, "v{v}: {dir:?}");
    dir
}

fn of_topic<'a>(dir: &'a LogDir, topic: &str) -> Vec<&'a Log> {
    dir.logs.iter().filter(|l| l.0 == topic).collect()
}

fn every_version_sizes_the_partitions_asked_for(store: Store) {
    let Some(gw) = Gateway::start_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let made = create_with(&mut c, 7, "sized", 3, 1, &[], false);
    assert_eq!(made.error_code, 0, "{made:?}");
    for _ in 0..2 {
        produce_n(&mut c, "sized", 0, 20);
    }
    produce_n(&mut c, "sized", 1, 5);
    let api = served(DESCRIBE_LOG_DIRS).expect("DescribeLogDirs is served");
    let mut sizes = Vec::new();
    for v in api.min..=api.max {
        let dir = one_dir(log_dirs(&mut c, v, None), v);
        match store {
            Store::Embedded => assert_eq!(dir.name, gw.data_dir().display().to_string()),
            Store::Iggy => assert!(dir.name.starts_with("iggy://127.0.0.1:"), "{dir:?}"),
        }
        assert_eq!((dir.total_bytes, dir.usable_bytes), (-1, -1), "v{v}");
        assert!(
            dir.logs.iter().all(|l| (l.3, l.4) == (0, false)),
            "v{v}: no lag, no future replica: {dir:?}"
        );
        let sized: Vec<_> = of_topic(&dir, "sized").iter().map(|l| (l.1, l.2)).collect();
        assert_eq!(sized.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 1, 2]);
        let (s0, s1, s2) = (sized[0].1, sized[1].1, sized[2].1);
        assert!(s0 > s1 && s1 > 0 && s2 == 0, "v{v}: {sized:?}");
        if store == Store::Embedded {
            let stored = (
                fetched_bytes(&mut c, "sized", 0),
                fetched_bytes(&mut c, "sized", 1),
            );
            assert_eq!((s0, s1), stored, "v{v}: the batches as stored");
        }
        let internal = of_topic(&dir, OFFSETS_TOPIC);
        assert_eq!(internal.len(), 50, "v{v}: {internal:?}");
        assert!(internal.iter().all(|l| l.2 == 0), "v{v}: {internal:?}");
        sizes.push((s0, s1));

        // Named: each known partition once; unknown topics and partitions left out.
        let asked: &[(&str, &[i32])] = &[
            ("sized", &[2, 0, 7]),
            ("nowhere", &[0]),
            ("sized", &[0]),
            (OFFSETS_TOPIC, &[3]),
        ];
        let dir = one_dir(log_dirs(&mut c, v, Some(asked)), v);
        let listed: Vec<_> = dir.logs.iter().map(|l| (l.0.as_str(), l.1, l.2)).collect();
        assert_eq!(
            listed,
            [(OFFSETS_TOPIC, 3, 0), ("sized", 0, s0), ("sized", 2, 0)],
            "v{v}"
        );
        let dir = one_dir(log_dirs(&mut c, v, Some(&[("nowhere", &[0])])), v);
        assert!(dir.logs.is_empty(), "v{v}: {dir:?}");
    }
    assert!(sizes.windows(2).all(|w| w[0] == w[1]), "{sizes:?}");

    // A partition grows with what is appended to it.
    produce_n(&mut c, "sized", 2, 10);
    let dir = one_dir(log_dirs(&mut c, api.max, Some(&[("sized", &[2])])), api.max);
    assert_eq!(dir.logs.len(), 1, "{dir:?}");
    assert!(dir.logs[0].2 > 0, "{dir:?}");
}
