//! AlterUserScramCredentials and DescribeUserScramCredentials, with the checks and
//! answers of Kafka's `ScramControlManager` and `ScramImage`. Credentials live in the
//! backend, shared by every gateway on it; passwords arrive salted (the client salts
//! them) and only the stored and server keys are kept.

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;
use crate::sasl::scram;
use crate::store::{ScramCredential, ScramMechanism};

type Refusal = (ResponseError, String);

/// DESCRIBE on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED otherwise).
pub async fn describe(
    gw: Gateway,
    request: DescribeUserScramCredentialsRequest,
    access: Access,
) -> DescribeUserScramCredentialsResponse {
    if !access.cluster(Operation::Describe) {
        return DescribeUserScramCredentialsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(StrBytes::from_static_str(
                "DESCRIBE on the cluster is not allowed",
            )));
    }
    let stored = match gw.sasl.credentials().await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read SCRAM credentials");
            return DescribeUserScramCredentialsResponse::default()
                .with_error_code(e.code().code())
                .with_error_message(Some(StrBytes::from_string(e.to_string())));
        }
    };
    let asked: Vec<String> = match request.users {
        Some(users) if !users.is_empty() => users.iter().map(|u| u.name.to_string()).collect(),
        _ => stored.keys().cloned().collect(),
    };
    let mut seen = HashSet::new();
    let repeated: HashSet<&String> = asked.iter().filter(|u| !seen.insert(*u)).collect();
    let mut answered = HashSet::new();
    let results = asked
        .iter()
        .filter(|u| answered.insert(*u))
        .map(|user| {
            let result = DescribeUserScramCredentialsResult::default()
                .with_user(StrBytes::from_string(user.clone()));
            let refuse = |error: ResponseError, message: &str| {
                result
                    .clone()
                    .with_error_code(error.code())
                    .with_error_message(Some(StrBytes::from_string(format!("{message}: {user}"))))
            };
            if repeated.contains(user) {
                return refuse(
                    ResponseError::DuplicateResource,
                    "Cannot describe SCRAM credentials for the same user twice in a single request",
                );
            }
            match stored.get(user).filter(|c| !c.is_empty()) {
                Some(credentials) => result.with_credential_infos(
                    credentials
                        .iter()
                        .map(|(m, c)| {
                            CredentialInfo::default()
                                .with_mechanism(m.kafka_type())
                                .with_iterations(c.iterations as i32)
                        })
                        .collect(),
                ),
                None => refuse(
                    ResponseError::ResourceNotFound,
                    "Attempt to describe a user credential that does not exist",
                ),
            }
        })
        .collect();
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

/// One accepted change: a deletion (`None`) or a credential to store.
struct Change {
    user: String,
    mechanism: ScramMechanism,
    credential: Option<ScramCredential>,
}

/// ALTER on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED for every user otherwise).
pub async fn alter(
    gw: Gateway,
    request: AlterUserScramCredentialsRequest,
    access: Access,
) -> AlterUserScramCredentialsResponse {
    let stored = if access.cluster(Operation::Alter) {
        gw.sasl.credentials().await.map_err(|e| {
            tracing::warn!(error = %e, "cannot read SCRAM credentials");
            (e.code(), e.to_string())
        })
    } else {
        let denied = "ALTER on the cluster is not allowed".to_string();
        Err((ResponseError::ClusterAuthorizationFailed, denied))
    };
    let stored = match stored {
        Ok(s) => s,
        Err(error) => {
            let mut users: Vec<&StrBytes> = request.deletions.iter().map(|d| &d.name).collect();
            users.extend(request.upsertions.iter().map(|u| &u.name));
            users.dedup();
            let results = users.into_iter().map(|u| result(u.as_str(), Some(&error)));
            return AlterUserScramCredentialsResponse::default().with_results(results.collect());
        }
    };
    // A user may be altered once per request; Kafka refuses the user otherwise.
    let mut changes: BTreeMap<String, Change> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut refused: BTreeMap<String, Refusal> = BTreeMap::new();
    let mut consider = |user: &str, checked: Result<Change, Refusal>| {
        if refused.contains_key(user) {
            return;
        }
        if changes.remove(user).is_some() {
            order.retain(|u| u != user);
            let twice = "A user credential cannot be altered twice in the same request";
            refused.insert(
                user.to_string(),
                (ResponseError::DuplicateResource, twice.into()),
            );
            return;
        }
        match checked {
            Ok(change) => {
                order.push(user.to_string());
                changes.insert(user.to_string(), change);
            }
            Err(refusal) => {
                refused.insert(user.to_string(), refusal);
            }
        }
    };
    for d in &request.deletions {
        let user = d.name.as_str();
        let checked = check_name(user, d.mechanism).and_then(|mechanism| {
            if !stored.get(user).is_some_and(|c| c.contains_key(&mechanism)) {
                return Err((
                    ResponseError::ResourceNotFound,
                    "Attempt to delete a user credential that does not exist".into(),
                ));
            }
            Ok(Change {
                user: user.to_string(),
                mechanism,
                credential: None,
            })
        });
        consider(user, checked);
    }
    for u in &request.upsertions {
        let user = u.name.as_str();
        let checked = check_name(user, u.mechanism).and_then(|mechanism| {
            let iterations = u32::try_from(u.iterations).unwrap_or(0);
            if iterations < scram::MIN_ITERATIONS {
                return Err((
                    ResponseError::UnacceptableCredential,
                    "Too few iterations".into(),
                ));
            }
            if iterations > scram::MAX_ITERATIONS {
                return Err((
                    ResponseError::UnacceptableCredential,
                    "Too many iterations".into(),
                ));
            }
            let credential = scram::credential_from_salted(
                mechanism,
                u.salt.to_vec(),
                iterations,
                &u.salted_password,
            );
            Ok(Change {
                user: user.to_string(),
                mechanism,
                credential: Some(credential),
            })
        });
        consider(user, checked);
    }
    let mut results = Vec::new();
    for user in order {
        let change = changes
            .remove(&user)
            .expect("every ordered user has a change");
        let stored = gw
            .sasl
            .set_credential(&change.user, change.mechanism, change.credential)
            .await;
        let error = stored.err().map(|e| {
            tracing::warn!(%user, error = %e, "cannot store a SCRAM credential");
            (e.code(), e.to_string())
        });
        if error.is_none() {
            tracing::info!(%user, mechanism = change.mechanism.name(), "SCRAM credential altered");
        }
        results.push(result(&user, error.as_ref()));
    }
    results.extend(refused.iter().map(|(user, r)| result(user, Some(r))));
    AlterUserScramCredentialsResponse::default().with_results(results)
}

fn check_name(user: &str, mechanism: i8) -> Result<ScramMechanism, Refusal> {
    if user.is_empty() {
        return Err((
            ResponseError::UnacceptableCredential,
            "Username must not be empty".into(),
        ));
    }
    ScramMechanism::from_kafka_type(mechanism).ok_or((
        ResponseError::UnsupportedSaslMechanism,
        "Unknown SCRAM mechanism".into(),
    ))
}

fn result(user: &str, error: Option<&Refusal>) -> AlterUserScramCredentialsResult {
    AlterUserScramCredentialsResult::default()
        .with_user(StrBytes::from_string(user.to_string()))
        .with_error_code(error.map_or(0, |(e, _)| e.code()))
        .with_error_message(error.map(|(_, m)| StrBytes::from_string(m.clone())))
}
