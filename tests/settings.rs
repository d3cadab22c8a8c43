//! Settings: an unknown or malformed setting stops startup with a message naming it,
//! whether it comes from the environment or the configuration file.

use std::process::{Command, Output};

fn start(env: &[(&str, &str)], args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iggy-kafka-gateway"));
    if !env.iter().any(|(k, _)| *k == "IGGY_KAFKA_LISTENERS") {
        cmd.env("IGGY_KAFKA_BIND_ADDRESS", "127.0.0.1:0");
    }
    cmd.env("IGGY_KAFKA_DATA_DIR", dir.path()).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Every case here must stop at startup; a gateway that started would hang the test,
    // so it is bounded by the harness's own timeout via `timeout`.
    let out = Command::new("timeout")
        .arg("10")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(124),
        "gateway started instead of refusing"
    );
    out
}

fn refused_naming(out: &Output, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit status; stderr: {stderr}");
    for w in words {
        assert!(stderr.contains(w), "stderr does not name '{w}': {stderr}");
    }
}

#[test]
fn an_unknown_environment_setting_stops_startup() {
    let out = start(&[("IGGY_KAFKA_MAX_CONECTIONS", "5")], &[]);
    refused_naming(&out, &["max_conections"]);
}

#[test]
fn a_malformed_value_stops_startup() {
    let out = start(&[("IGGY_KAFKA_MAX_CONNECTIONS", "lots")], &[]);
    refused_naming(&out, &["max_connections"]);
    let out = start(&[("IGGY_KAFKA_DURABILITY", "sometimes")], &[]);
    refused_naming(&out, &["sometimes"]);
    let out = start(&[("IGGY_KAFKA_LOG_SLOTS", "0")], &[]);
    refused_naming(&out, &["log_slots", "at least 1"]);
    let out = start(&[("IGGY_KAFKA_DELETE_TOPICS_MAX_NAMES", "0")], &[]);
    refused_naming(&out, &["delete_topics_max_names", "at least 1"]);
    let out = start(&[("IGGY_KAFKA_NUM_PARTITIONS", "100001")], &[]);
    refused_naming(&out, &["num_partitions", "at most 100000"]);
    let out = start(&[("IGGY_KAFKA_AUTO_CREATE_TOPICS_ENABLE", "maybe")], &[]);
    refused_naming(&out, &["auto_create_topics_enable"]);
    let out = start(&[("IGGY_KAFKA_TRANSACTION_MAX_TIMEOUT_MS", "0")], &[]);
    refused_naming(&out, &["transaction_max_timeout_ms", "at least 1"]);
    let out = start(&[("IGGY_KAFKA_TRANSACTION_MAX_TIMEOUT_MS", "soon")], &[]);
    refused_naming(&out, &["transaction_max_timeout_ms"]);
    let out = start(&[("IGGY_KAFKA_TRANSACTIONAL_ID_EXPIRATION_MS", "-5")], &[]);
    refused_naming(&out, &["transactional_id_expiration_ms", "at least 1"]);
    // Kafka's type for both is INT: beyond 2^31 - 1 is no value.
    let out = start(
        &[("IGGY_KAFKA_TRANSACTIONAL_ID_EXPIRATION_MS", "2147483648")],
        &[],
    );
    refused_naming(&out, &["transactional_id_expiration_ms"]);
    // KIP-848's session and heartbeat within Kafka's bounds (45-60 s, 5-15 s by
    // default), which may be moved.
    let out = start(
        &[("IGGY_KAFKA_GROUP_CONSUMER_SESSION_TIMEOUT_MS", "30000")],
        &[],
    );
    refused_naming(
        &out,
        &[
            "group_consumer_session_timeout_ms",
            "group_consumer_min_session_timeout_ms (45000)",
        ],
    );
    let out = start(
        &[("IGGY_KAFKA_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS", "20000")],
        &[],
    );
    refused_naming(
        &out,
        &[
            "group_consumer_heartbeat_interval_ms",
            "group_consumer_max_heartbeat_interval_ms (15000)",
        ],
    );
    let crossed = [
        (
            "IGGY_KAFKA_GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS",
            "9000",
        ),
        (
            "IGGY_KAFKA_GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS",
            "8000",
        ),
    ];
    let out = start(&crossed, &[]);
    refused_naming(&out, &["group_consumer_min_heartbeat_interval_ms"]);
    let out = start(&[("IGGY_KAFKA_ADMIN_BIND_ADDRESS", "anywhere")], &[]);
    refused_naming(&out, &["admin_bind_address"]);
    let overrides = "IGGY_KAFKA_MAX_CONNECTIONS_PER_IP_OVERRIDES";
    let out = start(&[(overrides, "127.0.0.1:5,localhost")], &[]);
    refused_naming(&out, &["max_connections_per_ip_overrides", "'localhost'"]);
    let out = start(&[("IGGY_KAFKA_QUEUED_MAX_REQUEST_BYTES", "0")], &[]);
    refused_naming(&out, &["queued_max_request_bytes"]);
    let out = start(&[("IGGY_KAFKA_AUTHORIZER", "acl")], &[]);
    refused_naming(&out, &["acl"]);
    let out = start(&[("IGGY_KAFKA_SUPER_USERS", "User:admin;bob")], &[]);
    refused_naming(&out, &["super_users", "'bob'"]);
}

