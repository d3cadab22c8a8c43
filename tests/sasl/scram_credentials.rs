//! AlterUserScramCredentials and DescribeUserScramCredentials, and credentials across restarts.

use crate::support;

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::*;
use support::configs::s;
use support::{call, Gateway, RawClient, Store};

use super::{client, metadata_works, salted, scram_login, SASL};

const BOTH: &str = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0";

fn upsertion(
    user: &str,
    mechanism: i8,
    iterations: i32,
    password: &str,
) -> ScramCredentialUpsertion {
    let salt = format!("salt-of-{user}").into_bytes();
    let salted = salted(mechanism == 2, password, &salt, iterations.max(1) as u32);
    ScramCredentialUpsertion::default()
        .with_name(s(user))
        .with_mechanism(mechanism)
        .with_iterations(iterations)
        .with_salt(Bytes::from(salt))
        .with_salted_password(Bytes::from(salted))
}

fn deletion(user: &str, mechanism: i8) -> ScramCredentialDeletion {
    ScramCredentialDeletion::default()
        .with_name(s(user))
        .with_mechanism(mechanism)
}

fn alter(
    c: &mut RawClient,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> Vec<(String, i16, Option<String>)> {
    let request = AlterUserScramCredentialsRequest::default()
        .with_deletions(deletions)
        .with_upsertions(upsertions);
    let mut r: Vec<_> = call!(c, AlterUserScramCredentials, 0, request)
        .results
        .into_iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.error_code,
                r.error_message.map(|m| m.to_string()),
            )
        })
        .collect();
    r.sort();
    r
}

/// A user as DescribeUserScramCredentials answers: name, error code, (mechanism, iterations).
type Described = (String, i16, Vec<(i8, i32)>);

