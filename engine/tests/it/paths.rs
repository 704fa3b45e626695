//! The two ways of reading a file-mode capture — indexed (mappings known before decoding) and
//! streamed (pid-keyed tables placed at the end, as for pipes and zstd) — give identical profiles.

use std::path::Path;

use engine::perf::aggregate::{aggregate, KernelEntries, Request};
use engine::perf::binary::BinaryInfo;
use engine::perf::capture::Input;
use engine::perf::mapping::Rules;
use testsupport::shared_perf as shared;

fn profiles(
    capture: &Path,
    binary: &Path,
    basic: bool,
    stream: bool,
) -> Vec<engine::perf::aggregate::BinaryProfile> {
    let request = Request {
        binaries: vec![BinaryInfo::load(binary).unwrap()],
        discover: None,

        skylake_fix: false,

        kernel_entries: KernelEntries::Skip,
        basic,
        pid: None,
        ignore_build_id: false,
        rules: Rules::Current,
        threads: 2,
        stream,
        trace_order: Default::default(),
    };
    aggregate(
        &Input::File(capture.to_path_buf()),
        &request,
        &engine::io::progress::NoProgress,
    )
    .unwrap()
    .profiles
}

#[test]
fn indexed_and_streamed_reads_agree() {
    let dir = tempfile::tempdir().unwrap();
    let binary = shared("autofdo-test.binary");
    let capture = dir.path().join("generated.data");
    let spec = corpus::LbrCaptureSpec {
        binaries: vec![corpus::LbrBinary {
            path: binary.clone(),
            load_base: None,
        }],
        processes: 3,
        target_bytes: 2 << 20,
        lbr_depth: 32,
        distinct_stacks: 2000,
        kernel_fraction_percent: 10,
        compress: false,
        attr_size: corpus::ATTR_SIZE,
        seed: 5,
        mem_loads: None,
    };
    corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&capture).unwrap()).unwrap();
    let cases = [
        (capture.as_path(), binary.as_path(), false),
        (capture.as_path(), binary.as_path(), true),
        (
            &*shared("autofdo-propeller_sample_1.perf.data"),
            &*shared("autofdo-propeller_sample_1.bin"),
            false,
        ),
    ];
    for (capture, binary, basic) in cases {
        let indexed = profiles(capture, binary, basic, false);
        let streamed = profiles(capture, binary, basic, true);
        let p = &indexed[0];
        assert!(
            p.traces.len() + p.ips.len() > 10,
            "{}: nearly empty profile",
            capture.display()
        );
        assert_eq!(p.traces, streamed[0].traces, "{}", capture.display());
        assert_eq!(
            (&p.ips, &p.events, p.samples, p.pids),
            (
                &streamed[0].ips,
                &streamed[0].events,
                streamed[0].samples,
                streamed[0].pids
            )
        );
    }
}
