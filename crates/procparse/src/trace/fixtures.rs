//! Format files as kernels write them, for tests and fuzzing: this machine's 6.18 (x86_64,
//! read from its tracefs), 4.4 on 32-bit ARM (derived from 4.4's TRACE_EVENT
//! definitions with ARM's 4-byte long: `bdi_setpoint`/`bdi_dirty` where later kernels say
//! `wb_`, a 4-byte `prev_state`, the page's data at 12), 4.9 on aarch64 (laid out by
//! `formats/derive.py` from 4.9's definitions: no writeback-wait event yet, a request's
//! status named `errors`, jbd2's older types, `success` in sched_wakeup), and the long-term
//! kernels boards ship, laid out by the same script from each release's definitions
//! ([`LONG_TERM`]: 4.4 on 32-bit ARM in full; 4.14, 4.19, 5.4, 5.10, 6.1 and 6.6 on aarch64;
//! 5.10 and 6.1 on 32-bit ARM too).

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

/// A long-term kernel's events on one board: each kind with its format file, the
/// writeback wait under the name that kernel gives it.
macro_rules! long_term {
    ($dir:literal $(, $wait:literal)?) => {
        &[
            (EventKind::Throttle, include_str!(concat!("formats/", $dir, "/writeback.balance_dirty_pages"))),
            $((EventKind::WritebackWait, include_str!(concat!("formats/", $dir, "/writeback.", $wait))),)?
            (EventKind::CommitStart, include_str!(concat!("formats/", $dir, "/jbd2.jbd2_start_commit"))),
            (EventKind::CommitEnd, include_str!(concat!("formats/", $dir, "/jbd2.jbd2_end_commit"))),
            (EventKind::CommitStats, include_str!(concat!("formats/", $dir, "/jbd2.jbd2_run_stats"))),
            (EventKind::FlushStart, include_str!(concat!("formats/", $dir, "/writeback.writeback_start"))),
            (EventKind::FlushWritten, include_str!(concat!("formats/", $dir, "/writeback.writeback_written"))),
            (EventKind::RequestIssue, include_str!(concat!("formats/", $dir, "/block.block_rq_issue"))),
            (EventKind::RequestComplete, include_str!(concat!("formats/", $dir, "/block.block_rq_complete"))),
            (EventKind::Switch, include_str!(concat!("formats/", $dir, "/sched.sched_switch"))),
            (EventKind::Wakeup, include_str!(concat!("formats/", $dir, "/sched.sched_wakeup"))),
            (EventKind::SyscallEnter, include_str!(concat!("formats/", $dir, "/raw_syscalls.sys_enter"))),
            (EventKind::SyscallExit, include_str!(concat!("formats/", $dir, "/raw_syscalls.sys_exit"))),
        ]
    };
}

/// A kernel's format files on one board, and what that kernel calls its flush reason 5.
pub struct Kernel {
    pub name: &'static str,
    pub header_page: &'static str,
    pub formats: &'static [(EventKind, &'static str)],
    pub reason_5: &'static str,
}

/// The long-term kernels but 4.9, as `formats/derive.py` lays them out from each release's
/// definitions: 4.4 (a 32-bit ARM board: a request's `errors`, the writeback cgroup as a
/// path), 4.14 and 4.19 without a writeback-wait event, wait_on_page_writeback in 5.4
/// (backported to its stable series) and 5.10, folio_wait_writeback from 6.1; 32-bit ARM
/// boards (4-byte longs) on 5.10 and 6.1.
pub const LONG_TERM: &[Kernel] = &[
    Kernel {
        name: "4.4-armv7",
        header_page: HEADER_PAGE_4_4_ARMV7,
        formats: long_term!("4.4-armv7"),
        reason_5: "free_more_memory",
    },
    Kernel {
        name: "4.14-aarch64",
        header_page: include_str!("formats/4.14-aarch64/header_page"),
        formats: long_term!("4.14-aarch64"),
        reason_5: "free_more_memory",
    },
    Kernel {
        name: "4.19-aarch64",
        header_page: include_str!("formats/4.19-aarch64/header_page"),
        formats: long_term!("4.19-aarch64"),
        reason_5: "free_more_memory",
    },
    Kernel {
        name: "5.4-aarch64",
        header_page: include_str!("formats/5.4-aarch64/header_page"),
        formats: long_term!("5.4-aarch64", "wait_on_page_writeback"),
        reason_5: "free_more_memory",
    },
    Kernel {
        name: "5.10-aarch64",
        header_page: include_str!("formats/5.10-aarch64/header_page"),
        formats: long_term!("5.10-aarch64", "wait_on_page_writeback"),
        reason_5: "fs_free_space",
    },
    Kernel {
        name: "5.10-armv7",
        header_page: include_str!("formats/5.10-armv7/header_page"),
        formats: long_term!("5.10-armv7", "wait_on_page_writeback"),
        reason_5: "fs_free_space",
    },
    Kernel {
        name: "6.1-aarch64",
        header_page: include_str!("formats/6.1-aarch64/header_page"),
        formats: long_term!("6.1-aarch64", "folio_wait_writeback"),
        reason_5: "fs_free_space",
    },
    Kernel {
        name: "6.1-armv7",
        header_page: include_str!("formats/6.1-armv7/header_page"),
        formats: long_term!("6.1-armv7", "folio_wait_writeback"),
        reason_5: "fs_free_space",
    },
    Kernel {
        name: "6.6-aarch64",
        header_page: include_str!("formats/6.6-aarch64/header_page"),
        formats: long_term!("6.6-aarch64", "folio_wait_writeback"),
        reason_5: "fs_free_space",
    },
];
