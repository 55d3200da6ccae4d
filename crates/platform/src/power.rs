//! A device whose power a session can cut and bring back. The recorder's `--power-cut-at`
//! asks for one; an emulated card (`sinkrate-emulate`) is one. The trait lives here, below
//! both, so that the recorder does not depend on the emulator.

/// What the device said when the power came back.
#[derive(Debug, Clone, Default)]
pub struct Restored {
    /// Bytes the device's volatile cache held, and lost, at the cut.
    pub cache_lost_bytes: Option<u64>,
    /// What the kernel said while mounting again (journal recovery, orphan cleanup).
    pub kernel_said: Vec<String>,
}

/// Something whose power can be cut and brought back.
pub trait PowerSwitch: Send + Sync + std::fmt::Debug {
    fn cut(&self) -> Result<(), String>;
    /// Brings the power back and the filesystem mounted again; says what the device and the
    /// kernel reported on the way.
    fn restore(&self) -> Result<Restored, String>;
}
