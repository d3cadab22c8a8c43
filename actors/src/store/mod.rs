//! The storage ports: [`log::LogStore`] for partition logs, [`meta::MetaStore`] for
//! versioned tables of keys and values.
//!
//! Actors and handlers only ever talk to these traits; the embedded store and the
//! Iggy adapter implement them in the root package.

pub mod log;
pub mod meta;

pub use log::{LogAnswer, LogCall, LogStore, Logs};
