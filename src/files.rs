//! Bounded file reads (`Limit`, `FileError`): every file podlife reads — suites, manifests,
//! recordings and their logs, stored timelines, run summaries, bundles — goes through here.
//!
//! A path is checked with `std::fs::metadata` *before* it is opened, because opening a FIFO
//! blocks until a writer appears and a device such as `/dev/zero` never ends: anything that is
//! not a regular file is refused with one line naming the path. A regular file is read through
//! `take(limit + 1)`, so a file that grows while it is read still cannot exceed its limit.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes podlife reads from one file of a kind, and why that is enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// What the file is, for the error message ("suite file").
    pub what: &'static str,
    pub bytes: u64,
}

const MIB: u64 = 1024 * 1024;

/// A suite is written by hand (the largest built-in one is 29 KiB); 4 MiB leaves room for
/// generated suites while keeping `validate` instant.
pub(crate) const SUITE: Limit = Limit {
    what: "suite file",
    bytes: 4 * MIB,
};
/// The API server refuses a request above etcd's default 1.5 MiB (`--max-request-bytes`), so a
/// larger pod manifest could never be created anyway.
pub(crate) const MANIFEST: Limit = Limit {
    what: "pod manifest",
    bytes: 2 * MIB,
};
/// One file of a recording (a watch stream, `actions.jsonl`, a log file). The observer keeps at
/// most 32 MiB of log text per container instance (`MAX_LOG_BYTES_PER_INSTANCE`); JSON escaping
/// and receive times can grow that several times, and a pod watch of a long case holds a few
/// thousand pod objects of a few KiB each. 256 MiB covers both with room.
pub(crate) const RECORDING: Limit = Limit {
    what: "recording file",
    bytes: 256 * MIB,
};
/// A stored timeline holds the same evidence as a recording, once: the same bound.
pub(crate) const TIMELINE: Limit = Limit {
    what: "timeline",
    bytes: 256 * MIB,
};
/// `summary.json`, `run.json`, `cluster-info.json`, `BUNDLE.json`: a summary of a full run with
/// its verdicts and timings is under 1 MiB (the largest live run: 0.85 MiB); 64 MiB allows
/// thousands of cases with `--repeat`.
pub(crate) const SUMMARY: Limit = Limit {
    what: "run summary",
    bytes: 64 * MIB,
};
/// A `.tar.gz` bundle: it may unpack to at most 4 GiB (`run::bundle::MAX_TOTAL_BYTES`), and
/// gzip never makes data much larger, so a bigger archive cannot be a valid bundle.
pub const BUNDLE: Limit = Limit {
    what: "bundle",
    bytes: 4 * 1024 * MIB,
};
/// Small text lists shipped with podlife (the upstream conformance list: a few KiB).
pub(crate) const LIST: Limit = Limit {
    what: "list file",
    bytes: 4 * MIB,
};

/// Why a file could not be read; the message is one line naming the path.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct FileError {
    pub path: PathBuf,
    pub problem: Problem,
}

/// What was wrong with the file (`FileError` adds the path).
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("cannot read: {0}")]
    Io(std::io::Error),
    #[error("is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("larger than the {} limit for a {} ({})", human(limit.bytes), limit.what, human(*size))]
    TooLarge { limit: Limit, size: u64 },
    #[error("not UTF-8 text (byte {0})")]
    NotUtf8(usize),
}

impl FileError {
    fn new(path: &Path, problem: Problem) -> FileError {
        FileError {
            path: path.to_path_buf(),
            problem,
        }
    }

