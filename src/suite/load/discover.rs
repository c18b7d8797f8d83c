//! Discovery: the suite files a list of paths names (files, and `*.yaml`/`*.yml` under folders), each read
//! once even through symlink loops or overlapping arguments.

use super::*;

/// Finds suite files: each PATH is a file or a directory searched recursively for `*.yaml`/`*.yml`.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Vec<Diag>> {
    discover_named(paths, &crate::files::Names::default())
}

/// `discover`, a path that does not exist named as `names` names it.
pub(super) fn discover_named(paths: &[PathBuf], names: &crate::files::Names) -> Result<Vec<PathBuf>, Vec<Diag>> {
    let mut files = vec![];
    let mut errors = vec![];
    // Folders walked and files taken, by canonical path: a symlink loop (`suites/again ->
    // ..`) or a suite reached twice (`validate suites suites/a.yaml`) is read once.
    let mut walked = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for p in paths {
        if p.is_dir() {
            let mut found = vec![];
            walk(p, &mut walked, &mut found);
            found.sort();
            for f in found {
                if seen.insert(f.canonicalize().unwrap_or_else(|_| f.clone())) {
                    files.push(f);
                }
            }
        } else if p.exists() {
            // Not only regular files: a FIFO or a device is then refused by name when read.
            if seen.insert(p.canonicalize().unwrap_or_else(|_| p.clone())) {
                files.push(p.clone());
            }
        } else {
            errors.push(Diag {
                file: names.name(p),
                line: 0,
                col: 0,
                path: String::new(),
                message: "no such file or directory".into(),
            });
        }
    }
    if errors.is_empty() { Ok(files) } else { Err(errors) }
}

pub(super) fn walk(dir: &Path, walked: &mut BTreeSet<PathBuf>, out: &mut Vec<PathBuf>) {
    // A folder already walked (reached again through a symlink, or a loop) is not walked again.
    let Ok(canonical) = dir.canonicalize() else { return };
    if !walked.insert(canonical) {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            // Pod manifests live beside suites; they are not suites.
            if p.file_name().is_some_and(|n| n == "manifests") {
                continue;
            }
            walk(&p, walked, out);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
            out.push(p);
        }
    }
}
