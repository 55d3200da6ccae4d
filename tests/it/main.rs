//! The integration tests: one binary, a module per concern, run by `scripts/test.sh` in
//! lanes (see there): the tests that change or compare the machine's own settings
//! (`machine_settings` in their path, and `tune`) take turns in one lane, the suites in
//! another, and the rest beside them.

mod common;

mod adversarial;
mod audit;
mod bench_devices;
mod bench_fio_behaviour;
mod bench_fio_compat;
mod bench_fio_coordination;
mod bench_fio_engines;
mod bench_fio_errors;
mod bench_fio_logs;
mod bench_fio_newer;
mod bench_fio_offsets;
mod bench_fio_pacing;
mod bench_fio_sync_range;
mod bench_fio_trim;
mod bench_input;
mod bench_nbd;
mod bench_output;
mod bench_pacing;
mod bench_signals;
mod bench_verify;
mod board;
mod capacity;
mod capture;
mod causes;
mod check;
mod class;
mod compare;
mod docs_links;
mod emulate;
mod endurance;
mod faults;
mod fleet;
mod lab;
mod leftovers;
mod old_kernels;
mod power_cut;
mod profiles;
mod qemu;
mod record;
mod report;
mod round_trip;
mod suite;
mod tune;
mod verify;
mod watch;
