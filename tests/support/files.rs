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
