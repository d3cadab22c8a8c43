//! AlterClientQuotas and DescribeClientQuotas at each version.

use crate::support;

use kafka_protocol::messages::*;
use support::configs::s;
use support::{call, RawClient};

/// A request setting (or, with `remove`, removing) `key` of client id `quota-v<v>`.
fn quota_alteration(v: i16, key: &str, remove: bool) -> AlterClientQuotasRequest {
    use alter_client_quotas_request::{EntityData, EntryData, OpData};
    let entity = EntityData::default()
        .with_entity_type(s("client-id"))
        .with_entity_name(Some(s(&format!("quota-v{v}"))));
    let op = OpData::default()
        .with_key(s(key))
        .with_value(4096.0)
        .with_remove(remove);
    AlterClientQuotasRequest::default().with_entries(vec![EntryData::default()
        .with_entity(vec![entity])
        .with_ops(vec![op])])
}

/// The quotas of client id `quota-v<id>`, described at version `v`: (key, value) pairs.
fn quotas_of(c: &mut RawClient, id: i16, v: i16) -> Vec<(String, f64)> {
    use describe_client_quotas_request::ComponentData;
    let component = ComponentData::default()
        .with_entity_type(s("client-id"))
        .with_match_type(0)
        .with_match(Some(s(&format!("quota-v{id}"))));
    let request = DescribeClientQuotasRequest::default().with_components(vec![component]);
    let r = call!(c, DescribeClientQuotas, v, request);
    assert_eq!(r.error_code, 0, "{r:?}");
    let entries = r.entries.unwrap_or_default();
    entries
        .iter()
        .flat_map(|e| &e.values)
        .map(|x| (x.key.to_string(), x.value))
        .collect()
}

pub(super) fn alter_client_quotas(c: &mut RawClient, v: i16) {
    let r = call!(
        c,
        AlterClientQuotas,
        v,
        quota_alteration(v, "producer_byte_rate", false)
    );
    assert_eq!(r.entries[0].error_code, 0, "{r:?}");
    assert_eq!(quotas_of(c, v, 1), [("producer_byte_rate".into(), 4096.0)]);
    // An unknown key: INVALID_REQUEST (42), nothing changed.
    let r = call!(
        c,
        AlterClientQuotas,
        v,
        quota_alteration(v, "bogus_rate", false)
    );
    assert_eq!(r.entries[0].error_code, 42, "{r:?}");
    let r = call!(
        c,
        AlterClientQuotas,
        v,
        quota_alteration(v, "producer_byte_rate", true)
    );
    assert_eq!(r.entries[0].error_code, 0, "{r:?}");
    assert_eq!(quotas_of(c, v, 1), []);
}

pub(super) fn describe_client_quotas(c: &mut RawClient, v: i16) {
    let r = call!(
        c,
        AlterClientQuotas,
        1,
        quota_alteration(v + 10, "consumer_byte_rate", false)
    );
    assert_eq!(r.entries[0].error_code, 0, "{r:?}");
    assert_eq!(
        quotas_of(c, v + 10, v),
        [("consumer_byte_rate".into(), 4096.0)]
    );
    // An unknown entity type in the filter: UNSUPPORTED_VERSION (35), as Kafka answers.
    let component = describe_client_quotas_request::ComponentData::default()
        .with_entity_type(s("group"))
        .with_match_type(2);
    let request = DescribeClientQuotasRequest::default().with_components(vec![component]);
    let r = call!(c, DescribeClientQuotas, v, request);
    assert_eq!((r.error_code, r.entries), (35, None));
}
