//! Outputs that appear under their real name only when complete.
//!
//! Every file or directory a run writes is first created under a hidden temporary name beside
//! its destination ([`PendingFile`], [`PendingDir`]) and moved into place by `commit`. Dropping
//! one uncommitted — any error path, or a panic unwinding — removes it, so a failed run leaves
//! nothing behind. Every temporary that exists is also listed in a process-wide registry, so
//! that a signal handler that must exit at once can remove them ([`remove_all_pending`]) before
//! calling `_exit`; that cleanup waits for a commit in progress to finish (or roll back), so
//! it never removes files a commit has set aside. A directory commit into a directory that
//! already holds files is a small transaction: files it replaces are set aside first and put
//! back if any move fails.
//!
//! A directory output that already exists is staged inside itself rather than beside it, so
//! that a destination on another file system (a mount point) still commits by rename.
//!
//! An output that exists and is not a regular file — a character device such as `/dev/null`,
//! or a FIFO — is written in place ([`PendingFile::create`] opens it directly): there is no file
//! to replace. A symbolic link is followed: the file it names is replaced, the link stays.
//! Block devices and sockets are refused.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Temporaries alive now: (registry id, path). Directories are removed recursively.
static PENDING: Mutex<Registry> = Mutex::new(Registry {
    items: Vec::new(),
    closed: false,
});
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Held while a commit moves files into place; the signal cleanup waits for it.
static COMMITTING: Mutex<()> = Mutex::new(());
/// While a [`Run`] is open: how to undo every commit made so far.
static JOURNAL: Mutex<Option<Journal>> = Mutex::new(None);

/// The commits of an open [`Run`], undone in reverse order on rollback.
#[derive(Default)]
struct Journal {
    undo: Vec<Undo>,
    /// Files set aside and staging directories, removed when the run finishes (or after a
    /// rollback has put back what it needed from them).
    cleanup: Vec<PathBuf>,
}

enum Undo {
    /// The commit created `0`: remove it.
    Remove(PathBuf),
    /// The commit replaced `target`, whose previous content was set aside at `aside`.
    Restore { aside: PathBuf, target: PathBuf },
}

fn journal() -> std::sync::MutexGuard<'static, Option<Journal>> {
    JOURNAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn rollback(j: Journal) {
    for u in j.undo.into_iter().rev() {
        match u {
            Undo::Remove(p) => remove_path(&p),
            Undo::Restore { aside, target } => {
                let _ = std::fs::rename(&aside, &target);
            }
        }
    }
    for p in j.cleanup {
        remove_path(&p);
    }
}

/// All the outputs of one command, committed together: while a `Run` is open, every commit
/// sets aside what it replaces, so that dropping the run unfinished (an error after some
/// outputs were committed, or the cleanup of a second signal) puts every destination back as
/// it was; [`Run::finish`] keeps them and removes what was set aside. Without an open run,
/// commits are final at once.
pub struct Run {
    owner: bool,
}

impl Run {
    /// Opens the run (a run already open stays the one that counts).
    pub fn begin() -> Run {
        let mut j = journal();
        let owner = j.is_none();
        if owner {
            *j = Some(Journal::default());
        }
        Run { owner }
    }

    /// Keeps every commit made during the run.
    pub fn finish(mut self) {
        if self.owner {
            self.owner = false;
            let _commit = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(j) = journal().take() {
                for p in j.cleanup {
                    remove_path(&p);
                }
            }
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.owner {
            let _commit = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(j) = journal().take() {
                rollback(j);
            }
        }
    }
}

/// Moves `from` to `to`; what `to` held (if anything) is first renamed to `aside`, and put
/// back if the move fails. Returns whether something was set aside.
fn replace(from: &Path, to: &Path, aside: &Path) -> std::io::Result<bool> {
    let had = std::fs::symlink_metadata(to).is_ok();
    if had {
        std::fs::rename(to, aside)?;
    }
    if let Err(e) = std::fs::rename(from, to) {
        if had {
            let _ = std::fs::rename(aside, to);
        }
        return Err(e);
    }
    Ok(had)
}

/// Refuses to replace `path` inside an output directory unless it is missing or a regular
/// file: a directory, a FIFO, a device, a socket or a symbolic link there is an error.
pub fn check_replaceable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let t = m.file_type();
    let what = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a device"
    };
    Err(std::io::Error::other(format!(
        "'{}' is {what}; convflow replaces only regular files in an output directory",
        crate::quote::path(path)
    )))
}

struct Registry {
    items: Vec<(u64, PathBuf)>,
    /// Set by [`remove_all_pending`]: the process is exiting, no new temporary may appear.
    closed: bool,
}

/// The longest file name most Linux file systems accept, in bytes (NAME_MAX).
const NAME_MAX: usize = 255;

