//! Parquet interchange: a store's rows as Parquet read by pyarrow with the documented schema
//! and sums; the Spark recipe (scaleout/merge_profiles.py on local[2]) over generated partials
//! gives, through `import`, the bytes of `profmill merge`, weighted or not.

use std::path::{Path, PathBuf};
use std::process::Command;

use formats::store::{IpRow, MemRow, Row, Store, TraceRow};
use testsupport::*;

use crate::common::*;
use crate::store::programs;

/// The environment variable naming the Python with PySpark and pyarrow (`.ci/run` sets it to
/// its venv's); `python3` otherwise.
const PYTHON_VAR: &str = "PROFMILL_PYTHON";

fn python() -> PathBuf {
    std::env::var_os(PYTHON_VAR).map_or_else(|| "python3".into(), PathBuf::from)
}

/// Whether `python` imports `modules`, under the skip policy.
fn have_python_modules(modules: &str) -> bool {
    let ok = Command::new(python())
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        tool_missing(&format!(
            "Python modules {modules} (in {}; set {PYTHON_VAR})",
            python().display()
        ));
    }
    ok
}

/// `n` partial stores of captures of both test programs, as hosts write them (no binaries at
/// hand: every mapped binary), each also exported as Parquet into `parts/`.
fn partials(d: &Path, binaries: &[PathBuf; 2], n: usize) -> Vec<(PathBuf, PathBuf)> {
    let parts = d.join("parts");
    std::fs::create_dir_all(&parts).unwrap();
    (0..n)
        .map(|i| {
            let capture = d.join(format!("p{i}.data"));
            let [a, b] = binaries.each_ref().map(|p| p.as_path());
            let both: &[&Path] = if i % 5 == 4 { &[b] } else { &[a, b] };
            generate_capture(&capture, both, 1, 300, false, 100 + i as u64);
            let store = d.join(format!("p{i}.pms"));
            profmill_ok(&[&"aggregate", &capture, &"--format", &"store", &"-o", &store]);
            profmill_ok(&[&"export", &store, &"--format", &"parquet", &"-o", &parts]);
            std::fs::remove_file(&capture).unwrap();
            (store, parts.join(format!("p{i}.parquet")))
        })
        .collect()
}

/// Per binary (by name) and kind: rows and summed counts, as a sorted text.
fn store_sums(store: &Path) -> String {
    let bytes = std::fs::read(store).unwrap();
    let store = Store::parse(&bytes).unwrap();
    let mut lines = Vec::new();
    for (b, (meta, _)) in store.binaries().iter().enumerate() {
        let name = String::from_utf8_lossy(&meta.name);
        let mut line = |kind: &str, rows: Vec<[u64; 2]>| {
            if !rows.is_empty() {
                let sum: u128 = rows.iter().map(|c| u128::from(c[0])).sum();
                lines.push(format!("{name} {kind} {} {sum}", rows.len()));
            }
        };
        let counts = |r: Vec<[u64; 2]>| r;
        line(
            "trace",
            counts(
                store
                    .rows::<TraceRow>(b)
                    .map(|r| r.unwrap().counts())
                    .collect(),
            ),
        );
        line(
            "ip",
            counts(
                store
                    .rows::<IpRow>(b)
                    .map(|r| r.unwrap().counts())
                    .collect(),
            ),
        );
        line(
            "mem",
            counts(
                store
                    .rows::<MemRow>(b)
                    .map(|r| r.unwrap().counts())
                    .collect(),
            ),
        );
    }
    lines.sort();
    lines.join("\n")
}

/// pyarrow reads our files: the documented schema, its name and version, and the sums.
#[test]
fn pyarrow_reads_the_documented_schema_and_sums() {
    if !have_tool("cc") || !have_python_modules("pyarrow") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let programs = programs(d);
    let parts = partials(d, &programs, 2);
    let (store, parquet) = &parts[0];
    let script = r#"
import sys, pyarrow.parquet as pq, pyarrow.compute as pc
t = pq.read_table(sys.argv[1])
print(t.schema.to_string(show_schema_metadata=False))
meta = pq.read_metadata(sys.argv[1]).metadata
print("meta", meta[b"profmill.schema"].decode(), meta[b"profmill.schema.version"].decode())
for name in sorted(set(t.column("binary").to_pylist()) - {""}):
    for kind in ("trace", "ip", "mem"):
        rows = t.filter(pc.and_(pc.equal(t["binary"], name), pc.equal(t["kind"], kind)))
        if rows.num_rows:
            print("sum", name, kind, rows.num_rows, pc.sum(rows["count"]).as_py())
"#;
    let out = run_ok(Command::new(python()).args(["-c", script]).arg(parquet)).stdout;
    let out = String::from_utf8(out).unwrap();
    let schema: Vec<&str> = out.lines().take_while(|l| !l.starts_with("meta")).collect();
    assert_eq!(
        schema,
        [
            "build_id: string not null",
            "binary: string not null",
            "kind: string not null",
            "event: string",
            "from: uint64",
            "to: uint64",
            "ft_end: uint64",
            "count: uint64",
            "mispreds: uint64",
            "in_binary: bool",
        ],
        "{out}"
    );
    assert!(out.contains("meta profmill-rows 1"), "{out}");
    let mut sums: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("sum ")).collect();
    sums.sort();
    assert_eq!(sums.join("\n"), store_sums(store));
    // `aggregate --format parquet` writes what exporting its store writes.
    let capture = d.join("direct.data");
    generate_capture(&capture, &[&programs[0]], 1, 300, false, 7);
    let (direct_store, direct) = (d.join("direct.pms"), d.join("direct.parquet"));
    profmill_ok(&[
        &"aggregate",
        &capture,
        &"--format",
        &"store",
        &"-o",
        &direct_store,
    ]);
    profmill_ok(&[
        &"aggregate",
        &capture,
        &"--format",
        &"parquet",
        &"-o",
        &direct,
    ]);
    let exported = d.join("exported.parquet");
    profmill_ok(&[
        &"export",
        &direct_store,
        &"--format",
        &"parquet",
        &"-o",
        &exported,
    ]);
    assert!(std::fs::read(&direct).unwrap() == std::fs::read(&exported).unwrap());
}

