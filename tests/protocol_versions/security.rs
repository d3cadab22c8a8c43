//! SASL on a PLAINTEXT listener, the SCRAM credential APIs and the ACL APIs at each version.

use crate::support;

use bytes::Bytes;
use kafka_protocol::messages::*;
use support::configs::s;
use support::{call, RawClient};

/// On a PLAINTEXT listener Kafka's KafkaApis answers the SASL requests with
/// ILLEGAL_SASL_STATE (34) and keeps the connection (tests/sasl/: SASL listeners).
pub(super) fn sasl_handshake(c: &mut RawClient, v: i16) {
    let request = SaslHandshakeRequest::default().with_mechanism(s("SCRAM-SHA-256"));
    let r = call!(c, SaslHandshake, v, request);
    assert_eq!(r.error_code, 34, "{r:?}");
}

pub(super) fn sasl_authenticate(c: &mut RawClient, v: i16) {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"x"));
    let r = call!(c, SaslAuthenticate, v, request);
    assert_eq!(r.error_code, 34, "{r:?}");
    assert_eq!(
        r.error_message.as_deref(),
        Some("SaslAuthenticate request received after successful authentication")
    );
}

/// Upserts a SCRAM-SHA-512 credential for `user-v{v}`; DescribeUserScramCredentials reads it back.
pub(super) fn alter_user_scram_credentials(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    let user = format!("user-v{v}");
    let upsertion = ScramCredentialUpsertion::default()
        .with_name(s(&user))
        .with_mechanism(2)
        .with_iterations(4096)
        .with_salt(Bytes::from_static(b"salt"))
        .with_salted_password(Bytes::from(vec![7; 64]));
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]);
    let r = call!(c, AlterUserScramCredentials, v, request);
    let results: Vec<_> = r
        .results
        .iter()
        .map(|x| (x.user.as_str(), x.error_code))
        .collect();
    assert_eq!(results, [(user.as_str(), 0)], "{r:?}");
    let described = described(c, &user);
    assert_eq!(described, Ok(vec![(2, 4096)]));
}

pub(super) fn describe_user_scram_credentials(c: &mut RawClient, v: i16) {
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
    // A user of its own, whichever API the table lists first.
    let user = format!("described-v{v}");
    let upsertion = ScramCredentialUpsertion::default()
        .with_name(s(&user))
        .with_mechanism(1)
        .with_iterations(4096)
        .with_salt(Bytes::from_static(b"salt"))
        .with_salted_password(Bytes::from(vec![7; 32]));
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]);
    let r = call!(c, AlterUserScramCredentials, 0, request);
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    let users = [user.as_str(), "nobody"].map(|u| UserName::default().with_name(s(u)));
    let request = DescribeUserScramCredentialsRequest::default().with_users(Some(users.to_vec()));
    let r = call!(c, DescribeUserScramCredentials, v, request);
    let results: Vec<_> = r
        .results
        .iter()
        .map(|x| (x.user.as_str(), x.error_code, x.credential_infos.len()))
        .collect();
    // RESOURCE_NOT_FOUND (91) for a user without credentials.
    assert_eq!(results, [(user.as_str(), 0, 1), ("nobody", 91, 0)], "{r:?}");
}

/// The binding each ACL version test makes: READ on topics prefixed `acl-v<v>-`.
fn acl_creation(v: i16) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation::default()
        .with_resource_type(2)
        .with_resource_name(s(&format!("acl-v{v}-")))
        .with_resource_pattern_type(4)
        .with_principal(s("User:alice"))
        .with_host(s("*"))
        .with_operation(3)
        .with_permission_type(3)
}

/// Kafka's filter for the topic `acl-v<v>-x`: every pattern that applies to it.
fn acls_of(v: i16) -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(Some(s(&format!("acl-v{v}-x"))))
        .with_pattern_type_filter(2)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1)
}

pub(super) fn create_acls(c: &mut RawClient, v: i16) {
    let bad = acl_creation(v).with_principal(s("alice"));
    let request = CreateAclsRequest::default().with_creations(vec![acl_creation(v), bad]);
    let r = call!(c, CreateAcls, v, request);
    let codes: Vec<i16> = r.results.iter().map(|x| x.error_code).collect();
    // The unparsable principal: INVALID_REQUEST (42), the other one stored.
    assert_eq!(codes, [0, 42], "{r:?}");
    assert_eq!(
        r.results[0].error_message, None,
        "success carries no message"
    );
    let found = call!(c, DescribeAcls, 1, acls_of(v)).resources;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].resource_name.as_str(), format!("acl-v{v}-"));
}

pub(super) fn describe_acls(c: &mut RawClient, v: i16) {
    let request = CreateAclsRequest::default().with_creations(vec![acl_creation(v + 10)]);
    assert_eq!(call!(c, CreateAcls, 1, request).results[0].error_code, 0);
    let r = call!(c, DescribeAcls, v, acls_of(v + 10));
    assert_eq!(r.error_code, 0, "{r:?}");
    let found: Vec<_> = r
        .resources
        .iter()
        .flat_map(|res| res.acls.iter().map(move |a| (res, a)))
        .map(|(res, a)| {
            let resource = (
                res.resource_type,
                res.resource_name.to_string(),
                res.pattern_type,
            );
            (
                resource,
                a.principal.to_string(),
                a.host.to_string(),
                a.operation,
                a.permission_type,
            )
        })
        .collect();
    let want = (
        (2, format!("acl-v{}-", v + 10), 4),
        "User:alice".into(),
        "*".into(),
        3,
        3,
    );
    assert_eq!(found, [want]);
    // An unknown pattern type in the filter: INVALID_REQUEST.
    let r = call!(c, DescribeAcls, v, acls_of(v).with_pattern_type_filter(9));
    assert_eq!(r.error_code, 42, "{r:?}");
}

pub(super) fn delete_acls(c: &mut RawClient, v: i16) {
    let request = CreateAclsRequest::default().with_creations(vec![acl_creation(v + 20)]);
    assert_eq!(call!(c, CreateAcls, 1, request).results[0].error_code, 0);
    let filter = delete_acls_request::DeleteAclsFilter::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(Some(s(&format!("acl-v{}-", v + 20))))
        .with_pattern_type_filter(4)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    let request = DeleteAclsRequest::default().with_filters(vec![filter.clone(), filter]);
    let r = call!(c, DeleteAcls, v, request);
    let matched: Vec<usize> = r
        .filter_results
        .iter()
        .map(|f| f.matching_acls.len())
        .collect();
    // Both filters match the binding; it is deleted once.
    assert_eq!(matched, [1, 1], "{r:?}");
    assert!(call!(c, DescribeAcls, 1, acls_of(v + 20))
        .resources
        .is_empty());
}

/// A user's SCRAM credentials as (mechanism, iterations), or the error code.
fn described(c: &mut RawClient, user: &str) -> Result<Vec<(i8, i32)>, i16> {
    use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
    let request = DescribeUserScramCredentialsRequest::default()
        .with_users(Some(vec![UserName::default().with_name(s(user))]));
    let r = call!(c, DescribeUserScramCredentials, 0, request);
    let result = &r.results[0];
    if result.error_code != 0 {
        return Err(result.error_code);
    }
    Ok(result
        .credential_infos
        .iter()
        .map(|i| (i.mechanism, i.iterations))
        .collect())
}
