//! Groups: the one way handlers reach consumer groups and the gateways that
//! coordinate them. Membership requests go to the group coordinator actor; which
//! gateway coordinates a group comes from the live gateways as the membership actor
//! last published them.

use std::sync::Arc;

use actix::dev::{Request, ToEnvelope};
use actix::{Actor, Addr, Handler, Message};
use tokio::sync::watch;

use crate::group_coordinator::GroupCoordinator;
use crate::membership::{Cluster, Leave, Membership};

#[derive(Clone)]
pub struct Groups {
    coordinator: Addr<GroupCoordinator>,
    membership: Addr<Membership>,
    cluster: watch::Receiver<Arc<Cluster>>,
}

impl Groups {
    pub fn new(
        coordinator: Addr<GroupCoordinator>,
        (membership, cluster): (Addr<Membership>, watch::Receiver<Arc<Cluster>>),
    ) -> Self {
        Groups {
            coordinator,
            membership,
            cluster,
        }
    }

    /// A request to the group coordinator, sent now.
    pub fn ask<M>(&self, request: M) -> Request<GroupCoordinator, M>
    where
        M: Message + Send + 'static,
        M::Result: Send,
        GroupCoordinator: Handler<M>,
        <GroupCoordinator as Actor>::Context: ToEnvelope<GroupCoordinator, M>,
    {
        self.coordinator.send(request)
    }

    /// The live gateways as of now.
    pub fn cluster(&self) -> Arc<Cluster> {
        self.cluster.borrow().clone()
    }

    /// The live gateways as the membership actor publishes them.
    pub fn watch_cluster(&self) -> watch::Receiver<Arc<Cluster>> {
        self.cluster.clone()
    }

    /// This gateway leaves the cluster: the others take over its groups.
    pub async fn leave(&self) {
        let _ = self.membership.send(Leave).await;
    }
}
