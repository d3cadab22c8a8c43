//! Faults the real world brings, each injected under a workload of idempotent
//! producers, a transactional producer and a consumer group (`workload`), whose
//! history (`history`) a Jepsen-style checker (`checker`) then judges: its verdict is
//! each test's assertion.

mod checker;
mod disk_full;
mod history;
mod iggy_restart;
mod link;
mod lost_page_cache;
mod paused_gateway;
mod soak;
mod workload;
