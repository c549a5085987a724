use super::*;

/// A [`Run`] is process-wide: these tests take turns so that one's commits never land in
/// another's run.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("convflow-atomic-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn temp_names_fit_name_max_for_any_name_length() {
    let _serial = serial();
    for len in [1, 100, 200, 244, 255] {
        let name = "é".repeat(len / 2) + &"a".repeat(len % 2);
        let t = temp_sibling(Path::new("/d").join(&name).as_path(), "partial");
        let n = t.file_name().unwrap().as_bytes();
        assert!(
            n.len() <= NAME_MAX && n.starts_with(b"."),
            "{len}: {}",
            n.len()
        );
        assert!(
            std::str::from_utf8(n).is_ok(),
            "cut at a character boundary"
        );
    }
}

#[test]
fn dropped_files_and_dirs_are_removed_and_unregistered() {
    let _serial = serial();
    let d = scratch("drop");
    let f = PendingFile::create(&d.join("out.y4m")).unwrap();
    let tmp = f.path().to_path_buf();
    assert!(tmp.exists() && pending_paths().contains(&tmp));
    drop(f);
    assert!(!tmp.exists() && !pending_paths().contains(&tmp));
    let p = PendingDir::create(&d.join("frames")).unwrap();
    std::fs::write(p.path().join("a.png"), b"x").unwrap();
    let tmp = p.path().to_path_buf();
    drop(p);
    assert!(!tmp.exists());
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn directory_commit_into_existing_directory_rolls_back_on_failure() {
    let _serial = serial();
    let d = scratch("merge");
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("a.png"), b"old a").unwrap();
    std::fs::write(out.join("keep.txt"), b"keep").unwrap();
    let p = PendingDir::create(&out).unwrap();
    std::fs::write(p.path().join("a.png"), b"new a").unwrap();
    std::fs::write(p.path().join("b.png"), b"new b").unwrap();
    // "c.png" was never staged: its move fails after a.png and b.png moved.
    let names: Vec<OsString> = ["a.png", "b.png", "c.png"]
        .iter()
        .map(OsString::from)
        .collect();
    assert!(p.commit(&names).is_err());
    let mut left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["a.png", "keep.txt"]);
    assert_eq!(std::fs::read(out.join("a.png")).unwrap(), b"old a");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "staging removed");
    // A successful merge replaces a.png and adds b.png.
    let p = PendingDir::create(&out).unwrap();
    std::fs::write(p.path().join("a.png"), b"new a").unwrap();
    std::fs::write(p.path().join("b.png"), b"new b").unwrap();
    p.commit(&names[..2]).unwrap();
    assert_eq!(std::fs::read(out.join("a.png")).unwrap(), b"new a");
    assert_eq!(std::fs::read(out.join("keep.txt")).unwrap(), b"keep");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        3,
        "staging removed"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_run_dropped_unfinished_puts_every_destination_back() {
    let _serial = serial();
    let d = scratch("run");
    std::fs::write(d.join("a.json"), b"old a").unwrap();
    std::fs::create_dir(d.join("frames")).unwrap();
    std::fs::write(d.join("frames/1.png"), b"old 1").unwrap();
    let commit_all = || {
        write_file(&d.join("a.json"), b"new a").unwrap();
        write_file(&d.join("b.csv"), b"new b").unwrap();
        let p = PendingDir::create(&d.join("frames")).unwrap();
        std::fs::write(p.path().join("1.png"), b"new 1").unwrap();
        std::fs::write(p.path().join("2.png"), b"new 2").unwrap();
        p.commit(&[OsString::from("1.png"), OsString::from("2.png")])
            .unwrap();
    };
    let run = Run::begin();
    commit_all();
    assert_eq!(std::fs::read(d.join("a.json")).unwrap(), b"new a");
    drop(run);
    let mut left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["a.json", "frames"],
        "new files removed, nothing set aside left"
    );
    assert_eq!(std::fs::read(d.join("a.json")).unwrap(), b"old a");
    assert_eq!(std::fs::read_dir(d.join("frames")).unwrap().count(), 1);
    assert_eq!(std::fs::read(d.join("frames/1.png")).unwrap(), b"old 1");
    // Finished, the same commits stay, and what they replaced is gone.
    let run = Run::begin();
    commit_all();
    run.finish();
    assert_eq!(std::fs::read(d.join("a.json")).unwrap(), b"new a");
    assert_eq!(std::fs::read(d.join("frames/2.png")).unwrap(), b"new 2");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 3);
    assert_eq!(std::fs::read_dir(d.join("frames")).unwrap().count(), 2);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn existing_directories_are_staged_inside_themselves() {
    let _serial = serial();
    let d = scratch("inside");
    let out = d.join("mnt");
    std::fs::create_dir(&out).unwrap();
    let p = PendingDir::create(&out).unwrap();
    assert_eq!(p.path().parent(), Some(out.as_path()));
    std::fs::write(p.path().join("a.png"), b"a").unwrap();
    p.commit(&[OsString::from("a.png")]).unwrap();
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["a.png"]);
    std::fs::write(d.join("file"), b"x").unwrap();
    assert!(PendingDir::create(&d.join("file")).is_err());
    let _ = std::fs::remove_dir_all(&d);
}
