//! The gateway's core: actors, Kafka request handling and the storage ports.
//!
//! A request's path: [`server`] accepts a socket and starts a [`connection::Connection`]
//! actor, which frames and decodes requests ([`protocol`]) and hands each to [`api::route`].
//! The route table sends it to the actor that owns the state it touches:
//! [`topic_admin::TopicAdmin`] (topics), [`config_catalog::ConfigCatalog`] (topic
//! configurations), [`log_slot::LogSlot`] (appends, ordered per partition),
//! [`group_coordinator::GroupCoordinator`] (consumer-group membership),
//! [`offsets::slot::OffsetSlot`] (committed offsets, written and read) and
//! [`transactions::slot::TxnSlot`] (transactions). Log reads go straight to the
//! stores ([`store`]). `docs/ARCHITECTURE.md` draws the same flow. [`metrics`] holds
//! what they measure.

pub mod api;
pub mod append_signals;
pub mod authorizer;
pub mod compactor;
pub mod config_catalog;
pub mod connection;
pub mod fetch_sessions;
#[doc(hidden)] // for the fuzz targets in actors/fuzz/ and their replay in cargo test
pub mod fuzzing;
pub mod gateway;
pub mod group_coordinator;
pub mod groups;
pub mod late_reads;
pub mod layers;
pub mod limits;
pub mod log_slot;
pub mod membership;
pub mod metrics;
pub mod offsets;
pub mod partition_read;
pub mod partitions;
pub mod producer_ids;
pub mod producer_state;
pub mod protocol;
pub mod quotas;
pub mod sasl;
pub mod server;
pub mod session;
pub mod settings;
pub mod store;
#[cfg(test)]
mod test_store;
pub mod tls;
pub mod topic_admin;
pub mod topics;
pub mod transactions;
pub mod txn_checkpoints;
pub mod txn_index;
pub mod unserved;

pub use gateway::{Gateway, Threads};
pub use metrics::Metrics;
pub use settings::{BrokerSettings, TopicRules};
pub use store::StoreError;
