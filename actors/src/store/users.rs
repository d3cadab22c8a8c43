//! The store's own users, for SASL PLAIN with `sasl_plain_backend = "iggy"`: only the
//! Iggy engine has users; settings refuse that setting elsewhere (docs/SECURITY.md).

use super::{StoreError, StoreFuture};

pub trait Users: Send + Sync + 'static {
    /// Whether `user` logs in to the store's own users with `password`.
    fn check_login(&self, _user: &str, _password: &str) -> StoreFuture<'_, bool> {
        Box::pin(async { Err(StoreError::fatal("this store has no users")) })
    }
}
