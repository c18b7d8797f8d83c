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
pub const MAX_TOTAL_BYTES: u64 = 4 << 30;
pub const MAX_ENTRIES: usize = 500_000;

/// Is this path a bundle (by name)?
pub fn is_bundle(p: &Path) -> bool {
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

/// A bundle unpacked into a private temporary folder, removed when this is dropped.
#[derive(Debug)]
pub struct Extracted {
    /// The run folder inside (`<tmp>/<runid>`).
    pub dir: PathBuf,
    root: PathBuf,
}

impl Drop for Extracted {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Unpacks a bundle safely. Errors are one line naming the archive and the entry.
pub fn extract(archive: &Path) -> Result<Extracted, String> {
    let err = |m: String| format!("{}: {m}", archive.display());
    let file = crate::files::open(archive, crate::files::BUNDLE).map_err(|e| e.to_string())?;
    let root = std::env::temp_dir().join(format!(
        "podlife-bundle-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&root).map_err(|e| err(format!("cannot create {}: {e}", root.display())))?;
    // From here on `ex` removes the folder on every path, errors included.
    let mut ex = Extracted {
        dir: root.clone(),
        root,
    };
    let mut ar = tar::Archive::new(GzDecoder::new(std::io::BufReader::new(file)));
    let mut total: u64 = 0;
    let entries = ar.entries().map_err(|e| err(format!("not a tar.gz archive: {e}")))?;
    for (n, entry) in entries.enumerate() {
        if n >= MAX_ENTRIES {
            return Err(err(format!("more than {MAX_ENTRIES} entries: refused")));
        }
        let mut entry = entry.map_err(|e| err(format!("damaged archive: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| err(format!("entry {n}: bad path: {e}")))?
            .to_path_buf();
        if path.as_os_str().is_empty()
            || !path
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(err(format!(
                "entry `{}`: absolute or `..` paths are refused",
                path.display()
            )));
        }
        let dest = ex.root.join(&path);
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&dest).map_err(|e| err(format!("{}: {e}", dest.display())))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(p) = dest.parent() {
                    std::fs::create_dir_all(p).map_err(|e| err(format!("{}: {e}", p.display())))?;
                }
                let mut out = std::fs::File::create(&dest).map_err(|e| err(format!("{}: {e}", dest.display())))?;
                let room = MAX_TOTAL_BYTES - total;
                let copied = std::io::copy(&mut (&mut entry).take(room + 1), &mut out)
                    .map_err(|e| err(format!("entry `{}`: {e}", path.display())))?;
                total += copied;
                if total > MAX_TOTAL_BYTES {
                    return Err(err(format!(
                        "unpacks to more than {} GiB: refused",
                        MAX_TOTAL_BYTES >> 30
                    )));
                }
            }
            // Long names and pax headers are handled by the tar reader itself.
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => {}
            other => {
                return Err(err(format!(
                    "entry `{}`: {other:?} entries (links, devices) are refused",
                    path.display()
                )));
            }
        }
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&ex.root)
        .map_err(|e| err(e.to_string()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| crate::run::is_run_folder(p))
        .collect();
    ex.dir = match runs.len() {
        1 => runs.remove(0),
        0 if crate::run::is_run_folder(&ex.root) => ex.root.clone(),
        0 => return Err(err("no run folder inside (expected <runid>/summary.json)".into())),
        _ => return Err(err("several run folders inside; a bundle holds one run".into())),
    };
    Ok(ex)
}

/// `Some(extracted)` when `p` is a bundle, `None` for a folder.
pub fn open(p: &Path) -> Result<Option<Extracted>, String> {
    if is_bundle(p) { extract(p).map(Some) } else { Ok(None) }
}

/// Reads `BUNDLE.json` of an extracted bundle, if any (the podlife version that made it).
pub fn made_by(dir: &Path) -> Option<String> {
    let text = crate::files::read_string(&dir.join("BUNDLE.json"), crate::files::SUMMARY).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("podlife")?.as_str().map(str::to_string)
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

    fn extract_bytes(bytes: &[u8]) -> Result<Extracted, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.tar.gz");
        std::fs::write(&p, bytes).unwrap();
        extract(&p)
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
        let root = ok.root.clone();
        drop(ok);
        assert!(!root.exists(), "temporary folder removed on drop");
    }
}
