//! Outputs that appear under their real name only when complete.
//!
//! Every file or directory a run writes is first created under a hidden temporary name beside
//! its destination ([`PendingFile`], [`PendingDir`]) and moved into place by `commit`. Dropping
//! one uncommitted — any error path, or a panic unwinding — removes it, so a failed run leaves
//! nothing behind. Every temporary that exists is also listed in a process-wide registry, so
//! that a signal handler that must exit at once can remove them ([`remove_all_pending`]) before
//! calling `_exit`. A directory commit into a directory that already holds files is a small
//! transaction: files it replaces are set aside first and put back if any move fails.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Temporaries alive now: (registry id, path). Directories are removed recursively.
static PENDING: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The longest file name most Linux file systems accept, in bytes (NAME_MAX).
const NAME_MAX: usize = 255;

fn pending() -> std::sync::MutexGuard<'static, Vec<(u64, PathBuf)>> {
    // A panic while holding the lock must not stop the cleanup of everything else.
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

fn register(path: &Path) -> u64 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    pending().push((id, path.to_path_buf()));
    id
}

fn unregister(id: u64) {
    pending().retain(|(i, _)| *i != id);
}

fn remove_path(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

/// Removes every temporary file and directory this process has not committed yet. For a
/// signal handler thread that is about to exit the process at once.
pub fn remove_all_pending() {
    for (_, path) in pending().drain(..) {
        remove_path(&path);
    }
}

/// The temporaries that exist now (for tests and diagnostics).
pub fn pending_paths() -> Vec<PathBuf> {
    pending().iter().map(|(_, p)| p.clone()).collect()
}

/// A hidden name beside `path` for work in progress: `.NAME.convflow-TAG-PID-N`, with NAME
/// shortened (at a character boundary when it is UTF-8) so that the whole name stays within
/// NAME_MAX bytes whatever the length of the original.
pub fn temp_sibling(path: &Path, tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let suffix = format!(
        ".convflow-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let name = path.file_name().unwrap_or_default().as_bytes();
    let room = NAME_MAX - 1 - suffix.len();
    let mut cut = name.len().min(room);
    if let Ok(s) = std::str::from_utf8(name) {
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
    }
    let mut tmp = Vec::with_capacity(1 + cut + suffix.len());
    tmp.push(b'.');
    tmp.extend_from_slice(&name[..cut]);
    tmp.extend_from_slice(suffix.as_bytes());
    let tmp = OsString::from_vec(tmp);
    match path.parent() {
        Some(p) => p.join(tmp),
        None => PathBuf::from(tmp),
    }
}

/// A file being written under a temporary name beside `target`; [`PendingFile::commit`]
/// renames it into place, dropping it removes it. Writes go to the temporary file; a writer
/// that opens files itself (FFmpeg) opens [`PendingFile::path`].
#[derive(Debug)]
pub struct PendingFile {
    target: PathBuf,
    tmp: PathBuf,
    id: u64,
    file: File,
}

impl PendingFile {
    /// Creates the (new, empty) temporary file for `target`.
    pub fn create(target: &Path) -> std::io::Result<Self> {
        let tmp = temp_sibling(target, "tmp");
        let id = register(&tmp);
        match File::create_new(&tmp) {
            Ok(file) => Ok(PendingFile {
                target: target.to_path_buf(),
                tmp,
                id,
                file,
            }),
            Err(e) => {
                unregister(id);
                Err(e)
            }
        }
    }

    /// The temporary file's path (for writers that open it themselves, e.g. FFmpeg).
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The destination.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes the data to the disk and renames the file to its destination. On error the
    /// temporary is removed.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.file.sync_all()?;
        std::fs::rename(&self.tmp, &self.target)?;
        unregister(self.id);
        self.id = 0;
        Ok(())
    }
}

impl std::io::Seek for PendingFile {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.file.seek(pos)
    }
}

impl std::io::Write for PendingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if self.id != 0 {
            let _ = std::fs::remove_file(&self.tmp);
            unregister(self.id);
        }
    }
}

/// Writes `bytes` to `target` atomically (temporary file, sync, rename).
pub fn write_file(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = PendingFile::create(target)?;
    f.write_all(bytes)?;
    f.commit()
}

/// A directory of files being written under a temporary name beside `target`;
/// [`PendingDir::commit`] moves them into place, dropping it removes them.
#[derive(Debug)]
pub struct PendingDir {
    target: PathBuf,
    tmp: PathBuf,
    id: u64,
}

impl PendingDir {
    pub fn create(target: &Path) -> std::io::Result<Self> {
        let tmp = temp_sibling(target, "partial");
        let id = register(&tmp);
        match std::fs::create_dir(&tmp) {
            Ok(()) => Ok(PendingDir {
                target: target.to_path_buf(),
                tmp,
                id,
            }),
            Err(e) => {
                unregister(id);
                Err(e)
            }
        }
    }

    /// The staging directory, where files are written.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Moves the staged files `names` into the destination. A destination that does not exist
    /// yet receives the staging directory whole (one rename). Into an existing directory the
    /// files move one by one: existing files of the same names are set aside first and, if any
    /// move fails, every file moved is removed and every file set aside is put back, so the
    /// directory is as it was. An existing entry that is a directory is never replaced.
    pub fn commit(mut self, names: &[OsString]) -> std::io::Result<()> {
        let result = self.commit_inner(names);
        if result.is_ok() {
            unregister(self.id);
            self.id = 0;
        }
        result
    }

    fn commit_inner(&self, names: &[OsString]) -> std::io::Result<()> {
        for name in names {
            let f = File::open(self.tmp.join(name))?;
            f.sync_all()?;
        }
        if std::fs::symlink_metadata(&self.target).is_err() {
            return std::fs::rename(&self.tmp, &self.target);
        }
        for name in names {
            let dst = self.target.join(name);
            if std::fs::symlink_metadata(&dst).is_ok_and(|m| m.is_dir()) {
                return Err(std::io::Error::other(format!(
                    "'{}' is a directory; convflow will not replace it",
                    dst.display()
                )));
            }
        }
        let aside = self.tmp.join(".convflow-replaced");
        std::fs::create_dir(&aside)?;
        let mut moved: Vec<(&OsStr, bool)> = Vec::with_capacity(names.len());
        let step = |name: &OsStr| -> std::io::Result<bool> {
            let dst = self.target.join(name);
            let had = std::fs::symlink_metadata(&dst).is_ok();
            if had {
                std::fs::rename(&dst, aside.join(name))?;
            }
            if let Err(e) = std::fs::rename(self.tmp.join(name), &dst) {
                if had {
                    let _ = std::fs::rename(aside.join(name), &dst);
                }
                return Err(e);
            }
            Ok(had)
        };
        for name in names {
            match step(name) {
                Ok(had) => moved.push((name, had)),
                Err(e) => {
                    for (name, had) in moved.into_iter().rev() {
                        let dst = self.target.join(name);
                        let _ = std::fs::remove_file(&dst);
                        if had {
                            let _ = std::fs::rename(aside.join(name), &dst);
                        }
                    }
                    return Err(e);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.tmp);
        Ok(())
    }
}

impl Drop for PendingDir {
    fn drop(&mut self) {
        if self.id != 0 {
            let _ = std::fs::remove_dir_all(&self.tmp);
            unregister(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("convflow-atomic-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn temp_names_fit_name_max_for_any_name_length() {
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
        let _ = std::fs::remove_dir_all(&d);
    }
}
