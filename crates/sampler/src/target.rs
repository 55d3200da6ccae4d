//! Which devices a directory's writes reach, as the kernel's trace events name them: what
//! [`crate::causes::Account`] counts as the target's requests, commits and writeback.

use std::path::Path;

use sinkrate_procparse::trace::kernel_dev;

use crate::causes::Target;

/// The devices a directory is stored on, as trace events name them: its filesystem's
/// device, the whole disk, the backing device's bdi name.
pub fn target_of(dir: &Path) -> Target {
    let root = sinkrate_sys::SysRoot::live();
    let mount = std::fs::canonicalize(dir)
        .ok()
        .and_then(|path| sinkrate_sys::mounts::resolve(&root, &path.to_string_lossy()).ok());
    target_of_mount(mount.as_ref())
}

/// [`target_of`] for a mount already resolved (a run resolves its target once).
pub fn target_of_mount(mount: Option<&sinkrate_model::facts::Target>) -> Target {
    let mut target = Target {
        page_bytes: sinkrate_sys::page_size(),
        ..Target::default()
    };
    let root = sinkrate_sys::SysRoot::live();
    let Some(mount) = mount else {
        return target;
    };
    target.fs_dev = Some(kernel_dev(mount.major, mount.minor));
    let mut disk = (mount.major, mount.minor);
    if let Some(sys) = root.canonical(&format!("/sys/dev/block/{}:{}", mount.major, mount.minor)) {
        if root.exists(&format!("{sys}/partition")) {
            let parent = sys
                .rsplit_once('/')
                .map_or(sys.as_str(), |(p, _)| p)
                .to_string();
            if let Some((ma, mi)) = root
                .attr(&format!("{parent}/dev"))
                .and_then(|d| {
                    d.split_once(':')
                        .map(|(a, b)| (a.to_string(), b.to_string()))
                })
                .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            {
                disk = (ma, mi);
            }
        }
        target.disk = Some(kernel_dev(disk.0, disk.1));
    }
    target.bdi = Some(format!("{}:{}", disk.0, disk.1));
    target
}
