//! Run bundles (`Extracted`, `write`): one shareable `.tar.gz` per run — reports, timelines,
//! recordings, the suite files used and a `BUNDLE.json` naming the podlife version — and their
//! safe extraction for `run --replay` and `rejudge` (no links, no absolute or `..` paths, bounded
//! size and entry count, extracted into a private temporary folder removed afterwards).

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

/// Limits on what a bundle may unpack to. A 16-case recorded run is a few MB; the largest
/// full live run (86 cases, `--repeat 3`) stays far below these, while a gzip bomb or a
/// crafted archive is stopped early.
pub(crate) const MAX_TOTAL_BYTES: u64 = 4 << 30;
pub(crate) const MAX_ENTRIES: usize = 500_000;

/// Is this path a bundle (by name)?
pub(crate) fn is_bundle(p: &Path) -> bool {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    p.is_file() && (n.ends_with(".tar.gz") || n.ends_with(".tgz"))
}

/// Writes `<run_dir>.tar.gz` holding `<runid>/...` (the whole report folder) and
/// `<runid>/BUNDLE.json`. Returns the archive's path.
pub fn write(run_dir: &Path) -> std::io::Result<PathBuf> {
    let name = run_dir
        .file_name()
        .ok_or_else(|| std::io::Error::other("run folder has no name"))?
        .to_string_lossy()
        .to_string();
    let out = run_dir.with_file_name(format!("{name}.tar.gz"));
    // Written beside, then renamed: a half-written archive never has the final name.
    let partial = run_dir.with_file_name(format!(".{name}.tar.gz.partial"));
    let r = (|| {
        let file = std::fs::File::create(&partial)?;
        let gz = GzEncoder::new(std::io::BufWriter::new(file), Compression::default());
        let mut tar = tar::Builder::new(gz);
        tar.follow_symlinks(false);
        tar.mode(tar::HeaderMode::Deterministic);
        let info = serde_json::json!({
            "podlife": env!("CARGO_PKG_VERSION"),
            "runId": name,
            "created": jiff::Timestamp::now(),
            "replay": format!("podlife run --replay {name}.tar.gz"),
            "rejudge": format!("podlife rejudge {name}.tar.gz --suites suites"),
        });
        let bytes = serde_json::to_vec_pretty(&info)?;
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, format!("{name}/BUNDLE.json"), bytes.as_slice())?;
        tar.append_dir_all(&name, run_dir)?;
        let gz = tar.into_inner()?;
        let mut w = gz.finish()?;
        w.flush()?;
        std::fs::rename(&partial, &out)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    r.map(|_| out)
}

/// A bundle unpacked into a private temporary folder (`tempfile::TempDir`: a random name, mode
/// 0700), removed when this is dropped — on every path, errors and interrupts included (an exit
/// at once on a second signal removes it too: see `remove_unpacked`).
#[derive(Debug)]
pub struct Extracted {
    /// The run folder inside (`<tmp>/<runid>`).
    pub dir: PathBuf,
    /// How the unpacked files are named in what podlife prints and stores (`<bundle>:<member>`).
    pub names: crate::files::Names,
    root: tempfile::TempDir,
}

impl Extracted {
    /// The temporary folder everything was unpacked into.
    pub fn root(&self) -> &Path {
        self.root.path()
    }
}

impl Drop for Extracted {
    fn drop(&mut self) {
        let mut u = UNPACKED.lock().unwrap_or_else(|p| p.into_inner());
        u.retain(|p| p != self.root.path());
    }
}

/// The folders bundles are unpacked into right now. An exit at once (a second Ctrl-C) runs no
/// destructor, so it removes them from this list (`remove_unpacked`).
static UNPACKED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes every bundle folder still unpacked: for an exit at once (a second Ctrl-C), which
/// runs no destructor.
pub(crate) fn remove_unpacked() {
    let u = UNPACKED.lock().unwrap_or_else(|p| p.into_inner());
    for p in u.iter() {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// Why a bundle was not unpacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractError {
    /// A one-line message naming the bundle (and the member at fault); exit 2.
    Bad(String),
    /// A signal came while unpacking; nothing unpacked is left.
    Interrupted(super::interrupt::Interrupt),
}

impl ExtractError {
    /// 2 for a bad bundle, 130/143/129 for a signal.
    pub fn exit_code(&self) -> u8 {
        match self {
            ExtractError::Bad(_) => 2,
            ExtractError::Interrupted(i) => i.exit_code,
        }
    }
}

impl std::fmt::Display for ExtractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractError::Bad(m) => f.write_str(m),
            ExtractError::Interrupted(i) => write!(
                f,
                "interrupted by {} while unpacking the bundle; its temporary folder was removed",
                i.name
            ),
        }
    }
}

