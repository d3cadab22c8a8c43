//! Incremental fetch sessions (KIP-227): by hand-built requests at every version that
//! has them, and through the Java consumer, which uses them by default.

mod java;
mod wire;