    /// The file does not exist (callers for whom an absent file is normal test this).
    pub(crate) fn is_not_found(&self) -> bool {
        matches!(&self.problem, Problem::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

fn human(bytes: u64) -> String {
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// What a non-regular file is, in words.
fn kind_of(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Opens `path` if (and only if) it is a regular file no larger than `limit`; the reader
/// stops one byte past the limit so `read_bytes` can tell an over-long file.
pub fn open(path: &Path, limit: Limit) -> Result<std::io::Take<std::fs::File>, FileError> {
    // metadata() before open(): opening a FIFO would block here.
    let meta = std::fs::metadata(path).map_err(|e| FileError::new(path, Problem::Io(e)))?;
    if !meta.file_type().is_file() {
        return Err(FileError::new(path, Problem::NotRegular(kind_of(&meta.file_type()))));
    }
    if meta.len() > limit.bytes {
        return Err(FileError::new(
            path,
            Problem::TooLarge {
                limit,
                size: meta.len(),
            },
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| FileError::new(path, Problem::Io(e)))?;
    Ok(file.take(limit.bytes.saturating_add(1)))
}

/// Reads a regular file of at most `limit` bytes.
pub(crate) fn read_bytes(path: &Path, limit: Limit) -> Result<Vec<u8>, FileError> {
    let mut reader = open(path, limit)?;
    let mut buf = vec![];
    reader
        .read_to_end(&mut buf)
        .map_err(|e| FileError::new(path, Problem::Io(e)))?;
    // The file grew between metadata() and the read.
    if buf.len() as u64 > limit.bytes {
        let size = buf.len() as u64;
        return Err(FileError::new(path, Problem::TooLarge { limit, size }));
    }
    Ok(buf)
}

/// Reads a regular UTF-8 text file of at most `limit` bytes. A leading UTF-8 byte order mark
/// (which some Windows editors add) is not part of the text and is dropped.
pub(crate) fn read_string(path: &Path, limit: Limit) -> Result<String, FileError> {
    let mut bytes = read_bytes(path, limit)?;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| FileError::new(path, Problem::NotUtf8(e.utf8_error().valid_up_to())))
}

/// Calls `f(line_number, line)` for each line of a regular UTF-8 text file of at most `limit`
/// bytes, reading it a line at a time: a recording's watch stream can hold hundreds of MiB, and
/// holding its whole text beside what is parsed from it doubles the memory for nothing. A
/// leading byte order mark is dropped, as in `read_string`. `f`'s error stops the reading.
pub(crate) fn for_each_line<E: From<FileError>>(
    path: &Path,
    limit: Limit,
    mut f: impl FnMut(usize, &str) -> Result<(), E>,
) -> Result<(), E> {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, open(path, limit)?);
    let mut buf = vec![];
    let mut total: u64 = 0;
    let mut n = 0;
    // Offsets in errors count in the text without its byte order mark, as `read_string`'s do.
    let mut bom = 0;
    loop {
        buf.clear();
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| FileError::new(path, Problem::Io(e)))?;
        if read == 0 {
            return Ok(());
        }
        let at = total;
        total += read as u64;
        // The file grew between metadata() and the read.
        if total > limit.bytes {
            return Err(FileError::new(path, Problem::TooLarge { limit, size: total }).into());
        }
        n += 1;
        let mut line: &[u8] = &buf;
        if n == 1 && line.starts_with(b"\xEF\xBB\xBF") {
            line = &line[3..];
            bom = 3;
        }
        let start = (at + (read - line.len()) as u64 - bom) as usize;
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text =
            std::str::from_utf8(line).map_err(|e| FileError::new(path, Problem::NotUtf8(start + e.valid_up_to())))?;
        f(n, text)?;
    }
}

/// Like `read_string`, but an absent file is `Ok(None)` (a FIFO, a device or an over-long
/// file is still an error, never taken for "absent").
pub(crate) fn read_string_opt(path: &Path, limit: Limit) -> Result<Option<String>, FileError> {
    match read_string(path, limit) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `path` lies inside `root` once symlinks are resolved (both must exist). Used where
/// a file named by data (a recording's index) must not lead podlife out of its folder.
pub(crate) fn is_within(root: &Path, path: &Path) -> bool {
    match (root.canonicalize(), path.canonicalize()) {
        (Ok(r), Ok(p)) => p.starts_with(r),
        _ => false,
    }
}

/// How podlife names the files it reads in what it prints and stores. A bundle is unpacked into
/// a temporary folder that is gone once podlife ends (and means nothing on another machine), so
/// its members are named `<bundle>:<member>`, as `tar` lists them; every other file is named by
/// the path it was given. Made by whoever knows where a tree came from (`bundle::Extracted`)
/// and handed to what reads it: the suite loader, the recording reader, the replay.
/// A file that could not be read, named as `Names` names it (see `Names::unreadable`).
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct Unreadable {
    pub file: String,
    pub problem: Problem,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    /// The folder a bundle was unpacked into, and how the bundle is named.
    unpacked: Option<(PathBuf, String)>,
}

impl Names {
    /// Names for the members of `bundle`, unpacked into `root`.
    pub fn bundle(root: &Path, bundle: &Path) -> Names {
        Names {
            unpacked: Some((root.to_path_buf(), bundle.display().to_string())),
        }
    }

    /// `e` with its file named as these names name it.
    pub fn unreadable(&self, e: FileError) -> Unreadable {
        Unreadable {
            file: self.name(&e.path),
            problem: e.problem,
        }
    }

    /// How `path` is named: `<bundle>:<member>` for a path inside the unpacked folder (the
    /// bundle itself for the folder), otherwise the path as given.
    pub fn name(&self, path: &Path) -> String {
        if let Some((root, bundle)) = &self.unpacked
            && let Ok(member) = path.strip_prefix(root)
        {
            return if member.as_os_str().is_empty() {
                bundle.clone()
            } else {
                format!("{bundle}:{}", member.display())
            };
        }
        path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_bundles_members_by_the_bundle() {
        let names = Names::bundle(Path::new("/tmp/podlife-bundle-x1"), Path::new("runs/r1.tar.gz"));
        assert_eq!(
            names.name(Path::new("/tmp/podlife-bundle-x1/r1/suites/a.yaml")),
            "runs/r1.tar.gz:r1/suites/a.yaml"
        );
        assert_eq!(names.name(Path::new("/tmp/podlife-bundle-x1")), "runs/r1.tar.gz");
        // A sibling whose name only starts like the folder is not inside it.
        assert_eq!(
            names.name(Path::new("/tmp/podlife-bundle-x10/a")),
            "/tmp/podlife-bundle-x10/a"
        );
        assert_eq!(Names::default().name(Path::new("suites/a.yaml")), "suites/a.yaml");
    }

    #[test]
    fn refuses_a_directory_and_a_device_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_string(dir.path(), SUITE).unwrap_err();
        assert!(matches!(e.problem, Problem::NotRegular("a directory")), "{e}");
        let e = read_bytes(Path::new("/dev/zero"), RECORDING).unwrap_err();
        assert!(e.to_string().contains("/dev/zero: is a character device"), "{e}");
    }

    #[test]
    fn an_oversize_file_names_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        std::fs::write(&p, vec![b'x'; 100]).unwrap();
        let small = Limit {
            what: "test file",
            bytes: 99,
        };
        let e = read_string(&p, small).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: larger than the 99 bytes limit for a test file (100 bytes)",
                p.display()
            )
        );
        let exact = Limit {
            what: "test file",
            bytes: 100,
        };
        assert_eq!(read_string(&p, exact).unwrap().len(), 100);
    }

    #[test]
    fn absent_is_none_but_bad_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_string_opt(&dir.path().join("nope"), SUITE).unwrap().is_none());
        assert!(read_string_opt(dir.path(), SUITE).is_err());
    }

