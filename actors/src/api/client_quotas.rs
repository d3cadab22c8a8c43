//! DescribeClientQuotas and AlterClientQuotas, with the checks and answers of Kafka's
//! `ClientQuotaControlManager` (KIP-546). Quotas live in the backend, shared by every
//! gateway on it; describing needs DESCRIBE_CONFIGS on the cluster, altering
//! ALTER_CONFIGS (CLUSTER_AUTHORIZATION_FAILED otherwise).

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_client_quotas_request::EntryData as AlterEntry;
use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlteredEntity, EntryData as AlterResult,
};
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;
use crate::quotas::store;
use crate::quotas::{ClientQuotas, FilterError, QuotaChange, QuotaEntity, QuotaFilter, QuotaKey};

type Refusal = (ResponseError, String);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

pub async fn describe(
    gw: Gateway,
    access: Access,
    req: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let failed = |(code, message): Refusal| {
        DescribeClientQuotasResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(StrBytes::from_string(message)))
            .with_entries(None)
    };
    if !access.cluster(Operation::DescribeConfigs) {
        return failed((
            ResponseError::ClusterAuthorizationFailed,
            "DESCRIBE_CONFIGS on the cluster is not allowed".into(),
        ));
    }
    let filter = QuotaFilter::new(
        req.components
            .iter()
            .map(|c| (c.entity_type.as_str(), c.match_type, c._match.as_deref())),
        req.strict,
    );
    let filter = match filter {
        Ok(f) => f,
        Err(FilterError::Invalid(m)) => return failed((ResponseError::InvalidRequest, m)),
        Err(FilterError::Unsupported(m)) => return failed((ResponseError::UnsupportedVersion, m)),
    };
    let stored = match store::stored(&gw.quotas.store).await {
        Ok(q) => q,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read client quotas");
            return failed((e.code(), e.to_string()));
        }
    };
    let entries = stored
        .iter()
        .filter(|(entity, _)| filter.matches(entity))
        .map(|(entity, values)| {
            EntryData::default()
                .with_entity(
                    entity
                        .parts()
                        .iter()
                        .map(|(t, name)| {
                            EntityData::default()
                                .with_entity_type(s(t.name()))
                                .with_entity_name(name.as_deref().map(s))
                        })
                        .collect(),
                )
                .with_values(
                    values
                        .iter()
                        .map(|(k, v)| ValueData::default().with_key(s(k)).with_value(*v))
                        .collect(),
                )
        })
        .collect();
    DescribeClientQuotasResponse::default()
        .with_error_message(None)
        .with_entries(Some(entries))
}

/// The changes one entry asks for, checked against what is stored: only values that
/// change are written, as Kafka records them.
fn check(entry: &AlterEntry, stored: &ClientQuotas) -> Result<Vec<QuotaChange>, String> {
    let entity = QuotaEntity::parse(
        entry
            .entity
            .iter()
            .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref())),
    )?;
    let current = stored.get(&entity);
    let mut seen: BTreeMap<&str, ()> = BTreeMap::new();
    let mut changes = Vec::new();
    for op in &entry.ops {
        let key = op.key.as_str();
        if seen.insert(key, ()).is_some() {
            return Err(format!(
                "Duplicate quota key {key} not updating quota for this entity {entity}"
            ));
        }
        let now = current.and_then(|c| c.get(key)).copied();
        let value = if op.remove {
            None
        } else {
            QuotaKey::check(&entity, key, op.value)?;
            Some(op.value)
        };
        if now != value {
            changes.push(QuotaChange {
                entity: entity.clone(),
                key: key.to_string(),
                value,
            });
        }
    }
    Ok(changes)
}

pub async fn alter(
    gw: Gateway,
    access: Access,
    req: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let result = |entry: &AlterEntry, refusal: Option<&Refusal>| {
        AlterResult::default()
            .with_error_code(refusal.map_or(0, |(c, _)| c.code()))
            .with_error_message(refusal.map(|(_, m)| StrBytes::from_string(m.clone())))
            .with_entity(
                entry
                    .entity
                    .iter()
                    .map(|e| {
                        AlteredEntity::default()
                            .with_entity_type(e.entity_type.clone())
                            .with_entity_name(e.entity_name.clone())
                    })
                    .collect(),
            )
    };
    let answer = |results| AlterClientQuotasResponse::default().with_entries(results);
    let stored = if access.cluster(Operation::AlterConfigs) {
        store::stored(&gw.quotas.store).await.map_err(|e| {
            tracing::warn!(error = %e, "cannot read client quotas");
            (e.code(), e.to_string())
        })
    } else {
        let denied = "ALTER_CONFIGS on the cluster is not allowed".to_string();
        Err((ResponseError::ClusterAuthorizationFailed, denied))
    };
    let stored = match stored {
        Ok(s) => s,
        Err(refusal) => {
            return answer(
                req.entries
                    .iter()
                    .map(|e| result(e, Some(&refusal)))
                    .collect(),
            )
        }
    };
    // One outcome per entry; an entity named twice is refused both times.
    let checked: Vec<Result<Vec<QuotaChange>, Refusal>> = req
        .entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let same = |other: &AlterEntry| {
                let key = |e: &AlterEntry| {
                    let mut parts: Vec<(String, Option<String>)> = e
                        .entity
                        .iter()
                        .map(|p| {
                            (
                                p.entity_type.to_string(),
                                p.entity_name.as_deref().map(str::to_string),
                            )
                        })
                        .collect();
                    parts.sort();
                    parts
                };
                key(other) == key(entry)
            };
            if req
                .entries
                .iter()
                .enumerate()
                .any(|(j, other)| j != i && same(other))
            {
                return Err(format!(
                    "Ignoring duplicate entity {}",
                    describe_entity(entry)
                ));
            }
            check(entry, &stored)
        })
        .map(|c| c.map_err(|m| (ResponseError::InvalidRequest, m)))
        .collect();
    let changes: Vec<QuotaChange> = checked
        .iter()
        .filter_map(|c| c.as_ref().ok())
        .flatten()
        .cloned()
        .collect();
    let written = if req.validate_only || changes.is_empty() {
        Ok(())
    } else {
        for c in &changes {
            tracing::info!(entity = %c.entity, key = %c.key, value = ?c.value, "altering client quota");
        }
        match store::alter(&gw.quotas.store, changes).await {
            Ok(()) => Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, "client quotas not stored");
                Err((e.code(), e.to_string()))
            }
        }
    };
    let results = req
        .entries
        .iter()
        .zip(&checked)
        .map(|(entry, c)| match (c, &written) {
            (Err(refusal), _) | (Ok(_), Err(refusal)) => result(entry, Some(refusal)),
            (Ok(_), Ok(())) => result(entry, None),
        })
        .collect();
    answer(results)
}

/// An entity as the request names it, for messages about entities not parsed.
fn describe_entity(entry: &AlterEntry) -> String {
    let parts: Vec<String> = entry
        .entity
        .iter()
        .map(|e| {
            format!(
                "{}={}",
                e.entity_type,
                e.entity_name.as_deref().unwrap_or("<default>")
            )
        })
        .collect();
    format!("({})", parts.join(", "))
}
