//! Raw requests and Kafka facts for the configuration tests (`tests/topic_configs/`,
//! `tests/iggy_backend/`).

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    AlterConfigsRequest, ApiKey, CreateTopicsRequest, DeleteTopicsRequest, DescribeConfigsRequest,
    IncrementalAlterConfigsRequest, MetadataRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::{call, topic_name, RawClient};

pub const INVALID_CONFIG: i16 = 40;
pub const UNKNOWN_TOPIC: i16 = 3;
pub const INVALID_TOPIC: i16 = 17;
pub const INVALID_REQUEST: i16 = 42;
pub const TOPIC_EXISTS: i16 = 36;

/// DescribeConfigs' sources.
pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
pub const STATIC_BROKER_CONFIG: i8 = 4;
pub const DEFAULT_CONFIG: i8 = 5;

/// Every topic configuration of Kafka 4.1 (`org.apache.kafka.common.config.TopicConfig`
/// and `LogConfig`), each with a valid value other than its default, as sent and as a
/// broker shows it back.
pub const KAFKA_TOPIC_CONFIGS: &[(&str, &str, &str)] = &[
    ("cleanup.policy", "compact, delete", "compact,delete"),
    ("compression.type", "zstd", "zstd"),
    ("compression.gzip.level", "5", "5"),
    ("compression.lz4.level", "10", "10"),
    ("compression.zstd.level", "-5", "-5"),
    ("delete.retention.ms", "3600000", "3600000"),
    ("file.delete.delay.ms", "1000", "1000"),
    ("flush.messages", "1000", "1000"),
    ("flush.ms", "1000", "1000"),
    (
        "follower.replication.throttled.replicas",
        "0:1,1:2",
        "0:1,1:2",
    ),
    ("index.interval.bytes", "8192", "8192"),
    ("leader.replication.throttled.replicas", "*", "*"),
    ("local.retention.bytes", "-2", "-2"),
    ("local.retention.ms", "1000", "1000"),
    ("max.compaction.lag.ms", "86400000", "86400000"),
    ("max.message.bytes", "2097152", "2097152"),
    ("message.timestamp.after.max.ms", "60000", "60000"),
    ("message.timestamp.before.max.ms", "60000", "60000"),
    ("message.timestamp.type", "LogAppendTime", "LogAppendTime"),
    ("min.cleanable.dirty.ratio", "0.25", "0.25"),
    ("min.compaction.lag.ms", "1000", "1000"),
    ("min.insync.replicas", "2", "2"),
    ("preallocate", "TRUE", "true"),
    ("remote.log.copy.disable", "true", "true"),
    ("remote.log.delete.on.disable", "true", "true"),
    ("remote.storage.enable", "false", "false"),
    ("retention.bytes", "-1", "-1"),
    ("retention.ms", "86400000", "86400000"),
    ("segment.bytes", "2097152", "2097152"),
    ("segment.index.bytes", "1048576", "1048576"),
    ("segment.jitter.ms", "10", "10"),
    ("segment.ms", "3600000", "3600000"),
    ("unclean.leader.election.enable", "true", "true"),
];

/// Every version of `key` the gateway must serve, from the pinned table
/// (`support::versions`), not from the gateway's own.
pub fn versions(key: ApiKey) -> RangeInclusive<i16> {
    let api = super::versions::served(key as i16)
        .unwrap_or_else(|| panic!("{key:?} is not in tests/support/versions.rs"));
    api.min..=api.max
}

pub fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// CreateTopics at `v` of one topic (3 partitions, replication factor 1).
pub fn create(
    c: &mut RawClient,
    v: i16,
    topic: &str,
    configs: &[(&str, Option<&str>)],
    validate_only: bool,
) -> CreatableTopicResult {
    create_with(c, v, topic, 3, 1, configs, validate_only)
}