    fn lines_of(p: &Path, limit: Limit) -> Result<Vec<(usize, String)>, FileError> {
        let mut out = vec![];
        for_each_line(p, limit, |n, l| {
            out.push((n, l.to_string()));
            Ok::<(), FileError>(())
        })?;
        Ok(out)
    }

    #[test]
    fn lines_are_read_as_str_lines_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let text = "\u{FEFF}a\r\nb\n\nlast";
        std::fs::write(&p, text).unwrap();
        let got = lines_of(&p, SUITE).unwrap();
        let want: Vec<(usize, String)> = read_string(&p, SUITE)
            .unwrap()
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.to_string()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(got[0].1, "a");
        // A non-UTF-8 byte is reported at the offset `read_string` gives, not following the BOM.
        std::fs::write(&p, b"\xEF\xBB\xBFok\nx\xFFy\n").unwrap();
        let (Err(a), Err(b)) = (lines_of(&p, SUITE), read_string(&p, SUITE)) else {
            panic!("invalid UTF-8 was accepted")
        };
        assert_eq!(a.to_string(), b.to_string());
        assert!(matches!(a.problem, Problem::NotUtf8(4)), "{a}");
        // Over the limit: refused before a line is read.
        std::fs::write(&p, "12345\n").unwrap();
        let tiny = Limit {
            what: "test file",
            bytes: 3,
        };
        assert!(matches!(
            lines_of(&p, tiny).unwrap_err().problem,
            Problem::TooLarge { .. }
        ));
    }
}
