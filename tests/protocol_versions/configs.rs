//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs at each version.

use crate::support;

use kafka_protocol::messages::*;
use support::configs::s;
use support::{call, RawClient};

use super::{create, Topic};

pub(super) fn describe_configs(c: &mut RawClient, v: i16, t: &Topic) {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    let resource = |kind: i8, name: &str| {
        DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(s(name))
            .with_configuration_keys(Some(vec![s("retention.ms"), s("num.partitions")]))
    };
    let mut request = DescribeConfigsRequest::default()
        .with_resources(vec![
            resource(2, &t.name),
            resource(4, "0"),
            resource(2, "missing"),
        ])
        .with_include_synonyms(true);
    if v >= 3 {
        request = request.with_include_documentation(true);
    }
    let r = call!(c, DescribeConfigs, v, request);
    let [topic, broker, missing] = &r.results[..] else {
        panic!("three resources asked, {} answered", r.results.len())
    };
    assert_eq!(
        (topic.error_code, &topic.error_message),
        (0, &None),
        "{topic:?}"
    );
    // The versions topic was created with retention.ms=86400000 (LONG, type 5).
    let [e] = &topic.configs[..] else {
        panic!("{topic:?}")
    };
    let shown = (
        e.name.as_str(),
        e.value.as_deref(),
        e.config_source,
        e.read_only,
    );
    assert_eq!(shown, ("retention.ms", Some("86400000"), 1, false));
    let sources: Vec<i8> = e.synonyms.iter().map(|x| x.source).collect();
    assert_eq!(sources, [1, 5], "topic value, then the broker default");
    let documented = e.documentation.as_deref().is_some_and(|d| !d.is_empty());
    let typed = (e.config_type, documented);
    assert_eq!(typed, if v >= 3 { (5, true) } else { (0, false) });
    let [n] = &broker.configs[..] else {
        panic!("{broker:?}")
    };
    assert_eq!(
        (n.name.as_str(), n.value.as_deref()),
        ("num.partitions", Some("1"))
    );
    assert_eq!(missing.error_code, 3, "{missing:?}");
}

/// retention.ms of a topic (DescribeConfigs v4): its value and source.
fn retention(c: &mut RawClient, topic: &str) -> (String, i8) {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    let resource = DescribeConfigsResource::default()
        .with_resource_type(2)
        .with_resource_name(s(topic))
        .with_configuration_keys(Some(vec![s("retention.ms")]));
    let request = DescribeConfigsRequest::default().with_resources(vec![resource]);
    let r = call!(c, DescribeConfigs, 4, request);
    let e = &r.results[0].configs[0];
    (
        e.value.as_deref().unwrap_or_default().to_string(),
        e.config_source,
    )
}

pub(super) fn alter_configs(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let topic = format!("altered-v{v}");
    assert_eq!(create(c, 7, &topic, 1).error_code, 0);
    let resource = |name: &str| {
        let config = AlterableConfig::default()
            .with_name(s("retention.ms"))
            .with_value(Some(s("1000")));
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s(name))
            .with_configs(vec![config])
    };
    let request =
        AlterConfigsRequest::default().with_resources(vec![resource(&topic), resource("missing")]);
    let r = call!(c, AlterConfigs, v, request);
    let codes: Vec<_> = r
        .responses
        .iter()
        .map(|x| (x.resource_name.as_str(), x.error_code))
        .collect();
    assert_eq!(codes, [(topic.as_str(), 0), ("missing", 3)], "{r:?}");
    assert_eq!(retention(c, &topic), ("1000".into(), 1));
}

pub(super) fn incremental_alter_configs(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let topic = format!("incremental-v{v}");
    assert_eq!(create(c, 7, &topic, 1).error_code, 0);
    // DELETE (1) takes the topic's retention.ms back to the default.
    let config = AlterableConfig::default()
        .with_name(s("retention.ms"))
        .with_config_operation(1)
        .with_value(None);
    let resource = AlterConfigsResource::default()
        .with_resource_type(2)
        .with_resource_name(s(&topic))
        .with_configs(vec![config]);
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
    let r = call!(c, IncrementalAlterConfigs, v, request);
    assert_eq!(
        (r.responses[0].error_code, &r.responses[0].error_message),
        (0, &None),
        "{r:?}"
    );
    assert_eq!(retention(c, &topic), ("604800000".into(), 5));
}
