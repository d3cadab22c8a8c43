//! The coordinator actor's side of KIP-848 groups: heartbeats and describes reach the
//! group here, and each member's deadlines run as actor timers: its session (reset by
//! every heartbeat) and, while it holds partitions it was told to give up, its
//! rebalance timeout. A timer that fires for a member still silent (its token unchanged)
//! removes it, and the group moves on to a new epoch without it.

use std::time::Duration;

use actix::prelude::*;
use kafka_protocol::error::ResponseError;
use tokio::sync::oneshot;

use super::super::{after_load, GroupCoordinator, Ready};
use super::{
    Beat, ConsumerGroup, ConsumerGroupError, ConsumerGroupView, ConsumerHeartbeat,
    DescribeConsumerGroups, StoredConsumerGroup,
};
use crate::store::StoreResult;

/// Which of a member's deadlines a timer is for.
#[derive(Clone, Copy, Debug)]
enum Deadline {
    Session,
    Revocation,
}

impl GroupCoordinator {
    /// A group id taken by a classic group: an empty one becomes a consumer group
    /// (online migration, KIP-848); one with members is refused.
    fn take_from_classic(
        &mut self,
        name: &str,
        ctx: &mut Context<Self>,
    ) -> Result<(), ConsumerGroupError> {
        let Some(classic) = self.groups.get(name) else {
            return Ok(());
        };
        if !classic.members.is_empty() || !classic.pending.is_empty() {
            return Err(ConsumerGroupError::NotConsumerGroup(name.to_string()));
        }
        tracing::info!(group = %name, "empty classic group becomes a consumer group");
        self.groups.remove(name);
        self.absent.insert(name.to_string());
        drop(self.persist(name, None, ctx));
        Ok(())
    }

    /// Takes in a group loaded from the store: each member's deadlines start now, as a
    /// loaded group's do in Kafka.
    pub(in super::super) fn loaded(
        &mut self,
        name: &str,
        group: ConsumerGroup,
        ctx: &mut Context<Self>,
    ) {
        let members: Vec<String> = group.members.keys().cloned().collect();
        tracing::info!(group = %name, epoch = group.epoch, members = members.len(), "consumer group loaded from the store");
        self.consumer.insert(name.to_string(), group);
        for member in members {
            self.arm(name, &member, ctx);
        }
    }

    /// Queues a write of group `name`'s state if it changed since the last one; the
    /// answer says when it stands.
    pub(in super::super) fn store_consumer(
        &mut self,
        name: &str,
        ctx: &mut Context<Self>,
    ) -> Option<oneshot::Receiver<StoreResult<()>>> {
        let g = self.consumer.get_mut(name).filter(|g| g.unstored)?;
        g.unstored = false;
        let value = StoredConsumerGroup::of(g).encode();
        Some(self.persist(name, Some(value), ctx))
    }

    /// Arms `member`'s session timer again, and its revocation timer while it holds
    /// partitions it was told to give up.
    fn arm(&mut self, group: &str, member: &str, ctx: &mut Context<Self>) {
        let session = self.consumer_settings.session_timeout;
        let Some(m) = self
            .consumer
            .get_mut(group)
            .and_then(|g| g.members.get_mut(member))
        else {
            return;
        };
        self.timer_tokens += 1;
        let token = self.timer_tokens;
        if let Some((_, old)) = m.session.take() {
            ctx.cancel_future(old);
        }
        let timer = |deadline: Deadline, after: Duration, ctx: &mut Context<Self>| {
            let (group, member) = (group.to_string(), member.to_string());
            ctx.run_later(after, move |act, ctx| {
                act.expire(&group, &member, (deadline, token), ctx)
            })
        };
        m.session = Some((token, timer(Deadline::Session, session, ctx)));
        match (m.state.revoking.is_empty(), m.revocation.is_some()) {
            (false, false) => {
                let after = Duration::from_millis(m.rebalance_timeout_ms.max(0) as u64);
                m.revocation = Some((token, timer(Deadline::Revocation, after, ctx)));
            }
            (true, true) => {
                let (_, old) = m.revocation.take().expect("checked");
                ctx.cancel_future(old);
            }
            _ => {}
        }
    }

