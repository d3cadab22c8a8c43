//! Topic and broker configurations (issue 4), on every store: CreateTopics with
//! configurations, DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, with raw
//! requests at every served version for the exact codes, sources and values; a
//! compacted topic refusing keyless records (`compacted.rs`). What the configurations
//! do to Iggy topics is checked in `iggy_backend/`.

mod alter_configs;
mod broker_configs;
mod compacted;
mod create_topics;
mod describe_configs;
mod kafka_broker_configs;

use crate::support;

use support::configs::*;
use support::RawClient;

/// A topic's value of `name` and its source.
fn value(c: &mut RawClient, topic: &str, name: &str) -> (String, i8) {
    topic_configs(c, topic)[name].clone()
}

fn owned_value(value: &str, source: i8) -> (String, i8) {
    (value.to_string(), source)
}
