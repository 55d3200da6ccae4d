//! The configurations a search tries, in families: the kernel's writeback knobs, the
//! recorder's own choices (which a user changes in the app), and the two together.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sinkrate_record::config::WriteMode;
use sinkrate_record::session::Session;
use sinkrate_settings::Setting;

/// A change to the recorder itself: what the app would do differently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "knob", rename_all = "snake_case")]
pub enum RecorderChange {
    WriteMode {
        mode: WriteMode,
    },
    Buffers {
        buffers: usize,
    },
    FdatasyncEvery {
        #[serde(with = "sinkrate_model::units::seconds")]
        every_s: Duration,
    },
}

impl RecorderChange {
    /// In the words of `sinkrate record`'s flags.
    pub fn flag(&self) -> String {
        match self {
            RecorderChange::WriteMode { mode } => {
                format!("--write-mode {}", format!("{mode:?}").to_lowercase())
            }
            RecorderChange::Buffers { buffers } => format!("--buffers {buffers}"),
            RecorderChange::FdatasyncEvery { every_s } => {
                format!("--fdatasync-every {}s", every_s.as_secs_f64())
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub label: String,
    /// System settings, applied for the candidate's runs through the journal (temporary).
    pub system: Vec<(Setting, String)>,
    pub recorder: Vec<RecorderChange>,
}

impl Candidate {
    /// The user's session with this candidate's recorder changes.
    pub fn session(&self, base: &Session) -> Session {
        let mut s = base.clone();
        for c in &self.recorder {
            match c {
                RecorderChange::WriteMode { mode } => s.record.write_mode = *mode,
                RecorderChange::Buffers { buffers } => s.record.buffers = *buffers,
                RecorderChange::FdatasyncEvery { every_s } => {
                    s.record.fdatasync_every = Some(*every_s)
                }
            }
        }
        s
    }

    /// The dirty_expire + writeback interval in force for this candidate, in seconds: its
    /// runs must last past the first flush of expired data, where the stalls are.
    pub fn writeback_cycle_s(&self, expire_cs: u64, writeback_cs: u64) -> f64 {
        let get = |name: &str, default: u64| {
            self.system
                .iter()
                .find(|(s, _)| *s == sysctl(name))
                .and_then(|(_, v)| v.parse::<u64>().ok())
                .unwrap_or(default)
        };
        (get("vm/dirty_expire_centisecs", expire_cs)
            + get("vm/dirty_writeback_centisecs", writeback_cs)) as f64
            / 100.0
    }

    /// `sinkrate tune apply` arguments for the system part.
    pub fn settings_args(&self) -> Vec<String> {
        self.system
            .iter()
            .map(|(s, v)| format!("{s}={v}"))
            .collect()
    }
}

fn sysctl(name: &str) -> Setting {
    Setting::Sysctl { name: name.into() }
}

/// The candidates for `base`, the baseline first. `system`: whether system settings may be
/// tried (root); without it only the recorder's own knobs are.
pub fn candidates(base: &Session, system: bool) -> Vec<Candidate> {
    let rate = base.record.requested_bytes_per_s().max(1.0);
    let buffered = base.record.write_mode == WriteMode::Buffered;
    let more_buffers = (base.record.buffers * 4).max(16);
    let fast_writeback = vec![
        (sysctl("vm/dirty_expire_centisecs"), "100".to_string()),
        (sysctl("vm/dirty_writeback_centisecs"), "100".to_string()),
    ];
    // Background writeback from about one second of the stream, the hard limit at four:
    // the flusher starts early and writes little at a time.
    let background = ((rate as u64).max(4 << 20) >> 20 << 20).max(4 << 20);
    let small_limits = vec![
        (sysctl("vm/dirty_background_bytes"), background.to_string()),
        (
            sysctl("vm/dirty_bytes"),
            (background * 4).max(16 << 20).to_string(),
        ),
    ];
    let mut out = vec![Candidate {
        label: "baseline (as configured)".into(),
        system: Vec::new(),
        recorder: Vec::new(),
    }];
    let mut add = |label: &str, system: Vec<(Setting, String)>, recorder: Vec<RecorderChange>| {
        out.push(Candidate {
            label: label.into(),
            system,
            recorder,
        })
    };
    if system && buffered {
        add("writeback 100/100 cs", fast_writeback.clone(), Vec::new());
        add(
            "writeback 100/100 cs + small dirty limits",
            [fast_writeback.clone(), small_limits.clone()].concat(),
            Vec::new(),
        );
    }
    add(
        &format!("{more_buffers} capture buffers"),
        Vec::new(),
        vec![RecorderChange::Buffers {
            buffers: more_buffers,
        }],
    );
    if buffered {
        add(
            "O_DIRECT writes",
            Vec::new(),
            vec![RecorderChange::WriteMode {
                mode: WriteMode::Direct,
            }],
        );
        add(
            "fdatasync every 1 s",
            Vec::new(),
            vec![RecorderChange::FdatasyncEvery {
                every_s: Duration::from_secs(1),
            }],
        );
    }
    if system && buffered {
        add(
            &format!("writeback 100/100 cs + {more_buffers} capture buffers"),
            fast_writeback.clone(),
            vec![RecorderChange::Buffers {
                buffers: more_buffers,
            }],
        );
        add(
            "writeback 100/100 cs + small dirty limits + fdatasync every 1 s",
            [fast_writeback, small_limits].concat(),
            vec![RecorderChange::FdatasyncEvery {
                every_s: Duration::from_secs(1),
            }],
        );
    }
    out
}
