//! Facts about the machine and its storage as results carry them: what sys reads (mounts,
//! block devices, USB paths, swap, free space, memory and the vm settings) in the form
//! every report writes and reads back. Pure data: reading them is sys's job.

pub mod bdi;
pub mod device;
pub mod memory;
pub mod mount;
pub mod space;
pub mod usb;

pub use bdi::BdiLimits;
pub use device::{BlockDevice, Bus, Partition, Queue};
pub use memory::{JournaledSetting, Memory};
pub use mount::Target;
pub use space::{FsSpace, SwapArea};
pub use usb::{UsbNode, UsbPath};
