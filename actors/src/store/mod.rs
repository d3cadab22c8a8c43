//! The storage ports: [`log::LogStore`] for partition logs, [`meta::MetaStore`] for
//! the small versioned tables every other kind of gateway state lives in (and
//! [`shared`], the one way a gateway keeps its copy of a shared table), and
//! [`users::Users`], the store's own logins where it has them.
//!
//! Actors and handlers only ever talk to these traits; the embedded store and the
//! Iggy adapter implement them in the root package.

pub mod log;
pub mod meta;
pub mod shared;
mod types;
pub mod users;

pub use log::{GroupCommit, LogAnswer, LogCall, LogStore, Logs};
pub use meta::{Meta, MetaStore};
pub use types::*;
pub use users::Users;
