//! Input protection: before any work, every path a run will write is compared with every file
//! it reads, and a run that would write over one of its inputs (or write one output over
//! another) is refused.
//!
//! Files are compared by device and inode where they exist, which sees through symbolic links,
//! hard links, `..` and case-insensitive names; where a path does not exist yet its canonical
//! form is compared instead. A directory output counts every file it will receive: an existing
//! entry of that directory whose name the run will write, and which is an input, is refused
//! (this is how `filter dir/photo.png -o dir` and `filter frames -o frames` are caught). Standard
//! input and output count when they are regular files (`convflow filter - -o x.y4m < x.y4m`,
//! `>> in.y4m`). There is no override: to filter in place, write to a new name and rename.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A file's identity: device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> Self {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// The identity of what `path` names (following symbolic links), if it exists.
fn id_of(path: &Path) -> Option<FileId> {
    std::fs::metadata(path).ok().map(|m| FileId::of(&m))
}

/// The identity of the regular file behind a standard stream, if it is one.
fn fd_file_id(fd: BorrowedFd<'_>) -> Option<FileId> {
    let file = File::from(fd.try_clone_to_owned().ok()?);
    let meta = file.metadata().ok()?;
    meta.is_file().then(|| FileId::of(&meta))
}

/// `path` made absolute with its directory resolved (symbolic links, `..`), for paths that may
/// not exist yet; a symbolic link whose target does not exist yet stands for that target (where
/// a write through it will land).
fn canonical(path: &Path) -> PathBuf {
    if let Ok(c) = path.canonicalize() {
        return c;
    }
    let path = super::atomic::resolve_links(path);
    let abs = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => dir.canonicalize().map_or(abs.clone(), |d| d.join(name)),
        _ => abs,
    }
}

/// Why [`check`] refused the outputs of a run.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// An output is (or would write over) one of the inputs.
    #[error(
        "{what} '{path}' is the input {input}: convflow never writes over its input \
         (write to a new name, then rename it if you want it in place)"
    )]
    SameAsInput {
        /// What the output is ("output", "report", "output directory", …).
        what: String,
        /// The output path, quoted.
        path: String,
        /// The input it matches, as labelled when added.
        input: String,
    },
    /// An existing entry of an output directory that the run would write cannot be replaced.
    #[error("{what} directory: {msg}")]
    NotReplaceable {
        /// What the output is.
        what: String,
        /// Why the entry cannot be replaced.
        msg: String,
    },
    /// Two outputs would write the same file.
    #[error("{what} '{path}' and {other} '{other_path}' would write the same file")]
    Twice {
        /// What the first output is.
        what: String,
        /// The first output's path, quoted.
        path: String,
        /// What the second output is.
        other: String,
        /// The second output's path, quoted.
        other_path: String,
    },
}

struct Input {
    label: String,
    id: Option<FileId>,
    canonical: Option<PathBuf>,
    is_dir: bool,
}

/// Everything a run reads.
#[derive(Default)]
pub struct Inputs {
    items: Vec<Input>,
}

impl Inputs {
    /// No inputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// An input file or directory (for a directory, add its files too).
    pub fn add(&mut self, path: &Path) {
        let meta = std::fs::metadata(path).ok();
        self.items.push(Input {
            label: format!("'{}'", crate::quote::path(path)),
            id: meta.as_ref().map(FileId::of),
            canonical: Some(canonical(path)),
            is_dir: meta.is_some_and(|m| m.is_dir()),
        });
    }

    /// Standard input, when it is a regular file (`< file`).
    pub fn add_stdin(&mut self) {
        if let Some(id) = fd_file_id(std::io::stdin().as_fd()) {
            self.items.push(Input {
                label: "(standard input's file)".into(),
                id: Some(id),
                canonical: None,
                is_dir: false,
            });
        }
    }

    fn find(&self, id: Option<FileId>, canonical: Option<&Path>) -> Option<&Input> {
        self.items.iter().find(|i| {
            (id.is_some() && i.id == id)
                || (canonical.is_some() && i.canonical.as_deref() == canonical)
        })
    }
}

/// Something a run writes.
pub enum Output<'a> {
    /// One file (`what` names it in messages: "output", "report", "csv").
    File {
        /// What the file is, for messages.
        what: &'a str,
        /// Where it is written.
        path: &'a Path,
    },
    /// A directory receiving files whose names satisfy `writes`.
    Dir {
        /// What the directory is, for messages.
        what: &'a str,
        /// The directory.
        dir: &'a Path,
        /// True for the entry names the run will write there.
        writes: &'a dyn Fn(&OsStr) -> bool,
    },
    /// Standard output.
    Stdout,
}

impl Output<'_> {
    fn what(&self) -> &str {
        match self {
            Output::File { what, .. } | Output::Dir { what, .. } => what,
            Output::Stdout => "standard output",
        }
    }
    fn shown(&self) -> String {
        match self {
            Output::File { path, .. } => crate::quote::path(path),
            Output::Dir { dir, .. } => crate::quote::path(dir),
            Output::Stdout => "-".into(),
        }
    }
}