#[test]
fn the_configuration_file_is_checked_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateway.toml");
    std::fs::write(&file, "num_partitions = 3\nnot_a_setting = true\n").unwrap();
    let out = start(&[], &["--config", file.to_str().unwrap()]);
    refused_naming(&out, &["not_a_setting"]);
    let out = start(&[], &["--config", "/no/such/file.toml"]);
    refused_naming(&out, &["/no/such/file.toml"]);
}

#[test]
fn bad_listener_settings_stop_startup() {
    let listeners = |v| ("IGGY_KAFKA_LISTENERS", v);
    let out = start(
        &[listeners("PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0")],
        &[],
    );
    refused_naming(&out, &["listeners", "'PLAINTEXT' is used twice"]);
    let out = start(&[listeners("EXTERNAL://127.0.0.1:0")], &[]);
    refused_naming(&out, &["listener_security_protocol_map", "EXTERNAL"]);
    let out = start(
        &[
            listeners("EXTERNAL://127.0.0.1:0"),
            ("IGGY_KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "EXTERNAL:TLS"),
        ],
        &[],
    );
    refused_naming(
        &out,
        &[
            "listener_security_protocol_map",
            "unknown security protocol 'TLS'",
        ],
    );
    let out = start(&[listeners("PLAINTEXT://127.0.0.1:port")], &[]);
    refused_naming(&out, &["listeners", "127.0.0.1:port"]);
    let out = start(
        &[
            listeners("PLAINTEXT://127.0.0.1:0"),
            ("IGGY_KAFKA_ADVERTISED_LISTENERS", "SSL://gw:9093"),
        ],
        &[],
    );
    refused_naming(
        &out,
        &["advertised_listeners", "'SSL' is not one of the listeners"],
    );
    let out = start(
        &[
            listeners("PLAINTEXT://127.0.0.1:0"),
            ("IGGY_KAFKA_BIND_ADDRESS", "127.0.0.1:0"),
        ],
        &[],
    );
    refused_naming(&out, &["bind_address", "listeners"]);
}

#[test]
fn bad_tls_settings_stop_startup() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nnot base64\n").unwrap();
    let cert = cert.to_str().unwrap();
    let ssl = (
        "IGGY_KAFKA_LISTENERS",
        "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
    );
    let out = start(&[ssl], &[]);
    refused_naming(&out, &["ssl_certificate_file", "SSL"]);
    let files = [
        ("IGGY_KAFKA_SSL_CERTIFICATE_FILE", cert),
        ("IGGY_KAFKA_SSL_KEY_FILE", "/no/such/key.pem"),
    ];
    // Files are read when the gateway starts, after the settings passed.
    let out = start(&[ssl, files[0], files[1]], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cert.pem: a PEM section does not end"),
        "{stderr}"
    );
    let out = start(
        &[
            ssl,
            files[0],
            files[1],
            ("IGGY_KAFKA_SSL_CLIENT_AUTH", "required"),
        ],
        &[],
    );
    refused_naming(&out, &["ssl_ca_file"]);
    let out = start(
        &[
            ssl,
            files[0],
            files[1],
            ("IGGY_KAFKA_SSL_CLIENT_AUTH", "sometimes"),
        ],
        &[],
    );
    refused_naming(&out, &["sometimes"]);
}
