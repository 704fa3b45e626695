//! `profmill llvm-profdata merge|show --sample` (the drop-in, also through a link named
//! `llvm-profdata`) against llvm-profdata-19, run side by side on the same command lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testsupport::{
    existing, have_tool, shared_corpus, LLVM_PROFDATA_19 as LLVM_PROFDATA, LLVM_PROFDATA_22,
};

fn have_llvm() -> bool {
    have_tool(LLVM_PROFDATA)
}

fn corpus_dir(release: &str) -> Option<PathBuf> {
    existing(shared_corpus("llvm-profdata").join(release))
}

fn drop_in(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_profmill"))
        .arg("llvm-profdata")
        .args(args)
        .output()
        .unwrap()
}

fn reference(args: &[&str]) -> Output {
    Command::new(LLVM_PROFDATA).args(args).output().unwrap()
}

/// Runs both tools with `args` (`OUT` replaced by each tool's own output path) and returns
/// (reference output, ours), or `None` when llvm-profdata refuses the command, which profmill
/// must then refuse too.
fn both(dir: &Path, args: &[&str]) -> Option<(Vec<u8>, Vec<u8>)> {
    let run = |tool: &dyn Fn(&[&str]) -> Output, out: &Path| {
        let out = out.to_str().unwrap();
        let a: Vec<String> = args.iter().map(|a| a.replace("OUT", out)).collect();
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        tool(&a)
    };
    let (ref_path, our_path) = (dir.join("ref.out"), dir.join("our.out"));
    let _ = std::fs::remove_file(&ref_path);
    let _ = std::fs::remove_file(&our_path);
    let r = run(&reference, &ref_path);
    let o = run(&drop_in, &our_path);
    if r.status.code().is_none() {
        // llvm-profdata-19 crashes on some commands (e.g. `--detailed-summary` on an ExtBinary
        // profile without a summary section): nothing to compare.
        eprintln!("note: llvm-profdata-19 crashed on {args:?}");
        return None;
    }
    if !r.status.success() {
        assert!(
            !o.status.success(),
            "llvm-profdata refuses {args:?} ({}) but profmill accepts it",
            String::from_utf8_lossy(&r.stderr)
        );
        return None;
    }
    assert!(
        o.status.success(),
        "profmill fails on {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let read = |p: &Path, stdout: Vec<u8>| std::fs::read(p).unwrap_or(stdout);
    Some((read(&ref_path, r.stdout), read(&our_path, o.stdout)))
}

/// Sample profiles of one corpus release directory (every encoding llvm-profdata reads).
fn sample_profiles(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            n.contains("sample")
                || n.ends_with(".afdo")
                || n.ends_with(".afdotext")
                || n.ends_with(".gcov")
                || n.contains("extbin")
                || n.starts_with("cs")
                || n.contains("flatten")
        })
        .filter(|p| !p.to_str().unwrap().ends_with(".remap"))
        .collect();
    v.sort();
    v
}

/// Whether a (text) profile is context-sensitive.
fn is_cs(input: &str) -> bool {
    std::fs::read(input).is_ok_and(|t| t.windows(2).any(|w| w == b"\n[") || t.starts_with(b"["))
}

/// ExtBinary output of context-sensitive profiles, whose FuncMetadata records LLVM writes in
/// the order of a hash map keyed by a hash of the whole context (not modelled): compared by
/// what llvm-profdata reads back instead.
fn same_when_read_back(dir: &Path, ours: &[u8], theirs: &[u8]) -> bool {
    let show = |bytes: &[u8], name: &str| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let o = reference(&["merge", "--sample", "--text", p.to_str().unwrap()]);
        assert!(o.status.success());
        o.stdout
    };
    show(ours, "ours.prof") == show(theirs, "theirs.prof")
}

