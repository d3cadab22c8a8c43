//! The integration tests, one crate: a module a file, each run through real clients
//! or hand-built requests against gateways that `support` starts. A gateway starts
//! in-process (a thread of this binary, on port 0) unless the process is the point:
//! signals, a SIGKILL and what survives it, settings and startup errors, the process's
//! own memory. Each of those tests says so where it starts its gateway.

mod support;

mod abuse_under_load;
mod acls;
mod acls_per_api;
mod admin;
mod client_quotas;
mod cluster_apis;
mod compaction;
mod consumer_groups;
mod consumer_protocol;
mod create_partitions;
mod delete_records;
mod durability;
mod faults;
mod feature_levels;
mod fetch_sessions;
mod group_migration;
mod group_protocol;
mod group_takeover;
mod idempotence;
mod iggy_backend;
mod internal_topics;
mod listeners;
mod ports;
mod protocol_versions;
mod rdkafka_roundtrip;
mod replicas;
mod retention;
mod rskafka_roundtrip;
mod sasl;
mod settings;
mod tls;
mod topic_configs;
mod topic_rules;
mod transactions;
mod wire_abuse;