/// How much is copied between two looks at `stop` (a 4 GiB bundle is checked ~65 000 times).
const CHUNK: usize = 64 * 1024;

/// Unpacks a bundle safely into a new temporary folder under the system's temp dir. Errors are
/// one line naming the archive and the member, never the temporary folder.
pub(crate) fn extract(
    archive: &Path,
    stop: &dyn Fn() -> Option<super::interrupt::Interrupt>,
) -> Result<Extracted, ExtractError> {
    extract_in(archive, &std::env::temp_dir(), stop)
}

/// What one archive entry is, once its path and type have been checked.
enum Member {
    Dir(PathBuf),
    File(PathBuf),
    /// Long names and pax headers, handled by the tar reader itself.
    Meta,
}

/// An archive entry a bundle may not hold.
#[derive(Debug, thiserror::Error)]
enum MemberError {
    #[error("entry {n}: bad path: {source}")]
    BadPath { n: usize, source: std::io::Error },
    #[error("entry `{}`: absolute or `..` paths are refused", .0.display())]
    Outside(PathBuf),
    #[error("entry `{}`: {kind:?} entries (links, devices) are refused", path.display())]
    Kind { path: PathBuf, kind: tar::EntryType },
}

/// Checks entry `n`: a relative path without `..`, and a directory or a regular file.
fn member<R: Read>(n: usize, entry: &tar::Entry<'_, R>) -> Result<Member, MemberError> {
    let path = entry
        .path()
        .map_err(|source| MemberError::BadPath { n, source })?
        .to_path_buf();
    let kind = entry.header().entry_type();
    if matches!(kind, tar::EntryType::XGlobalHeader | tar::EntryType::XHeader) {
        return Ok(Member::Meta);
    }
    if path.as_os_str().is_empty()
        || !path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(MemberError::Outside(path));
    }
    match kind {
        tar::EntryType::Directory => Ok(Member::Dir(path)),
        tar::EntryType::Regular | tar::EntryType::Continuous => Ok(Member::File(path)),
        kind => Err(MemberError::Kind { path, kind }),
    }
}

type Stop<'a> = &'a dyn Fn() -> Option<super::interrupt::Interrupt>;

/// Walks the archive: at most `MAX_ENTRIES` entries and `MAX_TOTAL_BYTES` of content (the
/// sizes the headers declare refuse a bomb before it is decompressed), each entry checked
/// (`member`), `stop` asked before each entry and after each 64 KiB so that a signal ends even
/// one huge member at once. With `into`, the entries are written below it; without, they are
/// only read: the scan that refuses a bad archive before a single file is created (unpacking
/// half a million files only to remove them again takes a minute).
fn walk(archive: &Path, stop: Stop<'_>, into: Option<&Path>) -> Result<(), ExtractError> {
    let label = archive.display().to_string();
    let err = |m: String| ExtractError::Bad(format!("{label}: {m}"));
    let file = crate::files::open(archive, crate::files::BUNDLE).map_err(|e| ExtractError::Bad(e.to_string()))?;
    let mut ar = tar::Archive::new(GzDecoder::new(std::io::BufReader::new(file)));
    let entries = ar.entries().map_err(|e| err(format!("not a tar.gz archive: {e}")))?;
    let too_big = || err(format!("unpacks to more than {} GiB: refused", MAX_TOTAL_BYTES >> 30));
    let mut buf = vec![0u8; CHUNK];
    let (mut declared, mut total) = (0u64, 0u64);
    // The last folder made for a file: members of one folder come together, so most files
    // need no `create_dir_all` of their own.
    let mut made: Option<PathBuf> = None;
    for (n, entry) in entries.enumerate() {
        if let Some(i) = stop() {
            return Err(ExtractError::Interrupted(i));
        }
        if n >= MAX_ENTRIES {
            return Err(err(format!("more than {MAX_ENTRIES} entries: refused")));
        }
        let mut entry = entry.map_err(|e| err(format!("damaged archive: {e}")))?;
        let path = match member(n, &entry).map_err(|e| err(e.to_string()))? {
            Member::Meta => continue,
            Member::Dir(path) => {
                if let Some(into) = into {
                    std::fs::create_dir_all(into.join(&path))
                        .map_err(|e| err(format!("member `{}`: {e}", path.display())))?;
                }
                continue;
            }
            Member::File(path) => path,
        };
        let failed = |e: std::io::Error| err(format!("member `{}`: {e}", path.display()));
        declared = declared.saturating_add(entry.size());
        if declared > MAX_TOTAL_BYTES {
            return Err(too_big());
        }
        let mut out = match into {
            None => None,
            Some(into) => {
                let dest = into.join(&path);
                if let Some(p) = dest.parent()
                    && made.as_deref() != Some(p)
                {
                    std::fs::create_dir_all(p).map_err(failed)?;
                    made = Some(p.to_path_buf());
                }
                Some(std::fs::File::create(&dest).map_err(failed)?)
            }
        };
        loop {
            let got = entry.read(&mut buf).map_err(failed)?;
            if got == 0 {
                break;
            }
            total += got as u64;
            if total > MAX_TOTAL_BYTES {
                return Err(too_big());
            }
            if let Some(out) = &mut out {
                out.write_all(&buf[..got]).map_err(failed)?;
            }
            if let Some(i) = stop() {
                return Err(ExtractError::Interrupted(i));
            }
        }
    }
    Ok(())
}

