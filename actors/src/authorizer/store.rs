//! The ACL-store actor: the only writer of ACL bindings. It changes them one request
//! at a time in the backend (every gateway on it shares them), re-reads them every
//! `refresh` so other gateways' changes apply here too, and publishes the
//! [`AclTable`] in force through a `watch` channel after every change and re-read.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::watch;

use super::{AclBinding, AclFilter, AclTable};
use crate::backend::{Backend, BackendError};

/// Store these bindings (ones already stored stay stored once).
#[derive(Message)]
#[rtype(result = "Result<(), BackendError>")]
pub struct CreateAcls(pub Vec<AclBinding>);

/// Remove every binding each filter matches; the answer lists them, filter by filter.
#[derive(Message)]
#[rtype(result = "Result<Vec<Vec<AclBinding>>, BackendError>")]
pub struct DeleteAcls(pub Vec<AclFilter>);

/// The bindings a filter matches, as stored now (re-read first, so a change made
/// through another gateway a moment ago is listed).
#[derive(Message)]
#[rtype(result = "Result<Vec<AclBinding>, BackendError>")]
pub struct DescribeAcls(pub AclFilter);

pub struct AclStore {
    backend: Arc<dyn Backend>,
    published: watch::Sender<Arc<AclTable>>,
    refresh: Duration,
}

impl AclStore {
    /// Reads the stored bindings and starts the store.
    pub async fn start_with(
        backend: Arc<dyn Backend>,
        refresh: Duration,
    ) -> Result<(Addr<AclStore>, watch::Receiver<Arc<AclTable>>), BackendError> {
        let stored = backend.acls().await?;
        let (published, rx) = watch::channel(Arc::new(AclTable::new(stored)));
        let store = AclStore {
            backend,
            published,
            refresh,
        };
        Ok((store.start(), rx))
    }

    fn publish(&self, bindings: Vec<AclBinding>) {
        let next = AclTable::new(bindings);
        self.published.send_if_modified(|current| {
            let changed = **current != next;
            if changed {
                tracing::info!(acls = next.all().count(), "ACLs in force");
                *current = Arc::new(next);
            }
            changed
        });
    }

    /// Re-reads the stored bindings; `wait` keeps changes out meanwhile.
    fn reread(&mut self, ctx: &mut Context<Self>) {
        let backend = self.backend.clone();
        ctx.wait(
            async move { backend.acls().await }.into_actor(self).map(
                |stored, act, _| match stored {
                    Ok(stored) => act.publish(stored),
                    Err(e) => tracing::warn!(error = %e, "cannot re-read ACLs"),
                },
            ),
        );
    }
}

impl Actor for AclStore {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.refresh, |act, ctx| act.reread(ctx));
    }
}

/// Runs `change` against the latest stored bindings, then publishes what is stored after it.
fn changing<T: 'static>(
    store: &AclStore,
    change: impl std::future::Future<Output = Result<T, BackendError>> + 'static,
) -> AtomicResponse<AclStore, Result<T, BackendError>> {
    let backend = store.backend.clone();
    let done = async move {
        let out = change.await?;
        let stored = backend.acls().await?;
        Ok((out, stored))
    };
    AtomicResponse::new(Box::pin(done.into_actor(store).map(
        |done: Result<(T, Vec<AclBinding>), BackendError>, act, _| {
            let (out, stored) = done?;
            act.publish(stored);
            Ok(out)
        },
    )))
}

impl Handler<CreateAcls> for AclStore {
    type Result = AtomicResponse<Self, Result<(), BackendError>>;

    fn handle(&mut self, msg: CreateAcls, _: &mut Self::Context) -> Self::Result {
        let backend = self.backend.clone();
        for b in &msg.0 {
            tracing::info!(acl = %b, "creating ACL");
        }
        changing(self, async move { backend.create_acls(msg.0).await })
    }
}

impl Handler<DeleteAcls> for AclStore {
    type Result = AtomicResponse<Self, Result<Vec<Vec<AclBinding>>, BackendError>>;

    fn handle(&mut self, msg: DeleteAcls, _: &mut Self::Context) -> Self::Result {
        let backend = self.backend.clone();
        changing(self, async move {
            // The latest stored bindings: another gateway may have changed them.
            let stored = backend.acls().await?;
            let matched: Vec<Vec<AclBinding>> = msg
                .0
                .iter()
                .map(|f| stored.iter().filter(|b| f.matches(b)).cloned().collect())
                .collect();
            let mut gone: Vec<AclBinding> = matched.iter().flatten().cloned().collect();
            gone.sort();
            gone.dedup();
            if !gone.is_empty() {
                for b in &gone {
                    tracing::info!(acl = %b, "deleting ACL");
                }
                backend.delete_acls(gone).await?;
            }
            Ok(matched)
        })
    }
}

impl Handler<DescribeAcls> for AclStore {
    type Result = AtomicResponse<Self, Result<Vec<AclBinding>, BackendError>>;

    fn handle(&mut self, msg: DescribeAcls, _: &mut Self::Context) -> Self::Result {
        let backend = self.backend.clone();
        AtomicResponse::new(Box::pin(
            async move { backend.acls().await }
                .into_actor(self)
                .map(move |stored, act, _| {
                    let stored = stored?;
                    let matched = stored
                        .iter()
                        .filter(|b| msg.0.matches(b))
                        .cloned()
                        .collect();
                    act.publish(stored);
                    Ok(matched)
                }),
        ))
    }
}