/// `spark-submit scaleout/merge_profiles.py` on local[2]; its stdout and stderr on failure.
fn spark_merge(args: &[&dyn AsRef<std::ffi::OsStr>]) {
    let python = python();
    let submit = python.with_file_name("spark-submit");
    let submit = if submit.is_file() {
        submit
    } else {
        "spark-submit".into()
    };
    let mut cmd = Command::new(submit);
    cmd.env("PYSPARK_PYTHON", &python)
        .args(["--master", "local[2]", "--conf", "spark.ui.enabled=false"])
        .args(["--conf", "spark.sql.shuffle.partitions=4"])
        .arg(workspace_root().join("scaleout/merge_profiles.py"));
    for a in args {
        cmd.arg(a);
    }
    run_ok(&mut cmd);
}

/// Exports both programs' profiles from `store` as fdata.
fn fdatas(store: &Path, binaries: &[PathBuf; 2], d: &Path, tag: &str) -> Vec<Vec<u8>> {
    binaries
        .iter()
        .enumerate()
        .map(|(i, binary)| {
            let out = d.join(format!("{tag}-{i}.fdata"));
            profmill_ok(&[
                &"export",
                &store,
                &"-b",
                binary,
                &"--format",
                &"fdata",
                &"-o",
                &out,
            ]);
            std::fs::read(out).unwrap()
        })
        .collect()
}

/// The recipe of docs/fleet.md on 50 partials of two binaries: Spark's merge, imported,
/// equals `profmill merge` byte for byte (stores and exported fdata), weighted or not.
#[test]
fn spark_merge_equals_profmill_merge() {
    if !have_tool("cc") || !have_tool("java") || !have_python_modules("pyspark") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let programs = programs(d);
    let parts = partials(d, &programs, 50);
    let stores: Vec<&PathBuf> = parts.iter().map(|(s, _)| s).collect();

    let reference = d.join("reference.pms");
    let mut merge = profmill();
    merge.arg("merge").args(&stores).arg("-o").arg(&reference);
    run_ok(&mut merge);
    spark_merge(&[&"--input", &d.join("parts"), &"--output", &d.join("spark")]);
    let imported = d.join("spark.pms");
    profmill_ok(&[&"import", &d.join("spark"), &"-o", &imported]);
    assert!(
        std::fs::read(&imported).unwrap() == std::fs::read(&reference).unwrap(),
        "Spark's merge, imported, differs from profmill merge"
    );
    assert_eq!(
        fdatas(&imported, &programs, d, "spark"),
        fdatas(&reference, &programs, d, "reference")
    );

    // Weights: 3 × the first partial, 2 × the second, the others once.
    let csv = d.join("weights.csv");
    let (first, second) = (&parts[0].1, &parts[1].1);
    std::fs::write(
        &csv,
        format!("3,{}\n2,{}\n", first.display(), second.display()),
    )
    .unwrap();
    let rest: Vec<&PathBuf> = parts[2..].iter().map(|(_, p)| p).collect();
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"--input"];
    args.extend(rest.iter().map(|p| p as &dyn AsRef<std::ffi::OsStr>));
    let out = d.join("spark-weighted");
    args.extend([
        &"--weights" as &dyn AsRef<std::ffi::OsStr>,
        &csv,
        &"--output",
        &out,
    ]);
    spark_merge(&args);
    let weighted = d.join("weighted.pms");
    let mut merge = profmill();
    merge
        .arg("merge")
        .args(&stores[2..])
        .arg("-w")
        .arg(format!("3,{}", parts[0].0.display()))
        .arg("-w")
        .arg(format!("2,{}", parts[1].0.display()))
        .arg("-o")
        .arg(&weighted);
    run_ok(&mut merge);
    let imported = d.join("spark-weighted.pms");
    profmill_ok(&[&"import", &out, &"-o", &imported]);
    assert!(
        std::fs::read(&imported).unwrap() == std::fs::read(&weighted).unwrap(),
        "Spark's weighted merge, imported, differs from profmill merge -w"
    );
    assert_eq!(
        fdatas(&imported, &programs, d, "spark-w"),
        fdatas(&weighted, &programs, d, "reference-w")
    );
}
