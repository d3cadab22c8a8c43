//! The storage ports: [`log::LogStore`] for partition logs.
//!
//! Actors and handlers only ever talk to these traits; the embedded store and the
//! Iggy adapter implement them in the root package.

pub mod log;

pub use log::{LogAnswer, LogCall, LogStore, Logs};
