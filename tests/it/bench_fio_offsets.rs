//! Where I/O lands, beside fio: `random_distribution` (zipf, pareto, normal, zoned,
//! zoned_abs), the `rw=MODE:N` offset modifier and `rw_sequencer`, read from `log_offset`
//! latency logs of the same job run by both.

use crate::common;

use std::collections::HashMap;

use common::{fio_json, fio_or_skip, sinkrate_json};

/// Runs one job with a latency log carrying offsets, by fio or by sinkrate.
fn run_logged(tool: &str, args: &[&str]) -> Vec<u64> {
    let d = tempfile::tempdir().expect("tempdir");
    let all: Vec<&str> = [args, &["--write_lat_log=o", "--log_offset=1"]].concat();
    if tool == "fio" {
        fio_json(d.path(), &all);
    } else {
        sinkrate_json(d.path(), &all);
    }
    common::logged_offsets(d.path(), "o", 1)
}

/// How the I/Os spread over `blocks` blocks of 4 KiB: the share of blocks touched, the
/// share of I/O on the hottest 1% and 10% of blocks, and on the first 5% of the file.
fn spread(offsets: &[u64], blocks: u64) -> [f64; 4] {
    let mut hits: HashMap<u64, u64> = HashMap::new();
    for o in offsets {
        *hits.entry(o / 4096).or_default() += 1;
    }
    let mut counts: Vec<u64> = hits.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let total = offsets.len() as f64;
    let top = |n: u64| counts.iter().take(n as usize).sum::<u64>() as f64 / total;
    let first = offsets.iter().filter(|o| *o / 4096 < blocks / 20).count() as f64 / total;
    [
        hits.len() as f64 / blocks as f64,
        top(blocks / 100),
        top(blocks / 10),
        first,
    ]
}

/// Each skewed distribution gives the same shape as fio's: blocks touched and the shares of
/// the hottest blocks and of the first zone within 0.03 (25,600 I/Os over 4,096 blocks).
#[test]
fn random_distributions_spread_io_as_fios_do() {
    if !fio_or_skip("random_distributions_spread_io_as_fios_do") {
        return;
    }
    for dist in [
        "zipf:1.2",
        "zipf:0.8",
        "pareto:0.2",
        "normal:10",
        "zoned:50/5:30/15:20/",
        "zoned_abs:60/1m:40/15m",
        "zipf:1.2:0.25",
    ] {
        let option = format!("--random_distribution={dist}");
        let args = [
            "--name=skew",
            "--ioengine=null",
            "--rw=randread",
            "--size=16m",
            "--io_size=100m",
            "--bs=4k",
            option.as_str(),
        ];
        let fio = spread(&run_logged("fio", &args), 4096);
        let ours = spread(&run_logged("sinkrate", &args), 4096);
        let names = ["blocks touched", "hottest 1%", "hottest 10%", "first 5%"];
        for i in 0..4 {
            assert!(
                (fio[i] - ours[i]).abs() < 0.03,
                "{dist}: {}: fio {:.3}, sinkrate {:.3}",
                names[i],
                fio[i],
                ours[i]
            );
        }
    }
}

/// `rw=write:4k` leaves a hole after each write and wraps; `rw=read:-8k` reads backwards
/// from the end: the same offsets as fio's, in the same order.
#[test]
fn offset_modifiers_on_sequential_modes_match_fio_exactly() {
    if !fio_or_skip("offset_modifiers_on_sequential_modes_match_fio_exactly") {
        return;
    }
    for mode in ["--rw=write:4k", "--rw=read:-8k", "--rw=write:112k"] {
        let args = [
            "--name=holes",
            "--filename=data",
            "--size=256k",
            "--bs=4k",
            mode,
        ];
        let fio = run_logged("fio", &args);
        let ours = run_logged("sinkrate", &args);
        assert_eq!(fio.len(), 64, "{mode}");
        assert_eq!(ours, fio, "{mode}");
    }
    // Holes past which the next block does not fit end the pass (fio's t0007): 8 blocks
    // of 16k, each after a 8k hole, in 200k.
    let args = [
        "--name=holes",
        "--filename=data",
        "--size=200k",
        "--bs=16k",
        "--rw=read:8k",
    ];
    let fio = run_logged("fio", &args);
    assert_eq!(fio.len(), 8);
    assert_eq!(run_logged("sinkrate", &args), fio);
}

