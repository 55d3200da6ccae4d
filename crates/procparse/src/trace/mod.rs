//! The kernel's trace events as tracefs hands them out: each event's `format` file, the
//! ring buffer's page header (`events/header_page`), and the binary pages that
//! `per_cpu/cpuN/trace_pipe_raw` returns. Pure: text and bytes in, typed events out.
//!
//! Format files are parsed in [`format`] (see there why by hand). The page decoder is
//! written here because no crate decodes ftrace's ring-buffer sub-buffers without
//! libtraceevent (C); it follows the layout the kernel describes in `events/header_page` and
//! `events/header_event` (kernel/trace/ring_buffer.c).

use std::collections::HashMap;

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;

pub mod format;

use format::{EventFormat, FieldFormat};

/// How a sub-buffer (a page) is laid out on this kernel: the width of `commit` and where the
/// data starts, from `events/header_page`; the byte order is the running kernel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Bytes of the `commit` word (the kernel's `long`): 8 on 64-bit kernels, 4 on 32-bit.
    pub long_bytes: usize,
    /// Where the records start in the page (16 on 64-bit, 12 on 32-bit).
    pub data_offset: usize,
    pub big_endian: bool,
}

impl PageLayout {
    /// Reads `events/header_page`. Its `commit` and `data` lines give the word size and the
    /// data offset; anything else is refused with the line it lacked.
    pub fn parse(header_page: &str, big_endian: bool) -> Result<Self, String> {
        let field = |name: &str| -> Option<(usize, usize)> {
            header_page.lines().find_map(|line| {
                let (decl, rest) = line.trim().strip_prefix("field:")?.split_once(';')?;
                if decl.split_whitespace().last()? != name {
                    return None;
                }
                let number = |key: &str| -> Option<usize> {
                    rest.split(';')
                        .find_map(|p| p.trim().strip_prefix(key))
                        .and_then(|v| v.trim().parse().ok())
                };
                Some((number("offset:")?, number("size:")?))
            })
        };
        let (commit_offset, commit_size) =
            field("commit").ok_or("header_page has no commit field")?;
        let (data_offset, _) = field("data").ok_or("header_page has no data field")?;
        if commit_offset != 8 || !matches!(commit_size, 4 | 8) || data_offset != 8 + commit_size {
            return Err(format!(
                "header_page describes a page this reader does not know (commit at {commit_offset}, {commit_size} bytes; data at {data_offset})"
            ));
        }
        Ok(PageLayout {
            long_bytes: commit_size,
            data_offset,
            big_endian,
        })
    }

    fn u32_at(&self, b: &[u8], at: usize) -> Option<u32> {
        let raw: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big_endian {
            u32::from_be_bytes(raw)
        } else {
            u32::from_le_bytes(raw)
        })
    }

    fn u64_at(&self, b: &[u8], at: usize) -> Option<u64> {
        let raw: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(if self.big_endian {
            u64::from_be_bytes(raw)
        } else {
            u64::from_le_bytes(raw)
        })
    }

    fn long_at(&self, b: &[u8], at: usize) -> Option<u64> {
        if self.long_bytes == 8 {
            self.u64_at(b, at)
        } else {
            self.u32_at(b, at).map(u64::from)
        }
    }
}

/// Events the kernel could not store before this page (the buffer was full).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lost {
    #[default]
    None,
    Count(u64),
    /// Some were lost; the kernel did not say how many.
    Unknown,
}

/// One record of a page: when (the trace clock's nanoseconds) and its bytes, starting with
/// the common fields (`common_type` first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRecord<'a> {
    pub ts_ns: u64,
    pub data: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page<'a> {
    pub records: Vec<PageRecord<'a>>,
    pub lost_before: Lost,
}

// The record header's type_len values (kernel/trace/ring_buffer.c, RINGBUF_TYPE_*).
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