#[test]
fn merge_sample_matches_llvm_profdata_on_the_corpus() {
    let Some(corpus) = corpus_dir("llvm-19") else {
        return;
    };
    if !have_llvm() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let encodings: &[&[&str]] = &[
        &["--text"],
        &["--binary"],
        &[],
        &["--extbinary", "--use-md5"],
        &["--compress-all-sections", "--gen-partial-profile"],
        &["--text", "--convert-sample-profile-layout=flat"],
    ];
    let (mut exact, mut read_back, mut refused) = (0, 0, 0);
    for input in sample_profiles(&corpus) {
        let input = input.to_str().unwrap();
        for enc in encodings {
            let mut args = vec!["merge", "--sample"];
            args.extend_from_slice(enc);
            args.extend_from_slice(&[input, "-o", "OUT"]);
            match both(d, &args) {
                None => refused += 1,
                Some((theirs, ours)) if theirs == ours => exact += 1,
                Some((theirs, ours)) => {
                    let text = enc.contains(&"--text") || enc.contains(&"--binary");
                    assert!(!text, "{args:?}: output differs from llvm-profdata-19");
                    // Only context-sensitive profiles keep LLVM's hash-map metadata order
                    // unmodelled.
                    assert!(
                        is_cs(input),
                        "{args:?}: ExtBinary differs from llvm-profdata-19"
                    );
                    assert!(
                        same_when_read_back(d, &ours, &theirs),
                        "{args:?}: ExtBinary differs from llvm-profdata-19 even when read back"
                    );
                    read_back += 1;
                }
            }
        }
    }
    eprintln!(
        "{exact} byte-identical, {read_back} equal when read back, {refused} refused by both"
    );
    assert!(exact >= 90, "too few comparisons: {exact}");
}

#[test]
fn merge_sample_options_match_llvm_profdata() {
    let (Some(c11), Some(c19)) = (corpus_dir("llvm-11"), corpus_dir("llvm-19")) else {
        return;
    };
    if !have_llvm() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let foo = c11.join("weight-sample-foo.proftext");
    let bar = c11.join("weight-sample-bar.proftext");
    let (foo, bar) = (foo.to_str().unwrap(), bar.to_str().unwrap());
    let list = d.join("inputs.txt");
    std::fs::write(&list, format!("# comment\n 2,{foo}\n{bar}\n\n")).unwrap();
    let syms = d.join("syms.txt");
    std::fs::write(&syms, "  zeta \nalpha\n\nfoo\n").unwrap();
    let remap = shared_corpus("llvm-profdata/llvm-14/sample-remap.remap");
    let remap_input = remap.with_file_name("sample-remap.proftext");
    let ext_with_syms = d.join("syms.extbin");
    let o = reference(&[
        "merge",
        "--sample",
        "--prof-sym-list",
        syms.to_str().unwrap(),
        foo,
        "-o",
        ext_with_syms.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let ext_with_syms = ext_with_syms.to_str().unwrap();
    let weighted = format!("--weighted-input=3,{bar}");
    let bad = d.join("bad.txt");
    std::fs::write(&bad, "not a profile\n").unwrap();
    let bad = bad.to_str().unwrap().to_string();
    let list_arg = format!("-f={}", list.display());
    let syms_arg = format!("--prof-sym-list={}", syms.display());
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["merge", "--sample", "--text", foo, &weighted, "-o", "OUT"],
        vec![
            "merge",
            "-sample",
            "-extbinary",
            "-f",
            list.to_str().unwrap(),
            "--output=OUT",
        ],
        vec!["merge", "--sample", "--binary", &list_arg, bar, "-o", "OUT"],
        vec!["merge", "--sample", &syms_arg, foo, "-o", "OUT"],
        vec![
            "merge",
            "--sample",
            &syms_arg,
            "--compress-all-sections",
            foo,
            bar,
            "-o",
            "OUT",
        ],
        vec!["merge", "--sample", "--text", ext_with_syms, "-o", "OUT"],
        vec!["merge", "--sample", ext_with_syms, "-o", "OUT"],
        vec![
            "merge",
            "--sample",
            "--drop-profile-symbol-list",
            ext_with_syms,
            "-o",
            "OUT",
        ],
        vec!["merge", "--sample", "--text", "--use-md5", foo, "-o", "OUT"],
        vec!["merge", "--sample", "--text", foo],
        vec![
            "merge",
            "--sample",
            "--dump-input-file-list",
            foo,
            &weighted,
            &list_arg,
        ],
        vec!["merge", "--sample", "--gcc", foo, "-o", "OUT"],
        vec![
            "merge",
            "--sample",
            "--failure-mode=all",
            "--text",
            foo,
            "-o",
            "OUT",
            &bad,
        ],
        vec![
            "merge",
            "--sample",
            "--failure-mode=any",
            foo,
            "-o",
            "OUT",
            &bad,
        ],
        vec![
            "merge",
            "--sample",
            "--text",
            "--weighted-input=0,x",
            "-o",
            "OUT",
        ],
        vec!["merge", "--sample", "--no-such-option", foo, "-o", "OUT"],
        // Several inputs of every kind, merged.
        vec!["merge", "--sample", "--text", "-o", "OUT"],
    ];
    let all: Vec<String> = sample_profiles(&c19)
        .iter()
        .filter(|p| {
            let n = p.to_str().unwrap();
            !n.contains("cs") && !n.contains("probe") && !n.contains("flatten")
        })
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    let last = cases.len() - 1;
    cases[last].extend(all.iter().map(String::as_str));
    let remap_cmd = [
        "merge",
        "--sample",
        "--text",
        "-r",
        remap.to_str().unwrap(),
        remap_input.to_str().unwrap(),
        "-o",
        "OUT",
    ];
    if remap.exists() {
        cases.push(remap_cmd.to_vec());
    }
    for args in &cases {
        if let Some((theirs, ours)) = both(d, args) {
            assert!(
                theirs == ours,
                "{args:?}: differs from llvm-profdata-19:\n--- ours\n{}\n--- llvm\n{}",
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs)
            );
        }
    }
}