/// `zonemode=strided`: zonesize bytes in a zone, then zonerange + zoneskip on, back to the
/// start past the end: the same offsets as fio's for sequential jobs; a random job stays in
/// the zone fio's is in for each I/O.
#[test]
fn strided_zones_place_io_as_fios_do() {
    if !fio_or_skip("strided_zones_place_io_as_fios_do") {
        return;
    }
    for extra in [
        &[
            "--rw=read",
            "--zonemode=strided",
            "--zonesize=256k",
            "--zoneskip=768k",
        ][..],
        &[
            "--rw=write",
            "--zonemode=strided",
            "--zonesize=256k",
            "--zonerange=512k",
            "--zoneskip=768k",
        ],
        &[
            "--rw=read",
            "--zonemode=strided",
            "--zonesize=512k",
            "--zonerange=128k",
            "--zoneskip=1m",
        ],
    ] {
        let args: Vec<&str> = [
            &["--name=zones", "--filename=data", "--size=8m", "--bs=64k"][..],
            extra,
        ]
        .concat();
        let fio = run_logged("fio", &args);
        let ours = run_logged("sinkrate", &args);
        assert_eq!(fio.len(), 128, "{extra:?}");
        assert_eq!(ours, fio, "{extra:?}");
    }
    let args = [
        "--name=zones",
        "--filename=data",
        "--size=8m",
        "--bs=4k",
        "--rw=randread",
        "--zonemode=strided",
        "--zonesize=64k",
        "--zonerange=256k",
        "--zoneskip=256k",
    ];
    let fio = run_logged("fio", &args);
    let ours = run_logged("sinkrate", &args);
    let zones = |o: &[u64]| o.iter().map(|x| x / (512 << 10)).collect::<Vec<_>>();
    assert_eq!(zones(&ours), zones(&fio), "each I/O in fio's zone");
    assert!(
        ours.iter().all(|x| x % (512 << 10) < 256 << 10),
        "within zonerange"
    );
    // With the random map, each zone's blocks are visited once before any again, as fio's
    // (its t/strided.py): a zone of 16 blocks, 4 passes over it per zone, from offset=
    // on the null engine too.
    for engine in ["--ioengine=psync", "--ioengine=null"] {
        let args = [
            "--name=zones",
            "--filename=data",
            "--size=1m",
            "--offset=256k",
            "--bs=4k",
            "--rw=randread",
            "--zonemode=strided",
            "--zonerange=64k",
            "--zonesize=256k",
            engine,
        ];
        for (tool, offsets) in [
            ("fio", run_logged("fio", &args)),
            ("sinkrate", run_logged("sinkrate", &args)),
        ] {
            assert_eq!(offsets.len(), 256, "{tool} {engine}");
            for (n, visit) in offsets.chunks(16).enumerate() {
                let zone_start = (256 << 10) + (n as u64 / 4) * (64 << 10);
                let mut blocks: Vec<u64> = visit
                    .iter()
                    .map(|o| {
                        assert!(
                            (zone_start..zone_start + (64 << 10)).contains(o),
                            "{tool} {engine}: {o} outside the zone at {zone_start}"
                        );
                        (o - zone_start) / 4096
                    })
                    .collect();
                blocks.sort_unstable();
                assert_eq!(blocks, (0..16).collect::<Vec<u64>>(), "{tool} {engine}");
            }
        }
    }
    // fio 3.33 refuses a zonesize without zonemode=strided; so does sinkrate, in one line.
    let d = tempfile::tempdir().expect("tempdir");
    common::refuses(
        d.path(),
        &["--name=z", "--size=1m", "--zonesize=256k"],
        &["zonemode=strided"],
    );
}

/// `rw=randread:N` takes a random offset on the first of every N I/Os and continues
/// sequentially (or, with `rw_sequencer=identical`, repeats the offset) in between.
#[test]
fn rw_sequencer_groups_io_as_fio_does() {
    if !fio_or_skip("rw_sequencer_groups_io_as_fio_does") {
        return;
    }
    for (every, sequencer) in [(4u64, "sequential"), (3, "identical")] {
        let mode = format!("--rw=randread:{every}");
        let seq = format!("--rw_sequencer={sequencer}");
        let args = [
            "--name=groups",
            "--filename=data",
            "--size=1m",
            "--bs=4k",
            "--norandommap",
            mode.as_str(),
            seq.as_str(),
        ];
        for tool in ["fio", "sinkrate"] {
            let o = run_logged(tool, &args);
            assert_eq!(o.len(), 256, "{tool} {sequencer}");
            let mut new_offsets = 0;
            for i in 1..o.len() {
                let follows = match sequencer {
                    "identical" => o[i] == o[i - 1],
                    _ => o[i] == o[i - 1] + 4096,
                };
                if i as u64 % every == 0 {
                    new_offsets += u64::from(!follows);
                } else if o[i - 1] + 4096 < 1 << 20 {
                    assert!(follows, "{tool} {sequencer}: I/O {i}: {:?}", &o[..i + 1]);
                }
            }
            // A random draw may land on the next block by chance; nearly all do not.
            assert!(
                new_offsets > 256 / every - 5,
                "{tool} {sequencer}: {new_offsets}"
            );
        }
    }
}

/// `random_distribution=sequence:2,0,1` (newer than the fio here; checked against its
/// documentation): the blocks in that order, repeated, or with `random_sequence_stride=1`
/// advanced by the sequence's length each cycle.
#[test]
fn sequence_distribution_visits_the_blocks_its_documentation_lists() {
    for (stride, expected) in [("0", [2u64, 0, 1, 2, 0, 1]), ("1", [2, 0, 1, 5, 3, 4])] {
        let option = format!("--random_sequence_stride={stride}");
        let o = run_logged(
            "sinkrate",
            &[
                "--name=seq",
                "--ioengine=null",
                "--rw=randread",
                "--bs=4k",
                "--size=48k",
                "--io_size=24k",
                "--random_distribution=sequence:2,0,1",
                option.as_str(),
            ],
        );
        let blocks: Vec<u64> = o.iter().map(|x| x / 4096).collect();
        assert_eq!(blocks, expected, "stride {stride}");
    }
}
