//! CreateAcls, DescribeAcls, DeleteAcls: the ACL store actor changes and lists the
//! bindings. Without an authorizer Kafka answers SECURITY_DISABLED (54); with one,
//! creating and deleting need ALTER on the cluster, describing DESCRIBE.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_acls_request::CreateAclsRequest;
use kafka_protocol::messages::create_acls_response::{AclCreationResult, CreateAclsResponse};
use kafka_protocol::messages::delete_acls_request::DeleteAclsRequest;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl, DeleteAclsResponse,
};
use kafka_protocol::messages::describe_acls_request::DescribeAclsRequest;
use kafka_protocol::messages::describe_acls_response::{
    AclDescription, DescribeAclsResource, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::authorizer::store;
use crate::authorizer::{Access, AclBinding, AclFilter, Operation};
use crate::gateway::Gateway;

const NO_AUTHORIZER: &str = "No Authorizer is configured on the gateway (setting 'authorizer')";

fn s(v: impl Into<String>) -> StrBytes {
    StrBytes::from_string(v.into())
}

/// Why the request as a whole is refused: no authorizer, or the caller may not.
fn refusal(gw: &Gateway, access: &Access, operation: Operation) -> Option<(ResponseError, String)> {
    if gw.authorizer.is_none() {
        return Some((ResponseError::SecurityDisabled, NO_AUTHORIZER.into()));
    }
    (!access.cluster(operation)).then(|| {
        (
            ResponseError::ClusterAuthorizationFailed,
            format!("{operation:?} on the cluster is not allowed"),
        )
    })
}

pub async fn create(gw: Gateway, access: Access, req: CreateAclsRequest) -> CreateAclsResponse {
    let failed = |code: ResponseError, message: String| {
        AclCreationResult::default()
            .with_error_code(code.code())
            .with_error_message(Some(s(message)))
    };
    if let Some((code, message)) = refusal(&gw, &access, Operation::Alter) {
        let results = req
            .creations
            .iter()
            .map(|_| failed(code, message.clone()))
            .collect();
        return CreateAclsResponse::default().with_results(results);
    }
    let checked: Vec<Result<AclBinding, String>> = req
        .creations
        .iter()
        .map(|c| {
            AclBinding::new(
                (c.resource_type, &c.resource_name, c.resource_pattern_type),
                &c.principal,
                &c.host,
                c.operation,
                c.permission_type,
            )
            .map_err(|e| e.to_string())
        })
        .collect();
    let valid: Vec<AclBinding> = checked.iter().filter_map(|c| c.clone().ok()).collect();
    let stored = match (valid.is_empty(), &gw.authorizer) {
        (false, Some(a)) => store::create(&a.store, valid).await.map_err(|e| {
            tracing::warn!(error = %e, "ACLs not stored");
            (e.code(), e.to_string())
        }),
        _ => Ok(()),
    };
    let results = checked
        .into_iter()
        .map(|c| match (c, &stored) {
            (Err(message), _) => {
                tracing::info!(%message, "ACL refused");
                failed(ResponseError::InvalidRequest, message)
            }
            (Ok(_), Err((code, message))) => failed(*code, message.clone()),
            (Ok(_), Ok(())) => AclCreationResult::default().with_error_message(None),
        })
        .collect();
    CreateAclsResponse::default().with_results(results)
}

pub async fn describe(
    gw: Gateway,
    access: Access,
    req: DescribeAclsRequest,
) -> DescribeAclsResponse {
    let failed = |code: ResponseError, message: String| {
        DescribeAclsResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(s(message)))
    };
    if let Some((code, message)) = refusal(&gw, &access, Operation::Describe) {
        return failed(code, message);
    }
    let filter = match AclFilter::new(
        (
            req.resource_type_filter,
            req.resource_name_filter.as_deref(),
            req.pattern_type_filter,
        ),
        req.principal_filter.as_deref(),
        req.host_filter.as_deref(),
        req.operation,
        req.permission_type,
    ) {
        Ok(f) => f,
        Err(e) => return failed(ResponseError::InvalidRequest, e.to_string()),
    };
    let Some(authorizer) = &gw.authorizer else {
        return failed(ResponseError::SecurityDisabled, NO_AUTHORIZER.into());
    };
    let mut found = match store::describe(&authorizer.store, filter).await {
        Ok(found) => found,
        Err(e) => return failed(e.code(), e.to_string()),
    };
    // One resource per pattern, its ACLs together, as Kafka groups them.
    found.sort();
    let mut resources: Vec<DescribeAclsResource> = Vec::new();
    for b in found {
        let description = AclDescription::default()
            .with_principal(s(b.entry.principal))
            .with_host(s(b.entry.host))
            .with_operation(b.entry.operation.code())
            .with_permission_type(b.entry.permission.code());
        let p = &b.pattern;
        match resources.last_mut() {
            Some(r)
                if r.resource_type == p.resource_type.code()
                    && r.resource_name.as_str() == p.name
                    && r.pattern_type == p.pattern_type.code() =>
            {
                r.acls.push(description)
            }
            _ => resources.push(
                DescribeAclsResource::default()
                    .with_resource_type(p.resource_type.code())
                    .with_resource_name(s(p.name.clone()))
                    .with_pattern_type(p.pattern_type.code())
                    .with_acls(vec![description]),
            ),
        }
    }
    DescribeAclsResponse::default()
        .with_error_message(None)
        .with_resources(resources)
}