/// Decodes one sub-buffer as `trace_pipe_raw` returns it. A page whose commit or a record
/// runs past its end is refused (the records before the fault are not returned: a page is
/// trusted whole or not at all).
pub fn decode_page<'a>(layout: &PageLayout, page: &'a [u8]) -> Result<Page<'a>, String> {
    let start_ts = layout
        .u64_at(page, 0)
        .ok_or("page shorter than its header")?;
    let commit = layout
        .long_at(page, 8)
        .ok_or("page shorter than its header")?;
    let size = (commit & COMMIT_MASK) as usize;
    let data = page
        .get(layout.data_offset..)
        .ok_or("page shorter than its header")?;
    if size > data.len() {
        return Err(format!(
            "page commits {size} bytes but holds {}",
            data.len()
        ));
    }
    let lost_before = if commit & MISSED_EVENTS == 0 {
        Lost::None
    } else if commit & MISSED_STORED != 0 {
        layout
            .long_at(data, size)
            .map_or(Lost::Unknown, Lost::Count)
    } else {
        Lost::Unknown
    };
    let data = &data[..size];
    let mut ts = start_ts;
    let mut at = 0usize;
    let mut records = Vec::new();
    while at < size {
        let header = layout
            .u32_at(data, at)
            .ok_or_else(|| format!("record header at {at} runs past the page"))?;
        let (type_len, delta) = if layout.big_endian {
            (header >> 27, header & ((1 << 27) - 1))
        } else {
            (header & 0x1f, header >> 5)
        };
        let body = at + 4;
        match type_len {
            TYPE_PADDING => {
                // Padding to the end of the page, or a discarded event of the given length.
                let len = layout.u32_at(data, body).unwrap_or(0) as usize;
                if delta == 0 || len == 0 {
                    break;
                }
                ts = ts.wrapping_add(u64::from(delta));
                at = body
                    .checked_add(len)
                    .ok_or("padding length overflows the page")?;
            }
            TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                let high = layout
                    .u32_at(data, body)
                    .ok_or("time stamp runs past the page")?;
                let value = (u64::from(high) << TS_SHIFT) + u64::from(delta);
                if type_len == TYPE_TIME_STAMP {
                    // An absolute stamp lacks the top 5 bits: they are the page's.
                    ts = value | (ts & (0xf8 << 56));
                } else {
                    ts = ts.wrapping_add(value);
                }
                at = body + 4;
            }
            0 => {
                let len = layout
                    .u32_at(data, body)
                    .ok_or("record length runs past the page")? as usize;
                let len = len.checked_sub(4).ok_or("record length below 4")?;
                let len = (len + 3) & !3;
                let from = body + 4;
                let bytes = data
                    .get(from..from + len)
                    .ok_or_else(|| format!("record at {at} runs past the page"))?;
                ts = ts.wrapping_add(u64::from(delta));
                records.push(PageRecord {
                    ts_ns: ts,
                    data: bytes,
                });
                at = from + len;
            }
            n => {
                let len = n as usize * 4;
                let bytes = data
                    .get(body..body + len)
                    .ok_or_else(|| format!("record at {at} runs past the page"))?;
                ts = ts.wrapping_add(u64::from(delta));
                records.push(PageRecord {
                    ts_ns: ts,
                    data: bytes,
                });
                at = body + len;
            }
        }
    }
    Ok(Page {
        records,
        lost_before,
    })
}

/// The events sinkrate reads, by the name tracefs gives them (`system/name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// writeback:balance_dirty_pages: a writer paused by dirty throttling.
    Throttle,
    /// writeback:folio_wait_writeback (wait_on_page_writeback before 5.16): a writer
    /// waiting for a page under writeback.
    WritebackWait,
    /// jbd2:jbd2_start_commit / jbd2_end_commit / jbd2_run_stats.
    CommitStart,
    CommitEnd,
    CommitStats,
    /// writeback:writeback_start / writeback_written: the flusher's work and its reason.
    FlushStart,
    FlushWritten,
    /// block:block_rq_issue / block_rq_complete: the device's own time per request.
    RequestIssue,
    RequestComplete,
    /// sched:sched_switch / sched_wakeup: when a thread ran, and why it stopped.
    Switch,
    Wakeup,
    /// raw_syscalls:sys_enter / sys_exit: another program's write calls, without ptrace.
    SyscallEnter,
    SyscallExit,
}

impl EventKind {
    pub const ALL: [EventKind; 13] = [
        EventKind::Throttle,
        EventKind::WritebackWait,
        EventKind::CommitStart,
        EventKind::CommitEnd,
        EventKind::CommitStats,
        EventKind::FlushStart,
        EventKind::FlushWritten,
        EventKind::RequestIssue,
        EventKind::RequestComplete,
        EventKind::Switch,
        EventKind::Wakeup,
        EventKind::SyscallEnter,
        EventKind::SyscallExit,
    ];

    /// Where the event lives under `events/`, newest name first.
    pub fn paths(self) -> &'static [&'static str] {
        match self {
            EventKind::Throttle => &["writeback/balance_dirty_pages"],
            EventKind::WritebackWait => &[
                "writeback/folio_wait_writeback",
                "writeback/wait_on_page_writeback",
            ],
            EventKind::CommitStart => &["jbd2/jbd2_start_commit"],
            EventKind::CommitEnd => &["jbd2/jbd2_end_commit"],
            EventKind::CommitStats => &["jbd2/jbd2_run_stats"],
            EventKind::FlushStart => &["writeback/writeback_start"],
            EventKind::FlushWritten => &["writeback/writeback_written"],
            EventKind::RequestIssue => &["block/block_rq_issue"],
            EventKind::RequestComplete => &["block/block_rq_complete"],
            EventKind::Switch => &["sched/sched_switch"],
            EventKind::Wakeup => &["sched/sched_wakeup"],
            EventKind::SyscallEnter => &["raw_syscalls/sys_enter"],
            EventKind::SyscallExit => &["raw_syscalls/sys_exit"],
        }
    }

    /// The fields this reader needs, each with the names it has had across kernels.
    fn fields(self) -> &'static [&'static [&'static str]] {
        match self {
            EventKind::Throttle => &[
                &["bdi"],
                &["limit"],
                &["setpoint"],
                &["dirty"],
                &["wb_setpoint", "bdi_setpoint"],
                &["wb_dirty", "bdi_dirty"],
                &["pause"],
                &["paused"],
            ],
            EventKind::WritebackWait => &[&["name"], &["ino"]],
            EventKind::CommitStart | EventKind::CommitEnd => &[&["dev"], &["transaction"]],
            EventKind::CommitStats => &[&["dev"], &["tid"], &["blocks"], &["handle_count"]],
            EventKind::FlushStart | EventKind::FlushWritten => {
                &[&["name"], &["nr_pages"], &["reason"]]
            }
            EventKind::RequestIssue => &[&["dev"], &["sector"], &["nr_sector"], &["rwbs"]],
            // `errors` before 4.13.
            EventKind::RequestComplete => {
                &[&["dev"], &["sector"], &["nr_sector"], &["error", "errors"]]
            }
            EventKind::Switch => &[&["prev_pid"], &["prev_state"], &["next_pid"]],
            EventKind::Wakeup => &[&["pid"]],
            EventKind::SyscallEnter => &[&["id"]],
            EventKind::SyscallExit => &[&["id"], &["ret"]],
        }
    }
}