fn pending() -> std::sync::MutexGuard<'static, Registry> {
    // A panic while holding the lock must not stop the cleanup of everything else.
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `path` and creates it with `create`, under the registry's lock: the signal
/// cleanup sees either nothing or the created temporary, never one appearing after it ran.
fn register_with<T>(
    path: &Path,
    create: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<(u64, T)> {
    let mut reg = pending();
    if reg.closed {
        return Err(std::io::Error::other("convflow is stopping"));
    }
    let made = create()?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    reg.items.push((id, path.to_path_buf()));
    Ok((id, made))
}

/// Creates and registers a new temporary beside (or, for a directory being merged into, inside)
/// `target` with `create`, trying further names while one is taken (a stale temporary of an
/// earlier process whose id was reused).
fn create_temp<T>(
    name_for: impl Fn() -> PathBuf,
    create: impl Fn(&Path) -> std::io::Result<T>,
) -> std::io::Result<(PathBuf, u64, T)> {
    let mut tries = 0;
    loop {
        let tmp = name_for();
        match register_with(&tmp, || create(&tmp)) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 100 => tries += 1,
            Err(e) => return Err(e),
            Ok((id, made)) => return Ok((tmp, id, made)),
        }
    }
}

fn unregister(id: u64) {
    pending().items.retain(|(i, _)| *i != id);
}

/// Removes a temporary file or directory. A directory is first renamed away, so a writer that
/// is still adding files to it cannot keep it alive, then removed (retrying while a file that
/// was being created as it moved lands in it).
fn remove_path(path: &Path) {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_file(path);
        return;
    }
    let doomed = temp_sibling(path, "removing");
    let target = if std::fs::rename(path, &doomed).is_ok() {
        doomed
    } else {
        path.to_path_buf()
    };
    for _ in 0..20 {
        match std::fs::remove_dir_all(&target) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => return,
        }
    }
}

/// Removes every temporary file and directory this process has not committed yet, rolls back
/// the commits of an open [`Run`], and lets no new temporary be made. For a signal handler
/// thread that is about to exit the process at once; a commit in progress finishes (or rolls
/// back) first.
pub fn remove_all_pending() {
    let _commit = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
    let mut reg = pending();
    reg.closed = true;
    for (_, path) in reg.items.drain(..) {
        remove_path(&path);
    }
    drop(reg);
    if let Some(j) = journal().take() {
        rollback(j);
    }
}

/// The temporaries that exist now (for tests and diagnostics).
pub fn pending_paths() -> Vec<PathBuf> {
    pending().items.iter().map(|(_, p)| p.clone()).collect()
}

/// Follows symbolic links from `path` (up to 40) to the path they end at, which need not
/// exist yet: an output written through a link replaces the file the link names.
pub(crate) fn resolve_links(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(next) => p = p.parent().map_or(next.clone(), |dir| dir.join(&next)),
            Err(_) => break,
        }
    }
    p
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

/// `/dev/stderr` (or any name of descriptor 2) while convflow keeps descriptor 2 for what
/// linked libraries print ([`crate::console`]): its own standard error, where the user meant.
fn standard_error_of_ours(meta: &std::fs::Metadata) -> Option<File> {
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::MetadataExt;
    let own = crate::console::own_fd();
    if own == 2 {
        return None;
    }
    // SAFETY: fstat fills a zeroed (valid all-zero) stat for descriptor 2.
    let (ok, st) = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(2, &mut st) == 0, st)
    };
    if !ok || (st.st_dev, st.st_ino) != (meta.dev(), meta.ino()) {
        return None;
    }
    // SAFETY: dup of a descriptor this process keeps open; the File owns the duplicate.
    let fd = unsafe { libc::fcntl(own, libc::F_DUPFD_CLOEXEC, 3) };
    // SAFETY: `fd` was just returned by fcntl and is owned by nothing else.
    (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) })
}

/// Opens a FIFO for writing without blocking the process until a reader comes: a stop request
/// (a signal) ends the wait with [`super::stop::stopped_error`].
fn open_fifo_for_writing(path: &Path) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    loop {
        match File::options()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(f) => {
                // SAFETY: fcntl on a descriptor we own, clearing O_NONBLOCK for plain writes.
                unsafe {
                    let fd = f.as_raw_fd();
                    let flags = libc::fcntl(fd, libc::F_GETFL);
                    libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
                }
                return Ok(f);
            }
            // No reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if super::stop::requested() {
                    return Err(super::stop::stopped_error());
                }
                std::thread::sleep(std::time::Duration::from_millis(
                    super::stop::POLL_SLICE_MS as u64,
                ));
            }
            Err(e) => return Err(e),
        }
    }
}

/// A file being written under a temporary name beside `target`; [`PendingFile::commit`]
/// renames it into place, dropping it removes it. An existing target that is not a regular
/// file (a device, a FIFO) is written directly instead; nothing is renamed or removed then.
#[derive(Debug)]
pub struct PendingFile {
    target: PathBuf,
    tmp: PathBuf,
    /// Registry id; 0 once committed, or for a target written directly.
    id: u64,
    file: File,
    direct: bool,
}

