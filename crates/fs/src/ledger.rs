//! ledger: TODO

/// What this session has seen of each file (for the stale-write guard).
#[derive(Debug, Default)]
pub struct Ledger;