/// A decoded event: what sinkrate reads of it. Pages are in the kernel's units (pages of
/// the running kernel), times in milliseconds where the kernel gives milliseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelEvent {
    Throttle {
        bdi: String,
        limit_pages: u64,
        setpoint_pages: u64,
        dirty_pages: u64,
        wb_setpoint_pages: u64,
        wb_dirty_pages: u64,
        /// The pause the kernel chose; 0 or less: the writer was not put to sleep.
        pause_ms: i64,
        /// How long this call had already been paused before this pause.
        paused_ms: u64,
    },
    WritebackWait {
        bdi: String,
        ino: u64,
    },
    CommitStart {
        dev: u32,
        transaction: u32,
    },
    CommitEnd {
        dev: u32,
        transaction: u32,
    },
    CommitStats {
        dev: u32,
        transaction: u32,
        blocks: u32,
        handles: u32,
    },
    FlushStart {
        bdi: String,
        /// The reason by the kernel's own name for it (from the format's print fmt: the
        /// numbers differ between kernels), or its number.
        reason: String,
    },
    FlushWritten {
        bdi: String,
        pages: i64,
        reason: String,
    },
    RequestIssue {
        dev: u32,
        sector: u64,
        sectors: u32,
        rwbs: String,
    },
    RequestComplete {
        dev: u32,
        sector: u64,
        sectors: u32,
        error: i64,
    },
    Switch {
        prev_pid: i32,
        /// The leaving thread's state: 0 runnable (preempted), else sleeping.
        prev_state: i64,
        next_pid: i32,
    },
    Wakeup {
        pid: i32,
    },
    SyscallEnter {
        nr: i64,
    },
    SyscallExit {
        nr: i64,
        ret: i64,
    },
}

/// One event as read: when, on which CPU, by which thread (`common_pid`), and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedEvent {
    pub ts_ns: u64,
    pub cpu: u32,
    pub pid: i32,
    pub event: KernelEvent,
}

/// The reader's view of one event: its id and where each field it needs is.
#[derive(Debug)]
struct Layout {
    kind: EventKind,
    pid: FieldFormat,
    /// The kind's fields, in the order of [`EventKind::fields`].
    fields: Vec<FieldFormat>,
    /// The names `__print_symbolic(REC->reason, ...)` gives the reason's numbers.
    reasons: Vec<(i64, String)>,
}

/// Every event the session enabled, by the id the kernel gave it, decoded by the format
/// file the kernel wrote for it.
#[derive(Debug, Default)]
pub struct Decoder {
    by_id: HashMap<u16, Layout>,
    big_endian: bool,
}

impl Decoder {
    pub fn new(layout: &PageLayout) -> Self {
        Decoder {
            by_id: HashMap::new(),
            big_endian: layout.big_endian,
        }
    }

    /// Learns one event from its format file. Refuses a file it cannot read, or one that
    /// lacks a field this reader needs, naming what is missing.
    pub fn learn(&mut self, kind: EventKind, format: &str) -> Result<u16, String> {
        let parsed: EventFormat = format::parse(format)?;
        let id =
            u16::try_from(parsed.id).map_err(|_| format!("event ID {} too large", parsed.id))?;
        let find = |names: &[&str]| -> Option<FieldFormat> {
            names
                .iter()
                .find_map(|n| parsed.fields.iter().find(|f| f.name == *n))
                .cloned()
        };
        let pid = find(&["common_pid"]).ok_or("format has no common_pid")?;
        let mut fields = Vec::new();
        for names in kind.fields() {
            let field = find(names).ok_or_else(|| format!("format has no {} field", names[0]))?;
            fields.push(field);
        }
        let reasons = symbols(&parsed.print_fmt, "reason");
        self.by_id.insert(
            id,
            Layout {
                kind,
                pid,
                fields,
                reasons,
            },
        );
        Ok(id)
    }

