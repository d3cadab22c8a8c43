//! The two checks every group API makes first: may the caller touch the group, and
//! does this gateway coordinate it.

use kafka_protocol::error::ResponseError;

use crate::authorizer::{Access, Operation};
use crate::gateway::Gateway;

/// GROUP_AUTHORIZATION_FAILED (30) unless the caller may do `operation` on `group`.
pub fn group_denied(access: &Access, operation: Operation, group: &str) -> Option<ResponseError> {
    (!access.group(operation, group)).then_some(ResponseError::GroupAuthorizationFailed)
}

/// NOT_COORDINATOR (16) unless this gateway coordinates `group` now; clients then
/// look the coordinator up again and move there.
pub fn not_coordinator(gw: &Gateway, group: &str) -> Option<ResponseError> {
    (!gw.groups.cluster().coordinates(group)).then_some(ResponseError::NotCoordinator)
}
