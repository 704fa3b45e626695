//! Size table of GCOV v3 vs v4 vs v4 compact (like section 7 of the v4 proposal) for the
//! given sample profiles (any format profmill reads). Profiles that gcov cannot hold
//! (contexts, locations beyond 16 bits) are listed as skipped.
//! usage: v4_sizes FILE...

use formats::sampleprof::gcov::{self, Version};
use formats::sampleprof::gcov_v4::{self as v4, Encoding};
use formats::sampleprof::{self as sp};

fn human(n: usize) -> String {
    let n = n as f64;
    if n >= 1e6 {
        format!("{:.1}M", n / 1_048_576.0)
    } else if n >= 1e4 {
        format!("{:.0}K", n / 1024.0)
    } else {
        format!("{n}")
    }
}

fn pct(new: usize, old: usize) -> String {
    format!("{:+.0}%", (new as f64 / old as f64 - 1.0) * 100.0)
}

fn main() {
    let mut total = [0usize; 3];
    let mut seen: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
    println!("| profile | v3 | v4 | v4c | v4 | v4c |");
    println!("|---|---:|---:|---:|---:|---:|");
    for path in std::env::args().skip(1) {
        let name = std::path::Path::new(&path)
            .file_name()
            .map_or(path.clone(), |n| n.to_string_lossy().into_owned());
        let Ok(data) = std::fs::read(&path) else {
            eprintln!("skipped {path}: unreadable");
            continue;
        };
        if !seen.insert(data.clone()) {
            continue; // the same file in several releases of the corpus
        }
        let Ok(profile) = sp::read(&data) else {
            eprintln!("skipped {path}: not a sample profile");
            continue;
        };
        let mut v3 = Vec::new();
        if gcov::write(&profile, Version::V3, &mut v3).is_err() {
            eprintln!("skipped {path}: gcov cannot hold it");
            continue;
        }
        // What v3 keeps, so that the three files hold the same data.
        let profile = gcov::read(&v3).expect("our v3 reads back");
        let mut sizes = [v3.len(), 0, 0];
        for (i, e) in [(1, Encoding::Binary), (2, Encoding::Compact)] {
            let mut out = Vec::new();
            v4::write(&profile, e, &mut out).expect("v4 holds what v3 holds");
            assert_eq!(v4::read(&out).expect("reads back"), profile);
            sizes[i] = out.len();
        }
        for (t, s) in total.iter_mut().zip(sizes) {
            *t += s;
        }
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            human(sizes[0]),
            human(sizes[1]),
            human(sizes[2]),
            pct(sizes[1], sizes[0]),
            pct(sizes[2], sizes[0])
        );
    }
    println!(
        "| **total** | {} | {} | {} | {} | {} |",
        human(total[0]),
        human(total[1]),
        human(total[2]),
        pct(total[1], total[0]),
        pct(total[2], total[0])
    );
}