impl PendingFile {
    /// Creates the (new, empty) temporary file for `target`, or opens `target` itself when it
    /// exists and is a character device or FIFO. Block devices and sockets are refused.
    pub fn create(target: &Path) -> std::io::Result<Self> {
        // The original name is opened when it leads to a special file: a link such as
        // /dev/stdout ends in /proc/self/fd/1, whose own link target is no path at all.
        if let Ok(meta) = std::fs::metadata(target) {
            use std::os::unix::fs::FileTypeExt;
            let t = meta.file_type();
            if t.is_block_device() {
                return Err(std::io::Error::other(
                    "is a block device; convflow will not write to it",
                ));
            }
            if t.is_socket() {
                return Err(std::io::Error::other(
                    "is a socket; convflow writes files, FIFOs and devices",
                ));
            }
            if t.is_char_device() || t.is_fifo() {
                let file = if let Some(own) = standard_error_of_ours(&meta) {
                    own
                } else if t.is_fifo() {
                    open_fifo_for_writing(target)?
                } else {
                    File::options().write(true).open(target)?
                };
                return Ok(PendingFile {
                    tmp: target.to_path_buf(),
                    target: target.to_path_buf(),
                    id: 0,
                    file,
                    direct: true,
                });
            }
        }
        let target = resolve_links(target);
        let (tmp, id, file) =
            create_temp(|| temp_sibling(&target, "tmp"), |p| File::create_new(p))?;
        Ok(PendingFile {
            target,
            tmp,
            id,
            file,
            direct: false,
        })
    }

    /// Where the bytes go now: the temporary file, or the target written directly.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The destination (symbolic links followed).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// True when the target is written directly (a device or FIFO: no seeking, no rename).
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Flushes the data to the disk and renames the file to its destination. On error the
    /// temporary is removed.
    pub fn commit(mut self) -> std::io::Result<()> {
        if self.direct {
            return std::io::Write::flush(&mut self.file);
        }
        self.file.sync_all()?;
        let _commit = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
        match journal().as_mut() {
            Some(j) => {
                let aside = temp_sibling(&self.target, "old");
                let target = self.target.clone();
                if replace(&self.tmp, &self.target, &aside)? {
                    j.undo.push(Undo::Restore {
                        aside: aside.clone(),
                        target,
                    });
                    j.cleanup.push(aside);
                } else {
                    j.undo.push(Undo::Remove(target));
                }
            }
            None => std::fs::rename(&self.tmp, &self.target)?,
        }
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
    /// Creates the staging directory: inside `target` when that is an existing directory (so
    /// that every move stays on its file system, also when `target` is a mount point), else
    /// beside it.
    pub fn create(target: &Path) -> std::io::Result<Self> {
        let beside = match std::fs::metadata(target) {
            Ok(m) if m.is_dir() => {
                let name = target.file_name().unwrap_or(OsStr::new("out"));
                target.join(name)
            }
            Ok(_) => return Err(std::io::Error::other("exists and is not a directory")),
            Err(_) => target.to_path_buf(),
        };
        let (tmp, id, ()) = create_temp(
            || temp_sibling(&beside, "partial"),
            |p| std::fs::create_dir(p),
        )?;
        Ok(PendingDir {
            target: target.to_path_buf(),
            tmp,
            id,
        })
    }

    /// The staging directory, where files are written.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Moves the staged files `names` into the destination. A destination that does not exist
    /// yet receives the staging directory whole (one rename). Into an existing directory the
    /// files move one by one: existing files of the same names are set aside first and, if any
    /// move fails, every file moved is removed and every file set aside is put back, so the
    /// directory is as it was. Only regular files are replaced ([`check_replaceable`]).
    pub fn commit(mut self, names: &[OsString]) -> std::io::Result<()> {
        // The signal cleanup waits while files are set aside and moved.
        let _commit = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
        let mut journal = journal();
        let undo = self.commit_inner(names)?;
        unregister(self.id);
        self.id = 0;
        match journal.as_mut() {
            // The staging directory holds what was set aside until the run finishes.
            Some(j) => {
                j.undo.extend(undo);
                if self.tmp.exists() {
                    j.cleanup.push(self.tmp.clone());
                }
            }
            None => remove_path(&self.tmp),
        }
        Ok(())
    }

    /// Moves the files; returns how to undo the moves.
    fn commit_inner(&self, names: &[OsString]) -> std::io::Result<Vec<Undo>> {
        for name in names {
            let f = File::open(self.tmp.join(name))?;
            f.sync_all()?;
        }
        if std::fs::symlink_metadata(&self.target).is_err() {
            std::fs::rename(&self.tmp, &self.target)?;
            return Ok(vec![Undo::Remove(self.target.clone())]);
        }
        for name in names {
            check_replaceable(&self.target.join(name))?;
        }
        let aside = self.tmp.join(".convflow-replaced");
        std::fs::create_dir(&aside)?;
        let mut undo = Vec::with_capacity(names.len());
        for name in names {
            let (dst, old) = (self.target.join(name), aside.join(name));
            match replace(&self.tmp.join(name), &dst, &old) {
                Ok(true) => undo.push(Undo::Restore {
                    aside: old,
                    target: dst,
                }),
                Ok(false) => undo.push(Undo::Remove(dst)),
                Err(e) => {
                    rollback(Journal {
                        undo,
                        cleanup: Vec::new(),
                    });
                    return Err(e);
                }
            }
        }
        Ok(undo)
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
mod tests;
