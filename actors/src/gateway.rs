//! The capabilities a running gateway gives its handlers: partitions, offsets, topics,
//! groups, security (SASL, ACLs, quotas) and the shared parts beside them. Each hides
//! the actors, slots and tables behind it; handlers take what they use.

use std::sync::Arc;

use actix::{Actor, ArbiterHandle};

use crate::authorizer::store::Acls;
use crate::authorizer::{Access, Authorizer};
use crate::compactor::Compactor;
use crate::config_catalog::{ConfigCatalog, StartError};
use crate::fetch_sessions::FetchSessions;
use crate::group_coordinator::GroupCoordinator;
use crate::groups::Groups;
use crate::limits::ByteBudget;
use crate::membership::{allocate_node_id, Membership};
use crate::metrics::{MeteredLog, MeteredMeta, MeteredUsers, Metrics};
use crate::offsets::Offsets;
use crate::partitions::Partitions;
use crate::producer_ids::ProducerIds;
use crate::quotas::store::Quotas as QuotaRows;
use crate::quotas::Quotas;
use crate::sasl::credentials::Credentials;
use crate::sasl::Authenticator;
use crate::session::Caller;
use crate::settings::BrokerSettings;
use crate::store::shared::SharedTable;
use crate::store::{LogStore, Logs, Meta, MetaStore};
use crate::store::{Node, Users};
use crate::topic_admin::TopicAdmin;
use crate::topics::Topics;
use crate::transactions::Transactions;

/// Handles to the actors and shared parts of a running gateway. Cheap to clone.
#[derive(Clone)]
pub struct Gateway {
    pub settings: Arc<BrokerSettings>,
    /// The partition logs: appends through the log slots, reads, wake-ups.
    pub partitions: Partitions,
    pub producer_ids: Arc<ProducerIds>,
    /// Topics and configurations: their tables as last published, changes to their owners.
    pub topics: Topics,
    /// Committed offsets, through the offset slots.
    pub offsets: Offsets,
    /// Consumer groups and the live gateways that coordinate them.
    pub groups: Groups,
    pub metrics: Arc<Metrics>,
    /// Bytes of requests read and not yet answered, over all connections.
    pub queued_request_bytes: ByteBudget,
    /// SASL logins: credentials, verification bound, failed-login delays.
    pub sasl: Arc<Authenticator>,
    /// ACLs and who bypasses them; `None` without an authorizer.
    pub authorizer: Option<Authorizer>,
    /// Client quotas in force and the byte rates measured against them.
    pub quotas: Quotas,
    /// The transaction coordinator of the transactional ids this gateway coordinates.
    pub transactions: Transactions,
    /// This gateway's incremental fetch sessions (KIP-227).
    pub fetch_sessions: FetchSessions,
}

/// The threads the state-owning actors run on, owned (stopped and joined) by the caller.
pub struct Threads<'a> {
    /// Offset and transaction slots spread over these, with the connections.
    pub workers: &'a [ArbiterHandle],
    /// One log slot on each: threads of their own when the engine
    /// [`LogStore::blocks_in_append`], the workers' in turn otherwise.
    pub log_slots: &'a [ArbiterHandle],
}

impl Gateway {
    /// Loads the topics and starts the state-owning actors on `threads`. Every store
    /// call from here on is metered.
    pub async fn start(
        settings: BrokerSettings,
        logs: Arc<dyn LogStore>,
        meta: Arc<dyn MetaStore>,
        users: Arc<dyn Users>,
        metrics: Arc<Metrics>,
        threads: Threads<'_>,
    ) -> Result<Gateway, StartError> {
        let mut settings = settings;
        let me = Node {
            id: settings.node_id,
            endpoints: settings.endpoints.clone(),
        };
        let logs = Logs::new(Arc::new(MeteredLog::new(logs, metrics.clone())));
        let meta = Meta::new(Arc::new(MeteredMeta::new(meta, metrics.clone())));
        // Gateways sharing a store take ids of their own; one alone keeps its configured id.
        if meta.shared() {
            settings.node_id = allocate_node_id(&meta, &me.address()).await?;
        }
        let settings = Arc::new(settings);
        let users: Arc<dyn Users> = Arc::new(MeteredUsers::new(users, metrics.clone()));
        let (catalog, configs) = ConfigCatalog::start_with(&meta, &settings).await?;
        let slots = (settings.offset_slots, settings.offsets_commit_timeout);
        let offsets =
            Offsets::start((&meta, &logs), slots, threads.workers, metrics.clone()).await?;
        let (topic_admin, table) = TopicAdmin::start_with(
            (logs.clone(), &meta, offsets.clone()),
            (catalog.clone(), configs.clone()),
            settings.clone(),
        )
        .await?;
        let authorizer = match &settings.authorizer {
            Some(rules) => {
                let refresh = settings.topic_refresh_interval;
                let (store, table) = SharedTable::<Acls>::start(&meta, refresh).await?;
                Some(Authorizer {
                    settings: Arc::new(rules.clone()),
                    store,
                    table,
                })
            }
            None => None,
        };
        let (quota_store, quota_table) =
            SharedTable::<QuotaRows>::start(&meta, settings.topic_refresh_interval).await?;
        let quotas = Quotas::new((quota_store, quota_table), metrics.clone());
        let partitions = Partitions::start(
            logs,
            (&meta, settings.txn_index_checkpoint_interval),
            threads.log_slots,
            metrics.clone(),
        )?;
        let me = Node {
            id: settings.node_id,
            ..me
        };
        let membership = Membership::start_with(
            &meta,
            me,
            (settings.node_heartbeat, settings.node_timeout),
            partitions.clone(),
        )
        .await?;
        let queued_request_bytes = ByteBudget::new(settings.limits.queued_max_request_bytes);
        let (credentials, _) =
            SharedTable::<Credentials>::start(&meta, settings.topic_refresh_interval).await?;
        let sasl = Arc::new(Authenticator::new(
            settings.sasl.clone(),
            users,
            credentials,
        ));
        partitions.follow_topics(table.clone());
        let topics = Topics::new(
            (topic_admin, table.clone()),
            (catalog, configs),
            settings.topic_rules,
        );
        Compactor::start(
            (partitions.clone(), topics.clone()),
            metrics.clone(),
            settings.compaction,
            membership.1.clone(),
        );
        let producer_ids = Arc::new(ProducerIds::start(meta.client()?));
        let coordinator = GroupCoordinator::new(
            (
                settings.group_initial_rebalance_delay,
                settings.consumer_groups.clone(),
            ),
            metrics.clone(),
            (meta.client()?, membership.1.clone()),
            table,
        )
        .start();
        let groups = Groups::new(coordinator, membership);
        let transactions = Transactions::start(
            (&meta, settings.transaction_slots),
            (partitions.clone(), offsets.clone(), producer_ids.clone()),
            (groups.watch_cluster(), settings.transactional_id_expiration),
            threads.workers,
        )?;
        let fetch_sessions =
            FetchSessions::new(settings.fetch_sessions, metrics.fetch_sessions.clone());
        Ok(Gateway {
            fetch_sessions,
            producer_ids,
            transactions,
            partitions,
            queued_request_bytes,
            settings,
            topics,
            offsets,
            groups,
            metrics,
            sasl,
            authorizer,
            quotas,
        })
    }

    /// What `caller` may do, by the ACLs in force now: every handler's one way to
    /// authorize.
    pub fn access(&self, caller: &Caller) -> Access {
        Access::new(self.authorizer.as_ref(), caller)
    }
}
