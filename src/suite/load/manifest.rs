//! Manifest I/O: a suite's project root, and how a `manifest:` path is found (from the suite's folder up
//! to the project root, never above it) and read (size-bounded, YAML), each failure one line naming the file.

use super::*;

/// The suite's project root: the directory holding the `suites/` folder the suite file is in
/// (`<root>/suites/a/b.yaml` → `<root>`), else the suite file's own directory.
pub fn project_root(base: &Path) -> &Path {
    base.ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == "suites"))
        .and_then(Path::parent)
        .map(|r| if r.as_os_str().is_empty() { Path::new(".") } else { r })
        .unwrap_or(base)
}

/// Why a `manifest:` path cannot be loaded. `name` is the path as the suite wrote it; the other
/// paths are named as `files::Names` names them.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ManifestError {
    #[error("manifest `{name}` not found")]
    AbsentAbsolute { name: String },
    /// Found only by a `..` that climbs above the project root.
    #[error("manifest `{name}` resolves to {path}, outside the project root {root}: refused")]
    OutsideRoot { name: String, path: String, root: String },
    /// `searched` says where: the suite's folder, or from it up to the project root.
    #[error("manifest `{name}` not found ({searched})")]
    NotFound { name: String, searched: String },
    #[error("manifest `{path}`: {problem}")]
    Unreadable {
        path: String,
        problem: crate::files::Problem,
    },
    #[error("invalid manifest: {0}")]
    Invalid(Diag),
    /// The manifest is no object the case may create beside its pod.
    #[error("{path}: {problem}")]
    Object { path: String, problem: ObjectError },
}

/// Resolves a relative manifest path against the suite's directory, then each parent up to the
/// project root (`project_root`), never above it: a file in a directory above the project (a
/// shared temporary directory) is never picked up, and `..` cannot lead out of it. Symlinks are
/// followed: one inside the project was put there by its owner (e.g. a shared `manifests/`).
/// An absolute path is read as written (the suite's author named that exact file).
pub(super) fn load_manifest(
    base: &Path,
    names: &Names,
    m: &Loc<String>,
) -> Result<(serde_json::Value, PathBuf), ManifestError> {
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    let rel = Path::new(&m.value);
    let root = project_root(base);
    let path = if rel.is_absolute() {
        if !rel.exists() {
            return Err(ManifestError::AbsentAbsolute { name: m.value.clone() });
        }
        rel.to_path_buf()
    } else {
        let mut dirs = vec![];
        for d in base.ancestors() {
            dirs.push(d);
            if d == root {
                break;
            }
        }
        // The last directory searched is the project root, so `dirs[i]` lies
        // `dirs.len() - 1 - i` levels below it: a path whose `..` climbs further leaves it.
        let climbs_out = |i: usize| {
            let mut depth = (dirs.len() - 1 - i) as i64;
            rel.components().any(|c| {
                match c {
                    std::path::Component::ParentDir => depth -= 1,
                    std::path::Component::Normal(_) => depth += 1,
                    _ => {}
                }
                depth < 0
            })
        };
        let found = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| (i, d.join(rel)))
            .find(|(_, p)| p.exists());
        if let Some((i, path)) = &found
            && climbs_out(*i)
        {
            return Err(ManifestError::OutsideRoot {
                name: m.value.clone(),
                path: names.name(path),
                root: names.name(root),
            });
        }
        let Some((_, path)) = found else {
            let searched = if dirs.len() == 1 {
                format!("searched in {}", names.name(base))
            } else {
                format!(
                    "searched from {} up to the project root {}",
                    names.name(base),
                    names.name(root)
                )
            };
            return Err(ManifestError::NotFound {
                name: m.value.clone(),
                searched,
            });
        };
        path
    };
    let text = crate::files::read_string(&path, crate::files::MANIFEST).map_err(|e| ManifestError::Unreadable {
        path: names.name(&path),
        problem: e.problem,
    })?;
    let value: serde_json::Value = parse_yaml(&text, &names.name(&path)).map_err(ManifestError::Invalid)?;
    Ok((value, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_root_holds_the_suites_folder() {
        assert_eq!(project_root(Path::new("/p/suites/a/b")), Path::new("/p"));
        assert_eq!(project_root(Path::new("/p/suites")), Path::new("/p"));
        assert_eq!(project_root(Path::new("suites/a")), Path::new("."));
        // No `suites/` folder above: the suite file's own directory.
        assert_eq!(project_root(Path::new("/p/other")), Path::new("/p/other"));
    }
}