/// Each user's credentials; `None` asks for every user.
fn describe(c: &mut RawClient, users: Option<&[&str]>) -> Vec<Described> {
    let users = users.map(|u| {
        u.iter()
            .map(|n| UserName::default().with_name(s(n)))
            .collect()
    });
    let request = DescribeUserScramCredentialsRequest::default().with_users(users);
    let r = call!(c, DescribeUserScramCredentials, 0, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.results
        .into_iter()
        .map(|u| {
            let infos = u
                .credential_infos
                .iter()
                .map(|i| (i.mechanism, i.iterations))
                .collect();
            (u.user.to_string(), u.error_code, infos)
        })
        .collect()
}

#[test]
fn scram_credentials_are_managed_with_the_kafka_apis() {
    let gw = Gateway::start_with(&[
        ("listeners", BOTH),
        ("sasl_scram_users", "admin:admin-secret"),
    ]);
    let sasl = gw.listener("SASL_PLAINTEXT").to_string();
    let mut c = RawClient::connect(gw.listener("PLAINTEXT"));
    let ok = |user: &str| (user.to_string(), 0, None);
    assert_eq!(
        alter(
            &mut c,
            vec![],
            vec![
                upsertion("carol", 1, 4096, "carol-1"),
                upsertion("dave", 2, 8192, "dave-1")
            ]
        ),
        [ok("carol"), ok("dave")]
    );
    assert_eq!(
        describe(&mut c, Some(&["carol", "dave", "nobody"])),
        [
            ("carol".into(), 0, vec![(1, 4096)]),
            ("dave".into(), 0, vec![(2, 8192)]),
            ("nobody".into(), 91, vec![]),
        ]
    );
    let everyone: Vec<String> = describe(&mut c, None).into_iter().map(|u| u.0).collect();
    assert_eq!(everyone, ["admin", "carol", "dave"]);
    // Kafka's refusals, per user, and nothing stored for the refused ones.
    let refused = alter(
        &mut c,
        vec![deletion("erin", 1), deletion("", 1)],
        vec![
            upsertion("frank", 1, 1024, "x"),
            upsertion("grace", 3, 4096, "x"),
            upsertion("heidi", 1, 4096, "x"),
            upsertion("heidi", 2, 4096, "x"),
            upsertion("ivan", 2, 20000, "x"),
        ],
    );
    let codes: Vec<(&str, i16)> = refused.iter().map(|(u, e, _)| (u.as_str(), *e)).collect();
    assert_eq!(
        codes,
        [
            ("", 93),
            ("erin", 91),
            ("frank", 93),
            ("grace", 33),
            ("heidi", 92),
            ("ivan", 93)
        ],
        "{refused:?}"
    );
    assert_eq!(refused[2].2.as_deref(), Some("Too few iterations"));
    assert_eq!(refused[5].2.as_deref(), Some("Too many iterations"));
    let everyone: Vec<String> = describe(&mut c, None).into_iter().map(|u| u.0).collect();
    assert_eq!(everyone, ["admin", "carol", "dave"]);
    let mut twice = describe(&mut c, Some(&["carol", "carol"]));
    assert_eq!(twice.len(), 1);
    assert_eq!(twice.remove(0).1, 92);

    // The stored credentials log in through librdkafka; a deleted one no longer does.
    assert!(metadata_works(&client(
        &sasl,
        "SCRAM-SHA-256",
        "carol",
        "carol-1"
    )));
    assert!(!metadata_works(&client(
        &sasl,
        "SCRAM-SHA-256",
        "carol",
        "carol-2"
    )));
    assert!(metadata_works(&client(
        &sasl,
        "SCRAM-SHA-512",
        "dave",
        "dave-1"
    )));
    assert!(
        !metadata_works(&client(&sasl, "SCRAM-SHA-256", "dave", "dave-1")),
        "no SHA-256 credential"
    );
    assert_eq!(
        alter(&mut c, vec![], vec![upsertion("carol", 1, 4096, "carol-2")]),
        [ok("carol")]
    );
    assert!(metadata_works(&client(
        &sasl,
        "SCRAM-SHA-256",
        "carol",
        "carol-2"
    )));
    assert_eq!(
        alter(&mut c, vec![deletion("carol", 1)], vec![]),
        [ok("carol")]
    );
    assert!(!metadata_works(&client(
        &sasl,
        "SCRAM-SHA-256",
        "carol",
        "carol-2"
    )));
    assert_eq!(describe(&mut c, Some(&["carol"]))[0].1, 91);
}

fn credentials_survive_a_restart(store: Store) {
    // A process: the credentials are read back after a SIGKILL.
    let Some(mut gw) = Gateway::process_on(
        store,
        &[
            ("listeners", SASL),
            ("sasl_scram_users", "admin:admin-secret"),
        ],
    ) else {
        return;
    };
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        scram_login(&mut c, 2, true, "admin", "admin-secret")
            .1
            .error_code,
        0
    );
    assert_eq!(
        alter(&mut c, vec![], vec![upsertion("judy", 2, 4096, "judy-1")]),
        [("judy".to_string(), 0, None)]
    );
    drop(c);
    gw.restart_after_kill();
    let mut c = RawClient::connect(gw.addr);
    assert_eq!(
        scram_login(&mut c, 2, true, "judy", "judy-1").1.error_code,
        0
    );
    let described = describe(&mut c, Some(&["admin", "judy"]));
    assert_eq!(
        described,
        [
            ("admin".into(), 0, vec![(1, 8192), (2, 8192)]),
            ("judy".into(), 0, vec![(2, 4096)]),
        ]
    );
    // The bootstrap user kept its first credentials (the salt in its server-first).
    let mut c1 = RawClient::connect(gw.addr);
    let (first_before, _) = scram_login(&mut c1, 2, false, "admin", "admin-secret");
    gw.restart_after_kill();
    let mut c2 = RawClient::connect(gw.addr);
    let (first_after, last) = scram_login(&mut c2, 2, false, "admin", "admin-secret");
    assert_eq!(last.error_code, 0);
    let salt = |m: &str| m.split(',').nth(1).unwrap().to_string();
    assert_eq!(salt(&first_before), salt(&first_after));
}

support::on_every_store!(credentials_survive_a_restart);
