//! fio's group_reporting: jobs of a reporting group that asked for it are summed into one
//! entry named after the group's first job.

use std::borrow::Cow;

use sinkrate_model::JobResult;

/// One reported entry and how many jobs it sums. A job reported alone is borrowed, not
/// copied: a result holds its latency histograms, and a set of thousands of jobs would
/// otherwise hold each twice while it is rendered.
pub type Reported<'a> = (Cow<'a, JobResult>, u32);

pub fn apply_group_reporting(jobs: &[JobResult]) -> Vec<Reported<'_>> {
    let mut out: Vec<Reported<'_>> = Vec::new();
    for job in jobs {
        if job.options.group_reporting {
            if let Some((merged, count)) = out
                .iter_mut()
                .find(|(j, _)| j.group == job.group && j.options.group_reporting)
            {
                merge_into(merged.to_mut(), job);
                *count += 1;
                continue;
            }
        }
        out.push((Cow::Borrowed(job), 1));
    }
    out
}

fn merge_into(into: &mut JobResult, other: &JobResult) {
    into.read.merge(&other.read);
    into.write.merge(&other.write);
    into.trim.merge(&other.trim);
    if into.total_err == 0 {
        into.first_error = other.first_error;
    }
    into.total_err += other.total_err;
    into.sync.merge(&other.sync);
    into.sync_file_ranges += other.sync_file_ranges;
    into.usr_cpu_pct += other.usr_cpu_pct;
    into.sys_cpu_pct += other.sys_cpu_pct;
    into.ctx_switches += other.ctx_switches;
    into.minor_faults += other.minor_faults;
    into.major_faults += other.major_faults;
    into.elapsed_ns = into.elapsed_ns.max(other.elapsed_ns);
    into.files_done += other.files_done;
    if into.error == 0 {
        into.error = other.error;
        into.error_text.clone_from(&other.error_text);
    }
    if let (Some(a), Some(b)) = (&mut into.flush, &other.flush) {
        a.flush_ns = a.flush_ns.max(b.flush_ns);
        a.device_bytes_per_s += b.device_bytes_per_s;
        a.unwritten_at_end_bytes = a.unwritten_at_end_bytes.max(b.unwritten_at_end_bytes);
    }
}