/// CreateTopics at `v` of one topic.
pub fn create_with(
    c: &mut RawClient,
    v: i16,
    topic: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[(&str, Option<&str>)],
    validate_only: bool,
) -> CreatableTopicResult {
    let configs = configs
        .iter()
        .map(|(k, v)| {
            CreatableTopicConfig::default()
                .with_name(s(k))
                .with_value(v.map(s))
        })
        .collect();
    let topic = CreatableTopic::default()
        .with_name(topic_name(topic))
        .with_num_partitions(partitions)
        .with_replication_factor(replication_factor)
        .with_configs(configs);
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(5000)
        .with_validate_only(validate_only)
        .with_topics(vec![topic]);
    let r = call!(c, CreateTopics, v, request);
    r.topics.into_iter().next().expect("one result")
}

/// Whether Metadata (v12, without auto-creation) lists the topic.
pub fn exists(c: &mut RawClient, topic: &str) -> bool {
    let wanted = MetadataRequestTopic::default().with_name(Some(topic_name(topic)));
    let request = MetadataRequest::default()
        .with_topics(Some(vec![wanted]))
        .with_allow_auto_topic_creation(false);
    let r = call!(c, Metadata, 12, request);
    r.topics[0].error_code == 0
}

/// DescribeConfigs at `v` of one resource (`2` topic, `4` broker); `keys` None for all.
pub fn describe(
    c: &mut RawClient,
    v: i16,
    (resource_type, name): (i8, &str),
    keys: Option<&[&str]>,
    synonyms: bool,
) -> DescribeConfigsResult {
    let resource = DescribeConfigsResource::default()
        .with_resource_type(resource_type)
        .with_resource_name(s(name))
        .with_configuration_keys(keys.map(|k| k.iter().map(|k| s(k)).collect()));
    let mut request = DescribeConfigsRequest::default()
        .with_resources(vec![resource])
        .with_include_synonyms(synonyms);
    if v >= 3 {
        request = request.with_include_documentation(true);
    }
    let r = call!(c, DescribeConfigs, v, request);
    r.results.into_iter().next().expect("one result")
}

/// A resource's configurations (DescribeConfigs v4): name → (value, source).
pub fn configs_of(c: &mut RawClient, resource: (i8, &str)) -> BTreeMap<String, (String, i8)> {
    let r = describe(c, 4, resource, None, false);
    assert_eq!(r.error_code, 0, "{r:?}");
    r.configs
        .into_iter()
        .map(|e| {
            let value = e.value.map(|v| v.to_string()).unwrap_or_default();
            (e.name.to_string(), (value, e.config_source))
        })
        .collect()
}

/// A topic's configurations: name → (value, source).
pub fn topic_configs(c: &mut RawClient, topic: &str) -> BTreeMap<String, (String, i8)> {
    configs_of(c, (2, topic))
}

/// DeleteTopics v6 of one topic by name: its error code.
pub fn delete(c: &mut RawClient, topic: &str) -> i16 {
    let state = DeleteTopicState::default().with_name(Some(topic_name(topic)));
    let request = DeleteTopicsRequest::default()
        .with_topics(vec![state])
        .with_timeout_ms(5000);
    call!(c, DeleteTopics, 6, request).responses[0].error_code
}

/// IncrementalAlterConfigs operations.
pub const SET: i8 = 0;
pub const DELETE: i8 = 1;
pub const APPEND: i8 = 2;
pub const SUBTRACT: i8 = 3;

/// One resource to alter: `(type, name)` and its `(name, value)` entries.
pub type Replace<'a> = ((i8, &'a str), &'a [(&'a str, Option<&'a str>)]);
/// Incremental changes: `(name, operation, value)` entries.
pub type Ops<'a> = &'a [(&'a str, i8, Option<&'a str>)];
/// One resource to alter incrementally: `(type, name)` and its changes.
pub type Incremental<'a> = ((i8, &'a str), Ops<'a>);