#[test]
fn merge_warnings_match_llvm_profdata() {
    let Some(c11) = corpus_dir("llvm-11") else {
        return;
    };
    if !have_llvm() {
        return;
    }
    let foo = c11.join("weight-sample-foo.proftext");
    let args = [
        "merge",
        "--sample",
        "--text",
        "--use-md5",
        "--compress-all-sections",
        "--gen-partial-profile",
        foo.to_str().unwrap(),
    ];
    let (r, o) = (reference(&args), drop_in(&args));
    assert!(r.status.success() && o.status.success());
    assert_eq!(r.stdout, o.stdout);
    let warnings = |e: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(e)
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(warnings(&r.stderr), warnings(&o.stderr));
    assert_eq!(warnings(&o.stderr).len(), 3);
}

#[test]
fn show_sample_matches_llvm_profdata() {
    let (Some(c19), Some(c11)) = (corpus_dir("llvm-19"), corpus_dir("llvm-11")) else {
        return;
    };
    if !have_llvm() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // An ExtBinary profile with a symbol list and compressed sections for the section dump.
    let ext = d.join("in.extbin");
    let syms = d.join("syms.txt");
    std::fs::write(&syms, "b\na\n").unwrap();
    let hot = c19.join("sample-hot-func-list.proftext");
    let o = reference(&[
        "merge",
        "--sample",
        "--compress-all-sections",
        "--use-md5",
        &format!("--prof-sym-list={}", syms.display()),
        hot.to_str().unwrap(),
        "-o",
        ext.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let (ext, hot) = (ext.to_str().unwrap(), hot.to_str().unwrap());
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["show", "--sample", "--detailed-summary", hot],
        vec!["show", "--sample", "--hot-func-list", hot],
        vec!["show", "--sample", "--topn=3", hot],
        vec!["show", "--sample", "-topn", "2", "--hot-func-list", hot],
        vec!["show", "--sample", "--function=Func2", hot],
        vec!["show", "--sample", "--function", "nosuch", hot],
        vec![
            "show",
            "--sample",
            "--function=main",
            "--all-functions",
            hot,
        ],
        vec!["show", "--sample", "--show-sec-info-only", ext],
        vec!["show", "--sample", "--show-sec-info-only", hot],
        vec!["show", "--sample", "--show-prof-sym-list", ext],
        vec!["show", "--sample", "--function=Func3", ext],
        vec!["show", "--sample", "--detailed-summary", ext, "-o", "OUT"],
        vec!["show", "--sample", "--bogus", hot],
    ];
    let inputs: Vec<String> = sample_profiles(&c19)
        .into_iter()
        .chain(sample_profiles(&c11))
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    for i in &inputs {
        cases.push(vec!["show", "--sample", i]);
        cases.push(vec!["show", "--sample", "--detailed-summary", i]);
        // Equal totals are listed in the order of LLVM's hash map.
        cases.push(vec!["show", "--sample", "--hot-func-list", i]);
    }
    let mut compared = 0;
    for args in &cases {
        if let Some((theirs, ours)) = both(d, args) {
            assert!(
                theirs == ours,
                "{args:?}: differs from llvm-profdata-19:\n--- ours\n{}\n--- llvm\n{}",
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs)
            );
            compared += 1;
        }
    }
    assert!(compared > 40, "too few comparisons: {compared}");
}

