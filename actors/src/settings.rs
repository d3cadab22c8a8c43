//! Broker-wide settings the actors act on. The root package fills them from its
//! configuration; nothing here reads files or the environment.

use std::time::Duration;

use crate::authorizer::AuthorizerSettings;
use crate::fetch_sessions::SessionLimits;
use crate::limits::ResourceLimits;
use crate::sasl::SaslSettings;
use crate::store::Endpoint;

/// Kafka's `group.consumer.*` broker settings, for groups of the consumer protocol
/// (KIP-848).
#[derive(Clone, Debug)]
pub struct ConsumerGroupSettings {
    /// A member silent this long leaves the group (`group.consumer.session.timeout.ms`).
    pub session_timeout: Duration,
    /// How often members heartbeat (`group.consumer.heartbeat.interval.ms`).
    pub heartbeat_interval: Duration,
    /// The server assignors members may choose, the first the default
    /// (`group.consumer.assignors`): `uniform`, `range`.
    pub assignors: Vec<String>,
    /// Most members a group takes (`group.consumer.max.size`).
    pub max_size: usize,
}

impl Default for ConsumerGroupSettings {
    /// Kafka's defaults.
    fn default() -> Self {
        ConsumerGroupSettings {
            session_timeout: Duration::from_secs(45),
            heartbeat_interval: Duration::from_secs(5),
            assignors: vec!["uniform".into(), "range".into()],
            max_size: i32::MAX as usize,
        }
    }
}

/// What the gateway was configured with.
#[derive(Clone, Debug)]
pub struct BrokerSettings {
    pub node_id: i32,
    pub cluster_id: String,
    /// This gateway's advertised address per listener, in configured order; never empty.
    pub endpoints: Vec<Endpoint>,
    /// Largest request frame accepted; larger ones close the connection (Kafka's `socket.request.max.bytes`).
    pub max_request_bytes: usize,
    /// Requests read from one connection before its answers are written; reading pauses beyond it.
    pub max_inflight_per_connection: usize,
    /// Connections closed after this long without a request (`connections.max.idle.ms`).
    pub idle_timeout: Duration,
    /// A request begun must arrive whole within about this long.
    pub read_timeout: Duration,
    /// A client must take each answer within this long.
    pub write_timeout: Duration,
    /// Largest record batch a topic accepts unless it sets `max.message.bytes`.
    pub message_max_bytes: usize,
    /// Topic defaults and limits; read through [`Gateway::topic_rules`] only.
    pub topic_rules: TopicRules,
    /// Open connections allowed at once; more are closed on accept.
    pub max_connections: usize,
    /// Connections per source address and request bytes in flight.
    pub limits: ResourceLimits,
    /// Number of offset-slot actors commits and offset reads are spread over.
    pub offset_slots: usize,
    /// Number of transaction-slot actors transactional ids are spread over.
    pub transaction_slots: usize,
    /// Each offset commit's and read's deadline on the offset slots (Kafka's
    /// `offsets.commit.timeout.ms`).
    pub offsets_commit_timeout: Duration,
    /// How long a rebalance of an empty group waits for more members.
    pub group_initial_rebalance_delay: Duration,
    /// Kafka's `transaction.max.timeout.ms`: the longest transaction timeout
    /// InitProducerId takes.
    pub transaction_max_timeout_ms: i32,
    /// Kafka's `transactional.id.expiration.ms`: a transactional id with nothing open is
    /// forgotten this long after its last change.
    pub transactional_id_expiration: Duration,
    /// KIP-848 groups (`group.consumer.*`).
    pub consumer_groups: ConsumerGroupSettings,
    /// How often the topic table is re-read from the backend.
    pub topic_refresh_interval: Duration,
    /// How often this gateway tells the others sharing the backend it is alive.
    pub node_heartbeat: Duration,
    /// A gateway silent this long has left the cluster.
    pub node_timeout: Duration,
    /// SASL mechanisms, where PLAIN checks passwords, re-authentication, failed logins.
    pub sasl: SaslSettings,
    /// The ACL authorizer; `None` allows every request (Kafka without an authorizer).
    pub authorizer: Option<AuthorizerSettings>,
    /// Bounds of the incremental fetch session cache.
    pub fetch_sessions: SessionLimits,
    /// The compactor of `cleanup.policy=compact` topics.
    pub compaction: CompactionSettings,
    /// How often transaction indexes that moved are saved (`txn_checkpoints.rs`);
    /// `None`: never.
    pub txn_index_checkpoint_interval: Option<Duration>,
}

/// Broker-wide topic settings: Kafka's `auto.create.topics.enable`, `num.partitions` and
/// `default.replication.factor`, and how many names one DeleteTopics may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopicRules {
    /// Metadata creates missing topics (with the request's consent from v4, KIP-361).
    pub auto_create_topics_enable: bool,
    pub num_partitions: i32,
    pub default_replication_factor: i16,
    /// A DeleteTopics naming more topics deletes none (POLICY_VIOLATION for each).
    pub delete_topics_max_names: usize,
}

impl TopicRules {
    /// Partitions asked for; -1 means the broker default at every version, as Kafka's
    /// controller has it.
    pub fn partitions(&self, asked: i32) -> i32 {
        if asked == -1 {
            self.num_partitions
        } else {
            asked
        }
    }

    /// Replication factor asked for; -1 means the broker default at every version.
    pub fn replication_factor(&self, asked: i16) -> i16 {
        if asked == -1 {
            self.default_replication_factor
        } else {
            asked
        }
    }
}

/// How often the compactor looks, and how much one pass reads (`compactor/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionSettings {
    /// `None`: no compactor.
    pub interval: Option<Duration>,
    pub pass_bytes: usize,
}