/// AlterConfigs at `v`: each resource's `(error code, error message)`, in order.
pub fn alter(
    c: &mut RawClient,
    v: i16,
    resources: &[Replace],
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let resources = resources.iter().map(|((kind, name), configs)| {
        let configs = configs.iter().map(|(k, v)| {
            AlterableConfig::default()
                .with_name(s(k))
                .with_value(v.map(s))
        });
        AlterConfigsResource::default()
            .with_resource_type(*kind)
            .with_resource_name(s(name))
            .with_configs(configs.collect())
    });
    let request = AlterConfigsRequest::default()
        .with_resources(resources.collect())
        .with_validate_only(validate_only);
    let r = call!(c, AlterConfigs, v, request);
    r.responses
        .into_iter()
        .map(|x| (x.error_code, x.error_message.map(|m| m.to_string())))
        .collect()
}

/// IncrementalAlterConfigs at `v`: each resource's `(error code, error message)`.
pub fn incremental(
    c: &mut RawClient,
    v: i16,
    resources: &[Incremental],
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let resources = resources.iter().map(|((kind, name), configs)| {
        let configs = configs.iter().map(|(k, op, v)| {
            AlterableConfig::default()
                .with_name(s(k))
                .with_config_operation(*op)
                .with_value(v.map(s))
        });
        AlterConfigsResource::default()
            .with_resource_type(*kind)
            .with_resource_name(s(name))
            .with_configs(configs.collect())
    });
    let request = IncrementalAlterConfigsRequest::default()
        .with_resources(resources.collect())
        .with_validate_only(validate_only);
    let r = call!(c, IncrementalAlterConfigs, v, request);
    r.responses
        .into_iter()
        .map(|x| (x.error_code, x.error_message.map(|m| m.to_string())))
        .collect()
}

/// A broker's configurations (`name` "" for every broker's): name → (value, source).
pub fn broker_configs(c: &mut RawClient, name: &str) -> BTreeMap<String, (String, i8)> {
    configs_of(c, (4, name))
}

/// UpdateFeatures at `v` of `gateway.version` to `level` (`upgrade_type` 1 upgrade,
/// 2 safe and 3 unsafe downgrade; at v0, 2 and 3 send allow_downgrade): the error code
/// and message of the update (v0-1 per feature, v2 at the top).
pub fn update_feature(
    c: &mut RawClient,
    v: i16,
    level: i16,
    upgrade_type: i8,
    validate_only: bool,
) -> (i16, Option<String>) {
    let r = update_features(c, v, level, upgrade_type, validate_only);
    if v >= 2 {
        return (r.error_code, r.error_message.map(|m| m.to_string()));
    }
    assert_eq!(r.error_code, 0, "{r:?}");
    let result = r.results.into_iter().next().expect("one result");
    (
        result.error_code,
        result.error_message.map(|m| m.to_string()),
    )
}

/// The whole UpdateFeatures answer to the request [`update_feature`] sends.
pub fn update_features(
    c: &mut RawClient,
    v: i16,
    level: i16,
    upgrade_type: i8,
    validate_only: bool,
) -> kafka_protocol::messages::UpdateFeaturesResponse {
    use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
    use kafka_protocol::messages::UpdateFeaturesRequest;
    let mut update = FeatureUpdateKey::default()
        .with_feature(s("gateway.version"))
        .with_max_version_level(level);
    update = if v == 0 {
        update.with_allow_downgrade(upgrade_type > 1)
    } else {
        update.with_upgrade_type(upgrade_type)
    };
    let request = UpdateFeaturesRequest::default()
        .with_timeout_ms(5000)
        .with_feature_updates(vec![update])
        .with_validate_only(validate_only);
    call!(c, UpdateFeatures, v, request)
}

/// The finalized `gateway.version` and its epoch (ApiVersions v4).
pub fn finalized(c: &mut RawClient) -> (i16, i64) {
    use kafka_protocol::messages::ApiVersionsRequest;
    let request = ApiVersionsRequest::default()
        .with_client_software_name(s("configs-test"))
        .with_client_software_version(s("1.0"));
    let r = call!(c, ApiVersions, 4, request);
    let level = r
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "gateway.version");
    (
        level.expect("gateway.version finalized").max_version_level,
        r.finalized_features_epoch,
    )
}
