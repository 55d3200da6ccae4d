//! `sinkrate record`: does the storage keep up with these streams, frame by frame?

pub mod config;
pub mod find_max;
pub mod frame_header;
pub mod frames;
#[cfg(target_os = "linux")]
pub mod kernel;
/// Elsewhere the kernel's trace events are not read: causes are inferred, and said so.
#[cfg(not(target_os = "linux"))]
pub mod kernel {
    use std::collections::HashMap;
    use std::time::Instant;

    use sinkrate_model::causes::KernelAccount;
    use sinkrate_model::record::StallReport;

    pub struct Tracing {
        /// No bdi is known off Linux.
        pub bdi: Option<String>,
    }

    /// Nothing is traced, so no writer hands a stall over.
    #[derive(Clone)]
    pub struct StallSink;

    impl StallSink {
        pub fn hand_over(&self, _tid: i32, _start_ns: u64, _end_ns: u64) {}
    }

    impl Tracing {
        pub fn start(
            _mount: Option<&sinkrate_model::facts::Target>,
            _why_not: Option<&str>,
        ) -> Tracing {
            Tracing { bdi: None }
        }

        pub fn stall_sink(&self, _clock: Instant) -> Option<StallSink> {
            None
        }

        pub fn finish(
            self,
            _stalls: &mut [StallReport],
            _names: &HashMap<i32, String>,
        ) -> KernelAccount {
            KernelAccount::inferred("the kernel's trace events are read on Linux only")
        }
    }
}
pub mod power_cut;
pub mod replay;
pub mod run;
pub mod segments;
pub mod session;
mod sink;
pub mod sizes;
pub mod soak;
pub mod stream;
mod uring_sink;
pub mod verdict;
mod writer;