pub async fn delete(gw: Gateway, access: Access, req: DeleteAclsRequest) -> DeleteAclsResponse {
    let failed = |code: ResponseError, message: String| {
        DeleteAclsFilterResult::default()
            .with_error_code(code.code())
            .with_error_message(Some(s(message)))
    };
    let answer = |results| DeleteAclsResponse::default().with_filter_results(results);
    if let Some((code, message)) = refusal(&gw, &access, Operation::Alter) {
        return answer(
            req.filters
                .iter()
                .map(|_| failed(code, message.clone()))
                .collect(),
        );
    }
    let checked: Vec<Result<AclFilter, String>> = req
        .filters
        .iter()
        .map(|f| {
            AclFilter::new(
                (
                    f.resource_type_filter,
                    f.resource_name_filter.as_deref(),
                    f.pattern_type_filter,
                ),
                f.principal_filter.as_deref(),
                f.host_filter.as_deref(),
                f.operation,
                f.permission_type,
            )
            .map_err(|e| e.to_string())
        })
        .collect();
    let valid: Vec<AclFilter> = checked.iter().filter_map(|c| c.clone().ok()).collect();
    let deleted = match &gw.authorizer {
        Some(a) if !valid.is_empty() => store::delete(&a.store, valid).await.map_err(|e| {
            tracing::warn!(error = %e, "ACLs not deleted");
            (e.code(), e.to_string())
        }),
        _ => Ok(Vec::new()),
    };
    let mut matched = match &deleted {
        Ok(m) => m.clone().into_iter(),
        Err(_) => Vec::new().into_iter(),
    };
    let results = checked
        .into_iter()
        .map(|c| match (c, &deleted) {
            (Err(message), _) => failed(ResponseError::InvalidRequest, message),
            (Ok(_), Err((code, message))) => failed(*code, message.clone()),
            (Ok(_), Ok(_)) => DeleteAclsFilterResult::default()
                .with_error_message(None)
                .with_matching_acls(
                    matched
                        .next()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|b| {
                            DeleteAclsMatchingAcl::default()
                                .with_error_message(None)
                                .with_resource_type(b.pattern.resource_type.code())
                                .with_resource_name(s(b.pattern.name))
                                .with_pattern_type(b.pattern.pattern_type.code())
                                .with_principal(s(b.entry.principal))
                                .with_host(s(b.entry.host))
                                .with_operation(b.entry.operation.code())
                                .with_permission_type(b.entry.permission.code())
                        })
                        .collect(),
                ),
        })
        .collect();
    answer(results)
}