#[test]
fn llvm_profdata_link_runs_the_sample_drop_in() {
    let Some(c11) = corpus_dir("llvm-11") else {
        return;
    };
    if !have_llvm() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let link = tmp.path().join("llvm-profdata");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_profmill"), &link).unwrap();
    let foo = c11.join("weight-sample-foo.proftext");
    let args = [
        "show",
        "--sample",
        "--detailed-summary",
        foo.to_str().unwrap(),
    ];
    let ours = Command::new(&link).args(args).output().unwrap();
    assert!(ours.status.success());
    assert_eq!(ours.stdout, reference(&args).stdout);
}

#[test]
fn unimplemented_options_are_refused_not_ignored() {
    let Some(c11) = corpus_dir("llvm-11") else {
        return;
    };
    let foo = c11.join("weight-sample-foo.proftext");
    let foo = foo.to_str().unwrap();
    for args in [
        vec!["merge", "--sample", "--sample-trim-cold-context", foo],
        vec!["merge", "--sample", "--output-size-limit=100", foo],
        vec!["merge", "--sample", "--function=main", foo],
        vec![
            "merge",
            "--sample",
            "--convert-sample-profile-layout=nest",
            foo,
        ],
        vec!["show", "--sample", "--show-format=json", foo],
        vec!["show", "--sample", "--no-such-option", foo],
    ] {
        let o = drop_in(&args);
        assert!(!o.status.success(), "{args:?} was accepted");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--"),
            "{args:?}: the refusal names no option"
        );
    }
    // Instrumentation-only options are accepted with a warning.
    let o = drop_in(&["merge", "--sample", "--text", "-j", "4", "--sparse", foo]);
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr)
            .matches("warning")
            .count(),
        2
    );
}

/// `--split-layout` came with LLVM 20, so llvm-profdata-22 is the byte reference;
/// llvm-profdata-19 (which reads the layout) checks that nothing is lost.
#[test]
fn split_layout_matches_llvm_profdata_22() {
    let Some(c19) = corpus_dir("llvm-19") else {
        return;
    };
    if !have_llvm() || !have_tool(LLVM_PROFDATA_22) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (ref_path, our_path) = (d.join("ref.prof"), d.join("our.prof"));
    let (mut exact, mut read_back, mut refused) = (0, 0, 0);
    for input in sample_profiles(&c19) {
        let input = input.to_str().unwrap();
        for extra in [&[][..], &["--use-md5", "--compress-all-sections"][..]] {
            let mut args = vec!["merge", "--sample", "--split-layout", input];
            args.extend_from_slice(extra);
            let theirs = Command::new(LLVM_PROFDATA_22)
                .args(&args)
                .arg("-o")
                .arg(&ref_path)
                .output()
                .unwrap();
            if !theirs.status.success() {
                continue;
            }
            let a: Vec<&str> = args
                .iter()
                .copied()
                .chain(["-o", our_path.to_str().unwrap()])
                .collect();
            let ours = drop_in(&a);
            if is_cs(input) {
                // LLVM 22 writes context records without a CS name table: unreadable.
                assert!(!ours.status.success(), "{args:?}: CS split layout accepted");
                assert!(
                    !reference(&["show", "--sample", ref_path.to_str().unwrap()])
                        .status
                        .success()
                );
                refused += 1;
                continue;
            }
            assert!(
                ours.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&ours.stderr)
            );
            let (theirs, ours) = (
                std::fs::read(&ref_path).unwrap(),
                std::fs::read(&our_path).unwrap(),
            );
            if theirs == ours {
                exact += 1;
            } else {
                assert!(is_cs(input), "{args:?}: differs from llvm-profdata-22");
                assert!(
                    same_when_read_back(d, &ours, &theirs),
                    "{args:?}: differs from llvm-profdata-22 even when read back"
                );
                read_back += 1;
            }
            if !extra.is_empty() {
                continue;
            }
            // What llvm-profdata-19 reads from our split file is the input itself.
            let direct = reference(&["merge", "--sample", "--text", input]);
            let via_split = reference(&["merge", "--sample", "--text", our_path.to_str().unwrap()]);
            assert_eq!(direct.stdout, via_split.stdout, "{args:?}");
        }
    }
    eprintln!("split layout: {exact} byte-identical, {read_back} equal when read back, {refused} CS refused");
    assert!(exact >= 25, "too few comparisons: {exact}");
}

