//! The quota-store actor: re-reads the stored quotas every `refresh` (so other
//! gateways' changes apply here too) and when asked after a change, and publishes the
//! [`QuotaTable`] in force through a `watch` channel.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::watch;

use super::{ClientQuotas, QuotaTable};
use crate::backend::{Backend, BackendError};

/// Re-read the stored quotas now and publish them; answers once published.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reread;

pub struct QuotaStore {
    backend: Arc<dyn Backend>,
    published: watch::Sender<Arc<QuotaTable>>,
    refresh: Duration,
}

impl QuotaStore {
    /// Reads the stored quotas and starts the store.
    pub async fn start_with(
        backend: Arc<dyn Backend>,
        refresh: Duration,
    ) -> Result<(Addr<QuotaStore>, watch::Receiver<Arc<QuotaTable>>), BackendError> {
        let stored = backend.client_quotas().await?;
        let (published, rx) = watch::channel(Arc::new(QuotaTable::new(&stored)));
        let store = QuotaStore {
            backend,
            published,
            refresh,
        };
        Ok((store.start(), rx))
    }

    fn publish(&self, stored: &ClientQuotas) {
        let next = QuotaTable::new(stored);
        self.published.send_if_modified(|current| {
            let changed = **current != next;
            if changed {
                tracing::info!(byte_rate_quotas = next.len(), "client quotas in force");
                *current = Arc::new(next);
            }
            changed
        });
    }

    /// Re-reads the stored quotas and publishes them.
    fn reread(&self) -> impl ActorFuture<Self, Output = ()> + 'static {
        let backend = self.backend.clone();
        async move { backend.client_quotas().await }
            .into_actor(self)
            .map(|stored, act, _| match stored {
                Ok(stored) => act.publish(&stored),
                Err(e) => tracing::warn!(error = %e, "cannot re-read client quotas"),
            })
    }
}

impl Actor for QuotaStore {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // `wait`: one re-read at a time.
        ctx.run_interval(self.refresh, |act, ctx| {
            ctx.wait(act.reread());
        });
    }
}

impl Handler<Reread> for QuotaStore {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: Reread, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(Box::pin(self.reread()))
    }
}
