//! Feature-level validation (issue 4): the finalized `gateway.version` stored in the
//! backend, reported by ApiVersions, changed by UpdateFeatures after an audit of every
//! stored configuration; the validators of the active level run on CreateTopics,
//! AlterConfigs and IncrementalAlterConfigs; a gateway whose static settings break the
//! active level refuses to start. On every store.

use crate::support;

use kafka_protocol::messages::ApiKey;

use support::configs::*;
use support::{Gateway, RawClient, Store};

const UPGRADE: i8 = 1;
const SAFE_DOWNGRADE: i8 = 2;
const UNSAFE_DOWNGRADE: i8 = 3;
const INVALID_UPDATE_VERSION: i16 = 95;

/// An upgrade to level 2 is refused while stored configurations break it, naming each
/// (topic values, dynamic broker values), then accepted once they are fixed; from
/// then on level 2's validators refuse what level 1 accepted; downgrades need a
/// downgrade type; the level survives a restart.
fn upgrade_refused_naming_offenders_then_accepted(store: Store) {
    // A process: the level is read back after a SIGKILL.
    let Some(mut gw) = Gateway::process_on(store, &[]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(finalized(&mut c).0, 1, "a new cluster starts at level 1");
    let odd = [("segment.bytes", Some("2000000"))];
    assert_eq!(create(&mut c, 7, "odd-segment", &odd, false).error_code, 0);
    let tiny = [("retention.bytes", Some("1000"))];
    assert_eq!(
        create(&mut c, 7, "tiny-retention", &tiny, false).error_code,
        0
    );
    let big = [("message.max.bytes", SET, Some("100000000"))];
    assert_eq!(
        incremental(&mut c, 1, &[((4, ""), &big)], false),
        [(0, None)]
    );

    let offenders = [
        "topic 'odd-segment': segment.bytes=2000000",
        "topic 'tiny-retention': retention.bytes=1000",
        "every gateway: message.max.bytes=100000000",
    ];
    let (_, epoch) = finalized(&mut c);
    for v in versions(ApiKey::UpdateFeatures) {
        for validate_only in [true, false].into_iter().filter(|&o| v >= 1 || !o) {
            let (code, message) = update_feature(&mut c, v, 2, UPGRADE, validate_only);
            assert_eq!(code, INVALID_UPDATE_VERSION, "v{v}: {message:?}");
            let message = message.unwrap_or_default();
            for offender in offenders {
                assert!(
                    message.contains(offender),
                    "v{v}: {message:?} lacks {offender:?}"
                );
            }
        }
    }
    assert_eq!(
        finalized(&mut c),
        (1, epoch),
        "refused upgrades changed nothing"
    );

    let fix_segment = [("segment.bytes", SET, Some("1048576"))];
    let fix_retention = [("retention.bytes", DELETE, None)];
    let fix_broker = [("message.max.bytes", DELETE, None)];
    let fixed = incremental(
        &mut c,
        1,
        &[
            ((2, "odd-segment"), &fix_segment),
            ((2, "tiny-retention"), &fix_retention),
            ((4, ""), &fix_broker),
        ],
        false,
    );
    assert_eq!(fixed, [(0, None), (0, None), (0, None)]);
    assert_eq!(update_feature(&mut c, 1, 2, UPGRADE, true), (0, None));
    assert_eq!(finalized(&mut c), (1, epoch), "validate_only upgraded");
    assert_eq!(update_feature(&mut c, 2, 2, UPGRADE, false), (0, None));
    assert_eq!(finalized(&mut c), (2, epoch + 1));

    // Level 2's validators: 40 naming the level, where level 1 accepted.
    for v in versions(ApiKey::CreateTopics) {
        let r = create(&mut c, v, &format!("refused-at-2-v{v}"), &odd, false);
        assert_eq!(r.error_code, INVALID_CONFIG, "v{v}: {r:?}");
        let message = r.error_message.unwrap_or_default();
        assert!(
            message.contains("segment.bytes") && message.contains("gateway.version 2"),
            "{message}"
        );
    }
    for v in versions(ApiKey::IncrementalAlterConfigs) {
        let set = [("retention.bytes", SET, Some("1000"))];
        let answered = incremental(
            &mut c,
            v,
            &[((2, "odd-segment"), &set), ((4, ""), &big)],
            false,
        );
        let codes: Vec<i16> = answered.iter().map(|(code, _)| *code).collect();
        assert_eq!(
            codes,
            [INVALID_CONFIG, INVALID_CONFIG],
            "v{v}: {answered:?}"
        );
    }
    for v in versions(ApiKey::AlterConfigs) {
        let answered = alter(&mut c, v, &[((2, "odd-segment"), &odd)], false);
        assert_eq!(answered[0].0, INVALID_CONFIG, "v{v}: {answered:?}");
    }
    assert_eq!(
        create(
            &mut c,
            7,
            "fine-at-2",
            &[("segment.bytes", Some("2097152"))],
            false
        )
        .error_code,
        0
    );

    // Down needs a downgrade type; with one, both kinds work (level 2 only adds rules).
    let (code, message) = update_feature(&mut c, 1, 1, UPGRADE, false);
    assert_eq!(code, INVALID_UPDATE_VERSION, "{message:?}");
    assert_eq!(
        update_feature(&mut c, 1, 3, UPGRADE, false).0,
        INVALID_UPDATE_VERSION,
        "level 3"
    );
    assert_eq!(
        update_feature(&mut c, 1, 1, SAFE_DOWNGRADE, false),
        (0, None)
    );
    assert_eq!(finalized(&mut c).0, 1);
    assert_eq!(
        create(&mut c, 7, "odd-again", &odd, false).error_code,
        0,
        "level 1 rules"
    );
    assert_eq!(
        incremental(&mut c, 1, &[((2, "odd-again"), &fix_segment)], false),
        [(0, None)]
    );
    assert_eq!(update_feature(&mut c, 0, 2, UPGRADE, false), (0, None));
    assert_eq!(
        update_feature(&mut c, 1, 1, UNSAFE_DOWNGRADE, false),
        (0, None)
    );
    assert_eq!(update_feature(&mut c, 0, 2, UPGRADE, false), (0, None));
    let level = finalized(&mut c);
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(finalized(&mut c), level, "after a restart");
}

/// Every gateway reports its static settings at startup: an upgrade is refused while a
/// gateway's static setting breaks the target level, naming it; and a gateway whose
/// static settings break the active level refuses to start, naming the setting.
fn static_settings_are_audited_and_checked_at_startup(store: Store) {
    let big = ("message_max_bytes", "100000000");
    // A process: restarted after SIGKILLs, and refusing to start (exit code, stderr).
    let Some(mut gw) = Gateway::process_on(store, &[big]) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    let (code, message) = update_feature(&mut c, 1, 2, UPGRADE, false);
    assert_eq!(code, INVALID_UPDATE_VERSION, "{message:?}");
    let message = message.unwrap_or_default();
    assert!(
        message.contains("static setting of gateway 0: message.max.bytes=100000000"),
        "{message}"
    );
    // Restarted with the default, it reports that instead: the upgrade goes through.
    gw.restart_with("message_max_bytes", None);
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(update_feature(&mut c, 2, 2, UPGRADE, false), (0, None));
    let (status, stderr) = gw.refused_restart_with(&[big]);
    assert_eq!(status, Some(1), "{stderr}");
    for named in ["message_max_bytes", "100000000", "gateway.version 2"] {
        assert!(stderr.contains(named), "stderr lacks {named:?}: {stderr}");
    }
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(finalized(&mut c).0, 2);
}

support::on_every_store!(
    upgrade_refused_naming_offenders_then_accepted,
    static_settings_are_audited_and_checked_at_startup,
);