/// `extract`, into a new folder under `parent`. The archive is scanned first; the limits are
/// checked again while writing, since the file could change in between.
pub(crate) fn extract_in(archive: &Path, parent: &Path, stop: Stop<'_>) -> Result<Extracted, ExtractError> {
    let label = archive.display().to_string();
    let err = |m: String| ExtractError::Bad(format!("{label}: {m}"));
    walk(archive, stop, None)?;
    let root = tempfile::Builder::new()
        .prefix("podlife-bundle-")
        .tempdir_in(parent)
        .map_err(|e| err(format!("cannot create a temporary folder in {}: {e}", parent.display())))?;
    UNPACKED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(root.path().to_path_buf());
    // From here on `ex` removes the folder on every path, errors included.
    let mut ex = Extracted {
        dir: root.path().to_path_buf(),
        names: crate::files::Names::bundle(root.path(), archive),
        root,
    };
    walk(archive, stop, Some(ex.root.path()))?;
    let mut runs: Vec<PathBuf> = std::fs::read_dir(ex.root.path())
        .map_err(|e| err(e.to_string()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| crate::run::is_run_folder(p))
        .collect();
    ex.dir = match runs.len() {
        1 => runs.remove(0),
        0 if crate::run::is_run_folder(ex.root.path()) => ex.root.path().to_path_buf(),
        0 => return Err(err("no run folder inside (expected <runid>/summary.json)".into())),
        _ => return Err(err("several run folders inside; a bundle holds one run".into())),
    };
    Ok(ex)
}

/// `Some(extracted)` when `p` is a bundle, `None` for a folder. Ctrl-C, SIGTERM or SIGHUP while
/// it unpacks stop it, and the partly unpacked folder is removed.
pub fn open(p: &Path) -> Result<Option<Extracted>, ExtractError> {
    if is_bundle(p) {
        super::interrupt::while_listening(|stop| extract(p, stop)).map(Some)
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_gz(entries: &[(&str, &[u8], tar::EntryType)]) -> Vec<u8> {
        let mut b = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
        for (path, data, kind) in entries {
            let mut h = tar::Header::new_gnu();
            // set_path refuses `..`; write the raw name like a hostile archiver would.
            let name = h.as_gnu_mut().unwrap();
            name.name[..path.len()].copy_from_slice(path.as_bytes());
            h.set_size(data.len() as u64);
            h.set_entry_type(*kind);
            h.set_mode(0o644);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    /// Unpacks `bytes` as a bundle; the error as the user reads it.
    fn extract_bytes(bytes: &[u8]) -> Result<Extracted, Refused> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.tar.gz");
        std::fs::write(&p, bytes).unwrap();
        extract(&p, &|| None).map_err(|e| Refused(e.to_string()))
    }

    /// A refusal's message, which the tests read.
    #[derive(Debug)]
    struct Refused(String);

    impl Refused {
        fn contains(&self, s: &str) -> bool {
            self.0.contains(s)
        }
    }

    #[test]
    fn traversal_absolute_and_links_are_refused() {
        let r = extract_bytes(&tar_gz(&[("../evil", b"x", tar::EntryType::Regular)]));
        assert!(r.unwrap_err().contains("`..` paths are refused"));
        let r = extract_bytes(&tar_gz(&[("/etc/evil", b"x", tar::EntryType::Regular)]));
        assert!(r.unwrap_err().contains("absolute"));
        let r = extract_bytes(&tar_gz(&[("run/link", b"", tar::EntryType::Symlink)]));
        assert!(r.unwrap_err().contains("refused"), "symlink");
        let r = extract_bytes(b"not gzip at all");
        assert!(r.is_err());
    }

    #[test]
    fn an_archive_without_a_run_is_refused_and_its_temp_folder_removed() {
        let r = extract_bytes(&tar_gz(&[("run/hello.txt", b"hi", tar::EntryType::Regular)]));
        assert!(r.unwrap_err().contains("no run folder inside"));
        let ok = extract_bytes(&tar_gz(&[("abc/summary.json", b"{}", tar::EntryType::Regular)])).unwrap();
        assert!(ok.dir.ends_with("abc"));
        let root = ok.root().to_path_buf();
        drop(ok);
        assert!(!root.exists(), "temporary folder removed on drop");
    }

    /// `bytes` written as `x.tar.gz` in a new folder, beside an empty `tmp/` to unpack into.
    fn archive_and_parent(bytes: &[u8]) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("x.tar.gz");
        std::fs::write(&archive, bytes).unwrap();
        let parent = dir.path().join("tmp");
        std::fs::create_dir(&parent).unwrap();
        (dir, archive, parent)
    }

    /// A link, however late in the archive, is refused before a folder is made: the scan reads
    /// every header first.
    #[test]
    fn a_bad_entry_is_refused_before_anything_is_written() {
        let bytes = tar_gz(&[
            ("abc/summary.json", b"{}", tar::EntryType::Regular),
            ("abc/data.bin", &[0u8; 1000], tar::EntryType::Regular),
            ("abc/link", b"", tar::EntryType::Symlink),
        ]);
        let (_dir, archive, parent) = archive_and_parent(&bytes);
        // `stop` is asked throughout: it sees whether a folder was ever made.
        let made = std::cell::Cell::new(false);
        let stop = || {
            made.set(made.get() || std::fs::read_dir(&parent).unwrap().count() > 0);
            None
        };
        let e = extract_in(&archive, &parent, &stop).unwrap_err();
        assert!(e.to_string().contains("entry `abc/link`: Symlink entries"), "{e}");
        assert!(!made.get(), "a folder was made before the archive was refused");
    }

    /// An unpacking stopped by a signal once it has written something leaves nothing in the
    /// temp dir, and no error names it.
    #[test]
    fn an_interrupted_extraction_removes_its_folder() {
        let big = vec![0u8; 4 * CHUNK];
        let bytes = tar_gz(&[
            ("abc/big.bin", big.as_slice(), tar::EntryType::Regular),
            ("abc/summary.json", b"{}", tar::EntryType::Regular),
        ]);
        let (_dir, archive, parent) = archive_and_parent(&bytes);
        // The signal comes once unpacking has written something (after the scan).
        let written = || {
            std::fs::read_dir(&parent)
                .unwrap()
                .flatten()
                .any(|d| std::fs::read_dir(d.path()).is_ok_and(|mut e| e.next().is_some()))
        };
        let stop = || written().then_some(crate::run::interrupt::SIGTERM);
        let r = extract_in(&archive, &parent, &stop);
        assert_eq!(
            r.unwrap_err(),
            ExtractError::Interrupted(crate::run::interrupt::SIGTERM)
        );
        assert_eq!(std::fs::read_dir(&parent).unwrap().count(), 0, "nothing left behind");
        let unpacked = UNPACKED.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert!(unpacked.iter().all(|p| !p.starts_with(&parent)), "{unpacked:?}");
    }

    #[test]
    fn errors_name_the_bundle_and_member_never_the_temporary_folder() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("x.tar.gz");
        // A file, then a folder under that file's name: unpacking the second fails.
        let bytes = tar_gz(&[
            ("abc/f", b"x", tar::EntryType::Regular),
            ("abc/f/g", b"y", tar::EntryType::Regular),
        ]);
        std::fs::write(&archive, bytes).unwrap();
        let parent = dir.path().join("tmp");
        std::fs::create_dir(&parent).unwrap();
        let e = extract_in(&archive, &parent, &|| None).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: member `abc/f/g`", archive.display())),
            "{e}"
        );
        assert!(!e.contains("podlife-bundle-"), "{e}");
        assert_eq!(std::fs::read_dir(&parent).unwrap().count(), 0);
    }
}
