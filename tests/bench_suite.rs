//! Smoke test of the benchmark suite (what keeps it from rotting): `convflow bench all --quick
//! --backend cpu-par` runs every experiment that applies to the CPU, and its CSV, JSON and
//! charts have the promised schema and files. Needs a TrueType font for the charts (CI installs
//! fonts-dejavu-core).

mod common;
use common::Succeed;

use std::path::PathBuf;
use std::process::Command;

use convflow::bench::suite::Experiment;

#[test]
fn bench_all_quick_writes_csv_json_and_every_chart() {
    let scratch = common::Scratch::new("suite");
    let dir = scratch.0.clone();
    let (csv, json, plots) = (dir.join("s.csv"), dir.join("s.json"), dir.join("plots"));
    let out = Command::new(env!("CARGO_BIN_EXE_convflow"))
        .args(["bench", "all", "--quick", "--backend", "cpu-par", "--csv"])
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .arg("--plot")
        .arg(&plots)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Method:") && stdout.contains("## separable"),
        "{stdout}"
    );

    // CSV: the header, then rows with as many fields, from every CPU experiment.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let cols: Vec<&str> = header.split(',').collect();
    for c in [
        "experiment",
        "backend",
        "size",
        "k",
        "median_us",
        "speedup_vs_cpu_seq",
        "efficiency",
    ] {
        assert!(cols.contains(&c), "no CSV column {c}: {header}");
    }
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r.len(), cols.len(), "{r:?}");
        let median: f64 = r[cols.iter().position(|c| *c == "median_us").unwrap()]
            .parse()
            .unwrap();
        assert!(median > 0.0, "{r:?}");
    }
    for e in [
        "separable",
        "threads",
        "memory",
        "resolution",
        "big-kernels",
        "pipeline",
    ] {
        assert!(rows.iter().any(|r| r[0] == e), "no {e} rows");
    }
    let speed = cols
        .iter()
        .position(|c| *c == "speedup_vs_cpu_seq")
        .unwrap();
    assert!(
        rows.iter()
            .filter(|r| r[1] == "cpu-par" && r[0] != "pipeline")
            .all(|r| !r[speed].is_empty()),
        "cpu-par rows carry their speedup over cpu-seq"
    );
    let eff = cols.iter().position(|c| *c == "efficiency").unwrap();
    assert!(rows.iter().any(|r| r[0] == "threads" && !r[eff].is_empty()));

    // JSON: metadata, method, rows with the same fields, what was left out, the charts.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for key in [
        "date_utc",
        "git_revision",
        "command",
        "cpu",
        "logical_cpus",
        "gpu",
        "driver",
    ] {
        assert!(!v["meta"][key].is_null(), "meta.{key}");
    }
    assert!(v["meta"]["command"]
        .as_str()
        .unwrap()
        .contains("bench all --quick"));
    assert!(v["method"].as_str().unwrap().contains("median"));
    assert_eq!(
        v["experiments"].as_array().unwrap().len(),
        Experiment::ALL.len()
    );
    let jrows = v["rows"].as_array().unwrap();
    assert_eq!(jrows.len(), rows.len());
    for key in [
        "experiment",
        "backend",
        "size",
        "k",
        "median_us",
        "min_us",
        "max_us",
        "runs",
        "clock",
    ] {
        assert!(jrows.iter().all(|r| !r[key].is_null()), "rows[].{key}");
    }
    let skipped: Vec<&str> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        skipped.iter().any(|s| s.starts_with("blocks:"))
            && skipped.iter().any(|s| s.starts_with("pinned:"))
    );

    // Every chart listed exists and is non-empty; the CPU experiments' charts are all there.
    let charts: Vec<PathBuf> = v["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| PathBuf::from(c.as_str().unwrap()))
        .collect();
    for c in &charts {
        assert!(
            std::fs::metadata(c).map(|m| m.len() > 500).unwrap_or(false),
            "{} missing or empty",
            c.display()
        );
    }
    for stem in [
        "separable-speedup",
        "threads-scaling",
        "memory-speedup",
        "resolution",
        "resolution-kernels",
        "big-kernels",
        "pipeline",
    ] {
        for ext in ["svg", "png"] {
            let p = plots.join(format!("{stem}.{ext}"));
            assert!(charts.contains(&p), "{} not produced", p.display());
        }
    }
    let svg = std::fs::read_to_string(plots.join("threads-scaling.svg")).unwrap();
    assert!(
        svg.contains("threads") && svg.contains("ideal"),
        "chart labelled"
    );
    // The same charts again from the saved JSON (for runs made where no font is installed).
    let again = dir.join("again");
    let out = Command::new(env!("CARGO_BIN_EXE_convflow"))
        .args(["bench", "plot", "--from"])
        .arg(&json)
        .arg("--plot")
        .arg(&again)
        .succeed();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        charts.len()
    );
    for c in &charts {
        let redrawn = again.join(c.file_name().unwrap());
        assert!(
            std::fs::metadata(&redrawn)
                .map(|m| m.len() > 500)
                .unwrap_or(false),
            "{}",
            redrawn.display()
        );
    }
}
