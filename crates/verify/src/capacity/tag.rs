//! The capacity probe's sector tag: in sinkrate_formats, where the fuzz targets reach it.

pub use sinkrate_formats::capacity_tag::*;