    /// A member's deadline passed: it is removed unless the timer is stale.
    fn expire(
        &mut self,
        group: &str,
        member: &str,
        (deadline, token): (Deadline, u64),
        ctx: &mut Context<Self>,
    ) {
        let Some(g) = self.consumer.get_mut(group) else {
            return;
        };
        let Some(m) = g.members.get_mut(member) else {
            return;
        };
        let armed = match deadline {
            Deadline::Session => &m.session,
            Deadline::Revocation => &m.revocation,
        };
        if armed.is_none_or(|(t, _)| t != token) {
            return;
        }
        // The other deadline's timer goes with the member.
        for (_, handle) in [m.session.take(), m.revocation.take()]
            .into_iter()
            .flatten()
        {
            ctx.cancel_future(handle);
        }
        tracing::info!(group = %group, member = %member, ?deadline, "consumer group member removed: deadline passed");
        g.remove(member);
        drop(self.store_consumer(group, ctx));
    }
}

impl Handler<ConsumerHeartbeat> for GroupCoordinator {
    type Result = ResponseFuture<Result<Beat, ConsumerGroupError>>;

    fn handle(&mut self, msg: ConsumerHeartbeat, ctx: &mut Self::Context) -> Self::Result {
        let answer =
            |r: Result<Beat, ConsumerGroupError>| -> Self::Result { Box::pin(async move { r }) };
        match self.ready(std::slice::from_ref(&msg.beat.group), ctx) {
            Ready::Now => {}
            Ready::NotMine => {
                return answer(Err(ConsumerGroupError::Coordinator(
                    ResponseError::NotCoordinator,
                )))
            }
            Ready::Loading(loading) => {
                return after_load(loading, ctx.address(), msg, |e| {
                    Err(ConsumerGroupError::Coordinator(e))
                })
            }
        }
        let name = msg.beat.group.clone();
        if let Err(e) = self.take_from_classic(&name, ctx) {
            return answer(Err(e));
        }
        let group = self.consumer.entry(name.clone()).or_default();
        let beat = group.heartbeat(msg.beat, &msg.table, &self.consumer_settings);
        if let Ok(b) = &beat {
            self.arm(&name, &b.member_id, ctx);
        }
        // What the answer tells the member stands in the store first.
        let Some(stored) = self.store_consumer(&name, ctx) else {
            return answer(beat);
        };
        Box::pin(async move {
            match stored.await {
                Ok(Ok(())) => beat,
                Ok(Err(e)) => Err(ConsumerGroupError::Coordinator(e.code())),
                Err(_) => Err(ConsumerGroupError::Coordinator(
                    ResponseError::CoordinatorNotAvailable,
                )),
            }
        })
    }
}

impl Handler<DescribeConsumerGroups> for GroupCoordinator {
    type Result = ResponseFuture<Vec<Result<ConsumerGroupView, ConsumerGroupError>>>;

    fn handle(&mut self, msg: DescribeConsumerGroups, ctx: &mut Self::Context) -> Self::Result {
        self.follow_cluster();
        let cluster = self.cluster.borrow().clone();
        let mine: Vec<String> = (msg.0.iter())
            .filter(|n| cluster.coordinates(n))
            .cloned()
            .collect();
        if let Ready::Loading(loading) = self.ready(&mine, ctx) {
            let n = msg.0.len();
            return after_load(loading, ctx.address(), msg, move |e| {
                (0..n)
                    .map(|_| Err(ConsumerGroupError::Coordinator(e)))
                    .collect()
            });
        }
        let views = (msg.0.iter())
            .map(|name| {
                if !cluster.coordinates(name) {
                    return Err(ConsumerGroupError::Coordinator(
                        ResponseError::NotCoordinator,
                    ));
                }
                match (self.consumer.get(name), self.groups.contains_key(name)) {
                    (Some(g), _) => Ok(g.view()),
                    (None, true) => Err(ConsumerGroupError::NotConsumerGroup(name.clone())),
                    (None, false) => Err(ConsumerGroupError::UnknownGroup(name.clone())),
                }
            })
            .collect();
        Box::pin(async move { views })
    }
}
