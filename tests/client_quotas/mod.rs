//! Client quotas end to end. Raw requests for the exact answers of AlterClientQuotas
//! and DescribeClientQuotas (entities, defaults, filters, refusals, validate_only),
//! kept across a restart on both stores and refused without the cluster ACLs; then
//! enforcement: a Produce or Fetch over its quota answered with a throttle time and
//! its connection muted for it, librdkafka clients with a quota held near it while a
//! client id without one is not throttled, an IP over its connection rate refused, and
//! quotas shared by gateways on one Iggy server and restored from their snapshot.

mod librdkafka_clients;
mod on_iggy;
mod quota_apis;
mod throttling;

use crate::support;

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::records::Compression;
use support::configs::s;
use support::{batch, call, record, topic_name, RawClient};

/// An entity as (type, name) pairs; a `None` name is `<default>`.
type Entity<'a> = &'a [(&'a str, Option<&'a str>)];

fn entry(entity: Entity, ops: &[(&str, Option<f64>)]) -> EntryData {
    EntryData::default()
        .with_entity(
            entity
                .iter()
                .map(|(t, n)| {
                    EntityData::default()
                        .with_entity_type(s(t))
                        .with_entity_name(n.map(s))
                })
                .collect(),
        )
        .with_ops(
            ops.iter()
                .map(|(k, v)| {
                    OpData::default()
                        .with_key(s(k))
                        .with_value(v.unwrap_or(0.0))
                        .with_remove(v.is_none())
                })
                .collect(),
        )
}

/// AlterClientQuotas at `v`: each entry's (code, message).
fn alter(
    c: &mut RawClient,
    v: i16,
    entries: Vec<EntryData>,
    validate_only: bool,
) -> Vec<(i16, Option<String>)> {
    let request = AlterClientQuotasRequest::default()
        .with_entries(entries)
        .with_validate_only(validate_only);
    let r = call!(c, AlterClientQuotas, v, request);
    r.entries
        .iter()
        .map(|e| {
            (
                e.error_code,
                e.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect()
}

fn set(c: &mut RawClient, entity: Entity, key: &str, value: f64) {
    let answer = alter(c, 1, vec![entry(entity, &[(key, Some(value))])], false);
    assert_eq!(answer, [(0, None)]);
}

/// A described entity: its parts, sorted, and its values.
type Described = (Vec<(String, Option<String>)>, Vec<(String, f64)>);

/// DescribeClientQuotas at `v` with (type, match type, match) components: the code
/// and the entries, sorted.
fn describe(
    c: &mut RawClient,
    v: i16,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> (i16, Option<Vec<Described>>) {
    let request = DescribeClientQuotasRequest::default()
        .with_components(
            components
                .iter()
                .map(|(t, m, name)| {
                    ComponentData::default()
                        .with_entity_type(s(t))
                        .with_match_type(*m)
                        .with_match(name.map(s))
                })
                .collect(),
        )
        .with_strict(strict);
    let r = call!(c, DescribeClientQuotas, v, request);
    let entries = r.entries.map(|entries| {
        let mut out: Vec<Described> = entries
            .iter()
            .map(|e| {
                let mut entity: Vec<_> = e
                    .entity
                    .iter()
                    .map(|p| {
                        let name = p.entity_name.as_ref().map(|n| n.to_string());
                        (p.entity_type.to_string(), name)
                    })
                    .collect();
                entity.sort();
                let values = e.values.iter().map(|x| (x.key.to_string(), x.value));
                (entity, values.collect())
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    });
    (r.error_code, entries)
}

fn described(entity: Entity, values: &[(&str, f64)]) -> Described {
    let mut parts: Vec<_> = entity
        .iter()
        .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
        .collect();
    parts.sort();
    let values = values.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    (parts, values)
}

const EXACT: i8 = 0;
const DEFAULT: i8 = 1;
const ANY: i8 = 2;

/// The raw client's client id (`support::RawClient`).
const RAW_CLIENT: Entity = &[("client-id", Some("raw-test"))];

fn produce(c: &mut RawClient, topic: &str, bytes: usize) -> ProduceResponse {
    let value = vec![b'q'; bytes];
    let records = batch(&[record(None, &value, 1)], Compression::None);
    let partition = PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(records));
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![partition])]);
    call!(c, Produce, 9, request)
}