#[test]
fn overlap_sample_matches_llvm_profdata() {
    let (Some(c19), Some(c11)) = (corpus_dir("llvm-19"), corpus_dir("llvm-11")) else {
        return;
    };
    if !have_llvm() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let p = |n: &str| c19.join(n).to_str().unwrap().to_string();
    let mut files: Vec<String> = (0..=5)
        .map(|i| p(&format!("sample-overlap-{i}.proftext")))
        .collect();
    files.push(p("sample-hot-func-list.proftext"));
    files.push(
        c11.join("weight-sample-foo.proftext")
            .to_str()
            .unwrap()
            .into(),
    );
    // The same profile as ExtBinary: LLVM's map is filled in record order then.
    let ext = d.join("hot.extbin");
    assert!(
        reference(&["merge", "--sample", &files[6], "-o", ext.to_str().unwrap()])
            .status
            .success()
    );
    files.push(ext.to_str().unwrap().into());
    let options: &[&[&str]] = &[
        &[],
        &["--value-cutoff=10", "--similarity-cutoff=999999"],
        &["--function=ba"],
        &["--value-cutoff", "0", "-o", "OUT"],
    ];
    let mut compared = 0;
    for a in &files {
        for b in &files {
            for o in options {
                let mut args = vec!["overlap", "--sample"];
                args.extend_from_slice(o);
                args.extend_from_slice(&[a, b]);
                if let Some((theirs, ours)) = both(d, &args) {
                    assert!(
                        theirs == ours,
                        "{args:?}:\n--- ours\n{}\n--- llvm\n{}",
                        String::from_utf8_lossy(&ours),
                        String::from_utf8_lossy(&theirs)
                    );
                    compared += 1;
                }
            }
        }
    }
    // Context-sensitive and pseudo-probe pairs; mixed kinds are refused by both.
    for (a, b) in [
        ("cs-sample.proftext", "cs-sample-preinline.proftext"),
        (
            "pseudo-probe-profile.proftext",
            "pseudo-probe-profile.proftext",
        ),
        ("cs-sample.proftext", "sample-overlap-1.proftext"),
        ("pseudo-probe-profile.proftext", "sample-overlap-1.proftext"),
    ] {
        for o in options {
            let (a, b) = (p(a), p(b));
            let mut args = vec!["overlap", "--sample"];
            args.extend_from_slice(o);
            args.extend_from_slice(&[&a, &b]);
            if let Some((theirs, ours)) = both(d, &args) {
                assert!(theirs == ours, "{args:?}");
                compared += 1;
            }
        }
    }
    assert!(compared >= 250, "too few comparisons: {compared}");

    // `profmill overlap --sample` is the same command.
    let args = ["--sample", "--value-cutoff=0", &files[1], &files[3]];
    let ours = Command::new(env!("CARGO_BIN_EXE_profmill"))
        .arg("overlap")
        .args(args)
        .output()
        .unwrap();
    let theirs = Command::new(LLVM_PROFDATA)
        .arg("overlap")
        .args(args)
        .output()
        .unwrap();
    assert!(ours.status.success());
    assert_eq!(ours.stdout, theirs.stdout);
}
