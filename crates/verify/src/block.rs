//! One verify block's layout: in sinkrate_formats, where the fuzz targets reach it.

pub use sinkrate_formats::verify_block::*;
