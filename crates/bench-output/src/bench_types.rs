//! `sinkrate bench`'s JSON: fio's document, whose types now live in the model.

pub use sinkrate_model::fio::*;