    pub fn knows(&self, kind: EventKind) -> bool {
        self.by_id.values().any(|l| l.kind == kind)
    }

    /// Decodes one record, or None for an event this decoder was not taught (another
    /// tracer's, a marker) or one too short for its own format.
    pub fn decode(&self, cpu: u32, record: &PageRecord<'_>) -> Option<TimedEvent> {
        let data = record.data;
        let big_endian = self.big_endian;
        let raw: [u8; 2] = data.get(..2)?.try_into().ok()?;
        let id = if big_endian {
            u16::from_be_bytes(raw)
        } else {
            u16::from_le_bytes(raw)
        };
        let layout = self.by_id.get(&id)?;
        let f = &layout.fields;
        let int = |f: &FieldFormat| f.int(data, big_endian);
        let u = |i: usize| int(f.get(i)?).map(|v| v as u64);
        // Arrays of numbers are not read; a text field is a char array or a __data_loc.
        let s = |i: usize| f.get(i)?.text(data, big_endian);
        let pid = int(&layout.pid)? as i32;
        let reason = |n: i64| {
            layout
                .reasons
                .iter()
                .find(|(v, _)| *v == n)
                .map_or_else(|| n.to_string(), |(_, name)| name.clone())
        };
        let event = match layout.kind {
            EventKind::Throttle => KernelEvent::Throttle {
                bdi: s(0)?,
                limit_pages: u(1)?,
                setpoint_pages: u(2)?,
                dirty_pages: u(3)?,
                wb_setpoint_pages: u(4)?,
                wb_dirty_pages: u(5)?,
                pause_ms: int(f.get(6)?)?,
                paused_ms: u(7)?,
            },
            EventKind::WritebackWait => KernelEvent::WritebackWait {
                bdi: s(0)?,
                ino: u(1)?,
            },
            EventKind::CommitStart => KernelEvent::CommitStart {
                dev: u(0)? as u32,
                transaction: u(1)? as u32,
            },
            EventKind::CommitEnd => KernelEvent::CommitEnd {
                dev: u(0)? as u32,
                transaction: u(1)? as u32,
            },
            EventKind::CommitStats => KernelEvent::CommitStats {
                dev: u(0)? as u32,
                transaction: u(1)? as u32,
                blocks: u(2)? as u32,
                handles: u(3)? as u32,
            },
            EventKind::FlushStart => KernelEvent::FlushStart {
                bdi: s(0)?,
                reason: reason(int(f.get(2)?)?),
            },
            EventKind::FlushWritten => KernelEvent::FlushWritten {
                bdi: s(0)?,
                pages: int(f.get(1)?)?,
                reason: reason(int(f.get(2)?)?),
            },
            EventKind::RequestIssue => KernelEvent::RequestIssue {
                dev: u(0)? as u32,
                sector: u(1)?,
                sectors: u(2)? as u32,
                rwbs: s(3)?,
            },
            EventKind::RequestComplete => KernelEvent::RequestComplete {
                dev: u(0)? as u32,
                sector: u(1)?,
                sectors: u(2)? as u32,
                error: int(f.get(3)?)?,
            },
            EventKind::Switch => KernelEvent::Switch {
                prev_pid: int(f.first()?)? as i32,
                prev_state: int(f.get(1)?)?,
                next_pid: int(f.get(2)?)? as i32,
            },
            EventKind::Wakeup => KernelEvent::Wakeup {
                pid: int(f.first()?)? as i32,
            },
            EventKind::SyscallEnter => KernelEvent::SyscallEnter {
                nr: int(f.first()?)?,
            },
            EventKind::SyscallExit => KernelEvent::SyscallExit {
                nr: int(f.first()?)?,
                ret: int(f.get(1)?)?,
            },
        };
        Some(TimedEvent {
            ts_ns: record.ts_ns,
            cpu,
            pid,
            event,
        })
    }
}

/// The table `__print_symbolic(REC->FIELD, { 0, "background" }, ...)` in a print fmt: each
/// number with its name. Empty when the format prints the field as a number.
fn symbols(print_fmt: &str, field: &str) -> Vec<(i64, String)> {
    let opening = format!("__print_symbolic(REC->{field},");
    let Some(start) = print_fmt.find(&opening) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut rest = &print_fmt[start + opening.len()..];
    // Pairs until the call's closing parenthesis: `{ N, "name" }`.
    while let Some(open) = rest.find(['{', ')']) {
        if rest.as_bytes()[open] == b')' {
            break;
        }
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let pair = &rest[open + 1..open + close];
        if let Some((n, name)) = pair.split_once(',') {
            if let Ok(n) = n.trim().parse::<i64>() {
                out.push((n, name.trim().trim_matches('"').to_string()));
            }
        }
        rest = &rest[open + close + 1..];
    }
    out
}

/// The kernel's dev_t as trace events carry it (MAJOR << 20 | MINOR) from a major:minor.
pub fn kernel_dev(major: u32, minor: u32) -> u32 {
    (major << 20) | (minor & 0xfffff)
}

