//! Copying fixture trees into temporary folders, so a test can change its copy.

use std::path::Path;

/// Copies the tree at `from` to `to`, following links to folders (the recordings' STATUS
/// scenarios link to the scenario folders they share).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// A temporary copy of the folder `from` in which `edit` has seen each JSON line of `file` (a
/// path inside the folder) and answered whether it changed it: changed lines are written back
/// as JSON, the others as they were. Returns the copy and how many lines changed.
pub fn copy_with_edited_lines(
    from: &Path,
    file: &str,
    mut edit: impl FnMut(&mut serde_json::Value) -> bool,
) -> (tempfile::TempDir, usize) {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(from, dir.path());
    let path = dir.path().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut changed = 0;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if edit(&mut v) {
                changed += 1;
                v.to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    (dir, changed)
}
