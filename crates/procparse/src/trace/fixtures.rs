//! Format files as kernels write them, for tests and fuzzing: this machine's 6.18 (x86_64,
//! read from its tracefs), 4.4 on 32-bit ARM (derived from 4.4's TRACE_EVENT
//! definitions with ARM's 4-byte long: `bdi_setpoint`/`bdi_dirty` where later kernels say
//! `wb_`, a 4-byte `prev_state`, the page's data at 12) and 4.9 on aarch64 (laid out by
//! `formats/derive.py` from 4.9's definitions: no writeback-wait event yet, a request's
//! status named `errors`, jbd2's older types, `success` in sched_wakeup).

use super::EventKind;

pub const HEADER_PAGE_6_18: &str = include_str!("formats/6.18-x86_64/header_page");
pub const HEADER_PAGE_4_4_ARMV7: &str = include_str!("formats/4.4-armv7/header_page");
pub const HEADER_PAGE_4_9_AARCH64: &str = include_str!("formats/4.9-aarch64/header_page");

/// Linux 4.9's events on aarch64: every kind but the writeback wait, which 4.9 lacks.
pub const FORMATS_4_9_AARCH64: &[(EventKind, &str)] = &[
    (
        EventKind::Throttle,
        include_str!("formats/4.9-aarch64/writeback.balance_dirty_pages"),
    ),
    (
        EventKind::CommitStart,
        include_str!("formats/4.9-aarch64/jbd2.jbd2_start_commit"),
    ),
    (
        EventKind::CommitEnd,
        include_str!("formats/4.9-aarch64/jbd2.jbd2_end_commit"),
    ),
    (
        EventKind::CommitStats,
        include_str!("formats/4.9-aarch64/jbd2.jbd2_run_stats"),
    ),
    (
        EventKind::FlushStart,
        include_str!("formats/4.9-aarch64/writeback.writeback_start"),
    ),
    (
        EventKind::FlushWritten,
        include_str!("formats/4.9-aarch64/writeback.writeback_written"),
    ),
    (
        EventKind::RequestIssue,
        include_str!("formats/4.9-aarch64/block.block_rq_issue"),
    ),
    (
        EventKind::RequestComplete,
        include_str!("formats/4.9-aarch64/block.block_rq_complete"),
    ),
    (
        EventKind::Switch,
        include_str!("formats/4.9-aarch64/sched.sched_switch"),
    ),
    (
        EventKind::Wakeup,
        include_str!("formats/4.9-aarch64/sched.sched_wakeup"),
    ),
    (
        EventKind::SyscallEnter,
        include_str!("formats/4.9-aarch64/raw_syscalls.sys_enter"),
    ),
    (
        EventKind::SyscallExit,
        include_str!("formats/4.9-aarch64/raw_syscalls.sys_exit"),
    ),
];

pub const FORMATS_6_18: &[(EventKind, &str)] = &[
    (
        EventKind::Throttle,
        include_str!("formats/6.18-x86_64/writeback.balance_dirty_pages"),
    ),
    (
        EventKind::WritebackWait,
        include_str!("formats/6.18-x86_64/writeback.folio_wait_writeback"),
    ),
    (
        EventKind::CommitStart,
        include_str!("formats/6.18-x86_64/jbd2.jbd2_start_commit"),
    ),
    (
        EventKind::CommitEnd,
        include_str!("formats/6.18-x86_64/jbd2.jbd2_end_commit"),
    ),
    (
        EventKind::CommitStats,
        include_str!("formats/6.18-x86_64/jbd2.jbd2_run_stats"),
    ),
    (
        EventKind::FlushStart,
        include_str!("formats/6.18-x86_64/writeback.writeback_start"),
    ),
    (
        EventKind::FlushWritten,
        include_str!("formats/6.18-x86_64/writeback.writeback_written"),
    ),
    (
        EventKind::RequestIssue,
        include_str!("formats/6.18-x86_64/block.block_rq_issue"),
    ),
    (
        EventKind::RequestComplete,
        include_str!("formats/6.18-x86_64/block.block_rq_complete"),
    ),
    (
        EventKind::Switch,
        include_str!("formats/6.18-x86_64/sched.sched_switch"),
    ),
    (
        EventKind::Wakeup,
        include_str!("formats/6.18-x86_64/sched.sched_wakeup"),
    ),
    (
        EventKind::SyscallEnter,
        include_str!("formats/6.18-x86_64/raw_syscalls.sys_enter"),
    ),
    (
        EventKind::SyscallExit,
        include_str!("formats/6.18-x86_64/raw_syscalls.sys_exit"),
    ),
];

pub const FORMATS_4_4_ARMV7: &[(EventKind, &str)] = &[
    (
        EventKind::Throttle,
        include_str!("formats/4.4-armv7/writeback.balance_dirty_pages"),
    ),
    (
        EventKind::Switch,
        include_str!("formats/4.4-armv7/sched.sched_switch"),
    ),
];