/// "7:0" from a trace event's dev_t.
pub fn dev_name(dev: u32) -> String {
    format!("{}:{}", dev >> 20, dev & 0xfffff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A page as the kernel lays it out: header, then each record with its 4-byte header
    /// (type_len = payload words, time delta in the upper 27 bits).
    fn page(
        layout: &PageLayout,
        start_ts: u64,
        records: &[(u32, Vec<u8>)],
        lost: Option<u64>,
    ) -> Vec<u8> {
        let mut data = Vec::new();
        for (delta, payload) in records {
            assert!(payload.len() % 4 == 0);
            if payload.len() <= 112 {
                let header = ((payload.len() / 4) as u32) | (delta << 5);
                data.extend_from_slice(&header.to_le_bytes());
            } else {
                // Longer records carry their length (plus its own 4 bytes) in array[0].
                data.extend_from_slice(&(delta << 5).to_le_bytes());
                data.extend_from_slice(&(payload.len() as u32 + 4).to_le_bytes());
            }
            data.extend_from_slice(payload);
        }
        let mut commit = data.len() as u64;
        if let Some(n) = lost {
            commit |= MISSED_EVENTS | MISSED_STORED;
            data.extend_from_slice(&n.to_le_bytes()[..layout.long_bytes]);
        }
        let mut out = start_ts.to_le_bytes().to_vec();
        out.extend_from_slice(&commit.to_le_bytes()[..layout.long_bytes]);
        out.extend_from_slice(&data);
        out.resize(4096, 0);
        out
    }

    fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
        buf[at..at + bytes.len()].copy_from_slice(bytes);
    }

    #[test]
    fn header_pages_give_the_layout_of_64_and_32_bit_kernels() {
        let l = PageLayout::parse(fixtures::HEADER_PAGE_6_18, false).expect("6.18");
        assert_eq!((l.long_bytes, l.data_offset), (8, 16));
        let l = PageLayout::parse(fixtures::HEADER_PAGE_4_4_ARMV7, false).expect("4.4");
        assert_eq!((l.long_bytes, l.data_offset), (4, 12));
        assert!(PageLayout::parse("\tfield: u64 timestamp;\toffset:0;\tsize:8;", false).is_err());
    }

    #[test]
    fn every_event_of_this_kernel_is_learned_from_its_format() {
        let layout = PageLayout::parse(fixtures::HEADER_PAGE_6_18, false).expect("layout");
        let mut d = Decoder::new(&layout);
        for (kind, text) in fixtures::FORMATS_6_18 {
            d.learn(*kind, text)
                .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        }
        assert!(EventKind::ALL.iter().all(|k| d.knows(*k)));
    }

    /// A 4.9 board: every event sinkrate reads but the writeback wait (4.9 has none) is
    /// learned, and a request's completion, whose status 4.9 calls `errors`, decodes.
    #[test]
    fn a_4_9_board_s_events_are_learned_and_its_completions_decode() {
        let layout = PageLayout::parse(fixtures::HEADER_PAGE_4_9_AARCH64, false).expect("layout");
        assert_eq!((layout.long_bytes, layout.data_offset), (8, 16));
        let mut d = Decoder::new(&layout);
        let mut complete = 0;
        for (kind, text) in fixtures::FORMATS_4_9_AARCH64 {
            let id = d
                .learn(*kind, text)
                .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            if *kind == EventKind::RequestComplete {
                complete = id;
            }
        }
        let unknown: Vec<EventKind> = EventKind::ALL
            .iter()
            .copied()
            .filter(|k| !d.knows(*k))
            .collect();
        assert_eq!(unknown, [EventKind::WritebackWait]);
        // dev at 8, sector at 16, nr_sector at 24, errors at 28.
        let mut rec = vec![0u8; 48];
        put(&mut rec, 0, &complete.to_le_bytes());
        put(&mut rec, 8, &kernel_dev(179, 0).to_le_bytes());
        put(&mut rec, 16, &2048u64.to_le_bytes());
        put(&mut rec, 24, &256u32.to_le_bytes());
        put(&mut rec, 28, &(-5i32).to_le_bytes());
        let bytes = page(&layout, 10, &[(2, rec)], None);
        let p = decode_page(&layout, &bytes).expect("page");
        assert_eq!(
            d.decode(0, &p.records[0]).expect("decoded").event,
            KernelEvent::RequestComplete {
                dev: kernel_dev(179, 0),
                sector: 2048,
                sectors: 256,
                error: -5,
            }
        );
        // 4.9's flush reasons are its own: 1 was try_to_free_pages (vmscan later).
        let flush = fixtures::FORMATS_4_9_AARCH64
            .iter()
            .find(|(k, _)| *k == EventKind::FlushStart)
            .expect("writeback_start")
            .1;
        assert_eq!(
            symbols(&format::parse(flush).expect("format").print_fmt, "reason")[1],
            (1, "try_to_free_pages".to_string())
        );
    }

    #[test]
    fn a_throttle_pause_decodes_on_6_18_and_on_a_32_bit_4_4_board() {
        // 6.18, x86_64: wb_dirty at 72, pause at 112 (8-byte longs).
        let l64 = PageLayout::parse(fixtures::HEADER_PAGE_6_18, false).expect("layout");
        let mut d = Decoder::new(&l64);
        let id = d
            .learn(EventKind::Throttle, fixtures::FORMATS_6_18[0].1)
            .expect("learn");
        let mut rec = vec![0u8; 144];
        put(&mut rec, 0, &id.to_le_bytes());
        put(&mut rec, 4, &4242i32.to_le_bytes());
        put(&mut rec, 8, b"7:0\0");
        put(&mut rec, 56, &3102u64.to_le_bytes());
        put(&mut rec, 48, &1_050_938u64.to_le_bytes());
        put(&mut rec, 72, &3072u64.to_le_bytes());
        put(&mut rec, 112, &200i64.to_le_bytes());
        let bytes = page(&l64, 1_000, &[(5, rec.clone())], None);
        let p = decode_page(&l64, &bytes).expect("page");
        assert_eq!(p.records.len(), 1);
        let e = d.decode(1, &p.records[0]).expect("decoded");
        assert_eq!((e.ts_ns, e.cpu, e.pid), (1_005, 1, 4242));
        match e.event {
            KernelEvent::Throttle {
                bdi,
                dirty_pages,
                setpoint_pages,
                wb_dirty_pages,
                pause_ms,
                ..
            } => {
                assert_eq!(
                    (
                        bdi.as_str(),
                        dirty_pages,
                        setpoint_pages,
                        wb_dirty_pages,
                        pause_ms
                    ),
                    ("7:0", 3102, 1_050_938, 3072, 200)
                );
            }
            other => panic!("{other:?}"),
        }
        // 4.4, 32-bit ARM: bdi_dirty at 56, pause at 80 (4-byte longs), data at 12.
        let l32 = PageLayout::parse(fixtures::HEADER_PAGE_4_4_ARMV7, false).expect("layout");
        let mut d = Decoder::new(&l32);
        let id = d
            .learn(EventKind::Throttle, fixtures::FORMATS_4_4_ARMV7[0].1)
            .expect("learn");
        let mut rec = vec![0u8; 92];
        put(&mut rec, 0, &id.to_le_bytes());
        put(&mut rec, 4, &77i32.to_le_bytes());
        put(&mut rec, 8, b"179:0\0");
        put(&mut rec, 56, &1234u32.to_le_bytes());
        put(&mut rec, 80, &(-3i32).to_le_bytes());
        let bytes = page(&l32, 50, &[(1, rec)], None);
        let p = decode_page(&l32, &bytes).expect("page");
        match d.decode(0, &p.records[0]).expect("decoded").event {
            KernelEvent::Throttle {
                bdi,
                wb_dirty_pages,
                pause_ms,
                ..
            } => {
                assert_eq!(
                    (bdi.as_str(), wb_dirty_pages, pause_ms),
                    ("179:0", 1234, -3)
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_preempted_thread_reads_runnable_on_4_4_and_6_18() {
        for (header, formats, state_at, long) in [
            (
                fixtures::HEADER_PAGE_6_18,
                fixtures::FORMATS_6_18,
                32usize,
                8usize,
            ),
            (
                fixtures::HEADER_PAGE_4_4_ARMV7,
                fixtures::FORMATS_4_4_ARMV7,
                32,
                4,
            ),
        ] {
            let l = PageLayout::parse(header, false).expect("layout");
            let mut d = Decoder::new(&l);
            let text = formats
                .iter()
                .find(|(k, _)| *k == EventKind::Switch)
                .expect("switch")
                .1;
            let id = d.learn(EventKind::Switch, text).expect("learn");
            let mut rec = vec![0u8; 64];
            put(&mut rec, 0, &id.to_le_bytes());
            put(&mut rec, 24, &10i32.to_le_bytes());
            put(&mut rec, state_at, &0x802u64.to_le_bytes()[..long]);
            let next_at = if long == 8 { 56 } else { 52 };
            put(&mut rec, next_at, &11i32.to_le_bytes());
            let bytes = page(&l, 0, &[(0, rec)], None);
            let p = decode_page(&l, &bytes).expect("page");
            match d.decode(0, &p.records[0]).expect("decoded").event {
                KernelEvent::Switch {
                    prev_pid,
                    prev_state,
                    next_pid,
                } => {
                    assert_eq!((prev_pid, prev_state, next_pid), (10, 0x802, 11));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn time_extends_padding_and_lost_events_are_read() {
        let l = PageLayout::parse(fixtures::HEADER_PAGE_6_18, false).expect("layout");
        // A record, a time extend of 3 << 27 + 1, another record, then padding.
        let mut data = Vec::new();
        data.extend_from_slice(&(1u32 | (10 << 5)).to_le_bytes());
        data.extend_from_slice(&[1, 0, 0, 0]);
        data.extend_from_slice(&(TYPE_TIME_EXTEND | (1 << 5)).to_le_bytes());
        data.extend_from_slice(&3u32.to_le_bytes());
        data.extend_from_slice(&(1u32 | (2 << 5)).to_le_bytes());
        data.extend_from_slice(&[2, 0, 0, 0]);
        data.extend_from_slice(&TYPE_PADDING.to_le_bytes());
        data.extend_from_slice(&0u32.to_le_bytes());
        let commit = data.len() as u64 | MISSED_EVENTS;
        let mut bytes = 100u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(&commit.to_le_bytes());
        bytes.extend_from_slice(&data);
        let p = decode_page(&l, &bytes).expect("page");
        let ts: Vec<u64> = p.records.iter().map(|r| r.ts_ns).collect();
        assert_eq!(ts, vec![110, 110 + (3 << 27) + 1 + 2]);
        assert_eq!(p.lost_before, Lost::Unknown);
        let stored = page(&l, 0, &[(1, vec![0; 8])], Some(37));
        assert_eq!(
            decode_page(&l, &stored).expect("page").lost_before,
            Lost::Count(37)
        );
    }

    #[test]
    fn a_truncated_or_lying_page_is_refused_and_garbage_formats_are_named() {
        let l = PageLayout::parse(fixtures::HEADER_PAGE_6_18, false).expect("layout");
        assert!(decode_page(&l, &[0u8; 10]).is_err());
        let mut lying = page(&l, 0, &[(1, vec![0; 8])], None);
        lying[8..16].copy_from_slice(&100_000u64.to_le_bytes());
        assert!(decode_page(&l, &lying).is_err());
        let mut d = Decoder::new(&l);
        assert!(d.learn(EventKind::Throttle, "garbage\n").is_err());
        let without_pause = fixtures::FORMATS_6_18[0]
            .1
            .replace("field:long pause;", "field:long other;");
        let why = d
            .learn(EventKind::Throttle, &without_pause)
            .expect_err("refused");
        assert!(why.contains("pause"), "{why}");
    }

    #[test]
    fn flush_reasons_are_named_by_the_kernel_s_own_table() {
        let l = PageLayout::parse(fixtures::HEADER_PAGE_6_18, false).expect("layout");
        let mut d = Decoder::new(&l);
        let text = fixtures::FORMATS_6_18
            .iter()
            .find(|(k, _)| *k == EventKind::FlushStart)
            .expect("start")
            .1;
        let id = d.learn(EventKind::FlushStart, text).expect("learn");
        let mut rec = vec![0u8; 80];
        put(&mut rec, 0, &id.to_le_bytes());
        put(&mut rec, 8, b"7:0\0");
        put(&mut rec, 68, &3i32.to_le_bytes());
        let bytes = page(&l, 0, &[(0, rec)], None);
        let p = decode_page(&l, &bytes).expect("page");
        match d.decode(0, &p.records[0]).expect("decoded").event {
            KernelEvent::FlushStart { reason, .. } => assert_eq!(reason, "periodic"),
            other => panic!("{other:?}"),
        }
    }

    /// Where a format file puts each field: name to (offset, size), read with plain
    /// string splitting (the test's own reading, not the decoder's).
    fn offsets(text: &str) -> HashMap<String, (usize, usize)> {
        let mut out = HashMap::new();
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("field:") else {
                continue;
            };
            let parts: Vec<&str> = rest.split(';').map(str::trim).collect();
            let name = parts[0]
                .rsplit(' ')
                .next()
                .expect("a name")
                .split('[')
                .next()
                .expect("a name");
            let value = |key: &str| -> usize {
                parts
                    .iter()
                    .find_map(|p| p.strip_prefix(key))
                    .expect("offset and size")
                    .parse()
                    .expect("a number")
            };
            out.insert(name.to_string(), (value("offset:"), value("size:")));
        }
        out
    }

    /// Each long-term kernel's events: learned from its own format files, the writeback
    /// wait known where that kernel has it (4.14 and 4.19 have none), and one record of each
    /// kind, its fields written where the format file says, decoded to what was written:
    /// the field names each kernel uses (`bdi_dirty`, `error`, `tid`), 4- and 8-byte longs,
    /// its own flush reasons.
    #[test]
    fn every_long_term_kernel_s_events_decode_from_its_own_format_files() {
        for k in fixtures::LONG_TERM {
            let layout = PageLayout::parse(k.header_page, false)
                .unwrap_or_else(|e| panic!("{}: {e}", k.name));
            let mut d = Decoder::new(&layout);
            let mut records = Vec::new();
            let mut expected = Vec::new();
            for (kind, text) in k.formats {
                let id = d
                    .learn(*kind, text)
                    .unwrap_or_else(|e| panic!("{} {kind:?}: {e}", k.name));
                let at = offsets(text);
                let mut rec = vec![0u8; at.values().map(|(o, s)| o + s).max().unwrap_or(8)];
                put(&mut rec, 0, &id.to_le_bytes());
                put(&mut rec, 4, &321i32.to_le_bytes());
                let mut set = |name: &str, value: i64| {
                    // `errors` before 4.13.
                    let name = if name == "error" && !at.contains_key(name) {
                        "errors"
                    } else {
                        name
                    };
                    let (o, size) = at[name];
                    put(&mut rec, o, &value.to_le_bytes()[..size]);
                };
                let event = match kind {
                    EventKind::Throttle => {
                        set("limit", 4000);
                        set("setpoint", 3000);
                        set("dirty", 3100);
                        set("bdi_setpoint", 300);
                        set("bdi_dirty", 310);
                        set("pause", 120);
                        set("paused", 40);
                        KernelEvent::Throttle {
                            bdi: "179:0".into(),
                            limit_pages: 4000,
                            setpoint_pages: 3000,
                            dirty_pages: 3100,
                            wb_setpoint_pages: 300,
                            wb_dirty_pages: 310,
                            pause_ms: 120,
                            paused_ms: 40,
                        }
                    }
                    EventKind::WritebackWait => {
                        set("ino", 12);
                        KernelEvent::WritebackWait {
                            bdi: "179:0".into(),
                            ino: 12,
                        }
                    }
                    EventKind::CommitStart | EventKind::CommitEnd => {
                        set("dev", i64::from(kernel_dev(179, 1)));
                        set("transaction", 77);
                        let (dev, transaction) = (kernel_dev(179, 1), 77);
                        if *kind == EventKind::CommitStart {
                            KernelEvent::CommitStart { dev, transaction }
                        } else {
                            KernelEvent::CommitEnd { dev, transaction }
                        }
                    }
                    EventKind::CommitStats => {
                        set("dev", i64::from(kernel_dev(179, 1)));
                        set("tid", 77);
                        set("blocks", 31);
                        set("handle_count", 9);
                        KernelEvent::CommitStats {
                            dev: kernel_dev(179, 1),
                            transaction: 77,
                            blocks: 31,
                            handles: 9,
                        }
                    }
                    EventKind::FlushStart | EventKind::FlushWritten => {
                        set("nr_pages", 1024);
                        set("reason", 5);
                        if *kind == EventKind::FlushStart {
                            KernelEvent::FlushStart {
                                bdi: "179:0".into(),
                                reason: k.reason_5.into(),
                            }
                        } else {
                            KernelEvent::FlushWritten {
                                bdi: "179:0".into(),
                                pages: 1024,
                                reason: k.reason_5.into(),
                            }
                        }
                    }
                    EventKind::RequestIssue => {
                        set("dev", i64::from(kernel_dev(179, 0)));
                        set("sector", 1 << 33);
                        set("nr_sector", 2560);
                        KernelEvent::RequestIssue {
                            dev: kernel_dev(179, 0),
                            sector: 1 << 33,
                            sectors: 2560,
                            rwbs: "WS".into(),
                        }
                    }
                    EventKind::RequestComplete => {
                        set("dev", i64::from(kernel_dev(179, 0)));
                        set("sector", 1 << 33);
                        set("nr_sector", 2560);
                        set("error", -5);
                        KernelEvent::RequestComplete {
                            dev: kernel_dev(179, 0),
                            sector: 1 << 33,
                            sectors: 2560,
                            error: -5,
                        }
                    }
                    EventKind::Switch => {
                        set("prev_pid", 321);
                        set("prev_state", 2);
                        set("next_pid", 0);
                        KernelEvent::Switch {
                            prev_pid: 321,
                            prev_state: 2,
                            next_pid: 0,
                        }
                    }
                    EventKind::Wakeup => {
                        set("pid", 322);
                        KernelEvent::Wakeup { pid: 322 }
                    }
                    EventKind::SyscallEnter => {
                        set("id", 64);
                        KernelEvent::SyscallEnter { nr: 64 }
                    }
                    EventKind::SyscallExit => {
                        set("id", 64);
                        set("ret", -11);
                        KernelEvent::SyscallExit { nr: 64, ret: -11 }
                    }
                };
                for (field, text) in [("bdi", "179:0"), ("name", "179:0"), ("rwbs", "WS")] {
                    if let Some((o, _)) = at.get(field) {
                        put(&mut rec, *o, text.as_bytes());
                    }
                }
                records.push(rec);
                expected.push(event);
            }
            let missing: Vec<EventKind> = EventKind::ALL
                .iter()
                .copied()
                .filter(|e| !d.knows(*e))
                .collect();
            let has_wait = !k.name.starts_with("4.");
            assert_eq!(
                missing.is_empty(),
                has_wait,
                "{}: {missing:?} not learned",
                k.name
            );
            for (rec, want) in records.into_iter().zip(expected) {
                let bytes = page(&layout, 1_000, &[(3, rec)], None);
                let p = decode_page(&layout, &bytes).expect("page");
                let got = d.decode(2, &p.records[0]).expect("decoded");
                assert_eq!((got.ts_ns, got.cpu, got.pid), (1_003, 2, 321), "{}", k.name);
                assert_eq!(got.event, want, "{}", k.name);
            }
        }
    }
}
