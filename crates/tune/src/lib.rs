//! `sinkrate tune`: settings named by a user applied, restored and shown through the journal
//! ([`apply`]), and `tune search` ([`search`]): which configuration keeps up on the user's
//! own workload. Candidates (writeback sysctls, the recorder's own knobs, both) are recorded in process as
//! record sessions, their system settings applied as temporary journal entries; the ranking
//! follows the objective (no drops, then worst write and lateness, CPU, data at risk).

pub mod apply;
pub mod candidates;
pub mod predict;
pub mod rank;
pub mod search;
pub mod workload;