/// True when `fd` (convflow's own standard error) is a regular file that is one of `inputs`
/// (`2>> in.y4m`): then nothing may be written to it, not even the refusal.
pub fn stream_is_input(inputs: &Inputs, fd: BorrowedFd<'_>) -> bool {
    fd_file_id(fd).is_some_and(|id| inputs.find(Some(id), None).is_some())
}

/// Refuses any output that is one of `inputs`, writes into an input directory over an input
/// file, or writes the same file as another output.
pub fn check(inputs: &Inputs, outputs: &[Output<'_>]) -> Result<(), GuardError> {
    let same = |o: &Output<'_>, path: &Path, input: &Input| GuardError::SameAsInput {
        what: o.what().to_string(),
        path: crate::quote::path(path),
        input: input.label.clone(),
    };
    for o in outputs {
        match o {
            Output::File { path, .. } => {
                if let Some(i) = inputs.find(id_of(path), Some(&canonical(path))) {
                    return Err(same(o, path, i));
                }
            }
            Output::Dir { dir, writes, .. } => {
                if let Some(i) = inputs.find(id_of(dir), Some(&canonical(dir))) {
                    let what = if i.is_dir { "directory" } else { "file" };
                    return Err(GuardError::SameAsInput {
                        what: format!("{} directory", o.what()),
                        path: crate::quote::path(dir),
                        input: format!("{what} {}", i.label),
                    });
                }
                if let Ok(entries) = std::fs::read_dir(dir) {
                    for e in entries.flatten() {
                        let name = e.file_name();
                        if !writes(&name) {
                            continue;
                        }
                        let path = dir.join(&name);
                        if let Some(i) = inputs.find(id_of(&path), None) {
                            return Err(same(o, &path, i));
                        }
                        if let Err(e) = super::atomic::check_replaceable(&path) {
                            return Err(GuardError::NotReplaceable {
                                what: o.what().to_string(),
                                msg: e.to_string(),
                            });
                        }
                    }
                }
            }
            Output::Stdout => {
                if let Some(id) = fd_file_id(std::io::stdout().as_fd()) {
                    if let Some(i) = inputs.find(Some(id), None) {
                        return Err(same(o, Path::new("-"), i));
                    }
                }
            }
        }
    }
    for (k, a) in outputs.iter().enumerate() {
        for b in &outputs[k + 1..] {
            if collide(a, b) || collide(b, a) {
                return Err(GuardError::Twice {
                    what: a.what().to_string(),
                    path: a.shown(),
                    other: b.what().to_string(),
                    other_path: b.shown(),
                });
            }
        }
    }
    Ok(())
}

/// True when `a` and `b` would write the same file.
fn collide(a: &Output<'_>, b: &Output<'_>) -> bool {
    let file_id = |p: &Path| id_of(p).filter(|_| p.is_file());
    match (a, b) {
        (Output::File { path: p, .. }, Output::File { path: q, .. }) => {
            canonical(p) == canonical(q) || file_id(p).is_some_and(|i| file_id(q) == Some(i))
        }
        (Output::File { path, .. }, Output::Dir { dir, writes, .. }) => {
            let c = canonical(path);
            c == canonical(dir)
                || (c.parent() == Some(canonical(dir).as_path())
                    && c.file_name().is_some_and(writes))
        }
        (Output::Dir { dir: d, .. }, Output::Dir { dir: e, .. }) => canonical(d) == canonical(e),
        (Output::Stdout, Output::File { path, .. }) => {
            fd_file_id(std::io::stdout().as_fd()).is_some_and(|i| file_id(path) == Some(i))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_file_through_links_and_dotdot_is_refused() {
        let d = std::env::temp_dir().join(format!("convflow-guard-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("a.png"), b"x").unwrap();
        std::fs::hard_link(d.join("a.png"), d.join("hard.png")).unwrap();
        std::os::unix::fs::symlink(d.join("a.png"), d.join("soft.png")).unwrap();
        let mut inputs = Inputs::new();
        inputs.add(&d.join("a.png"));
        for out in ["a.png", "hard.png", "soft.png", "sub/../a.png"] {
            let path = d.join(out);
            let e = check(
                &inputs,
                &[Output::File {
                    what: "output",
                    path: &path,
                }],
            )
            .unwrap_err();
            assert!(e.to_string().contains("is the input"), "{out}: {e}");
        }
        let fresh = d.join("b.png");
        check(
            &inputs,
            &[Output::File {
                what: "output",
                path: &fresh,
            }],
        )
        .unwrap();
        // A directory output that would receive a.png over the input.
        let all = |_: &OsStr| true;
        let e = check(
            &inputs,
            &[Output::Dir {
                what: "output",
                dir: &d,
                writes: &all,
            }],
        )
        .unwrap_err();
        assert!(e.to_string().contains("a.png"), "{e}");
        // Two outputs naming one file.
        let r = d.join("sub/r.json");
        let r2 = d.join("sub/../sub/r.json");
        let e = check(
            &Inputs::new(),
            &[
                Output::File {
                    what: "output",
                    path: &r,
                },
                Output::File {
                    what: "report",
                    path: &r2,
                },
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("same file"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
