//! Diagnostics: `Diag`, one problem as `file:line:col: path: message`, and YAML parsing that reports
//! where a document is wrong (the field path and the parser's position) in that form.

use super::*;

/// One validation problem, printed as `file:line:col: path: message`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diag {
    pub file: String,
    pub line: u64,
    pub col: u64,
    pub path: String,
    pub message: String,
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col.max(1))?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Parses YAML into `T`, reporting `file:line:col: path: message` on failure.
pub fn parse_yaml<T: serde::de::DeserializeOwned>(text: &str, file: &str) -> Result<T, Diag> {
    let mut path = String::new();
    let res = serde_saphyr::with_deserializer_from_str(text, |de| match serde_path_to_error::deserialize::<_, T>(de) {
        Ok(v) => Ok(v),
        Err(e) => {
            path = render_path(e.path());
            Err(e.into_inner())
        }
    });
    res.map_err(|e| {
        let (line, col) = e.location().map(|l| (l.line(), l.column())).unwrap_or((0, 0));
        Diag {
            file: file.to_string(),
            line,
            col,
            path,
            message: saphyr_message(&e),
        }
    })
}

pub(super) fn render_path(p: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in p.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            // `Loc`/`MarkRef` read through serde-saphyr's `Spanned`, which adds a `value` level.
            Segment::Map { key } if key == "value" => {}
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// The error message alone, on one line, without the snippet or location serde-saphyr adds.
pub(super) fn saphyr_message(e: &serde_saphyr::Error) -> String {
    let plain = e.without_snippet().to_string();
    let first = plain.lines().next().unwrap_or("").trim();
    // serde-saphyr appends " at line X column Y"; we print the location ourselves.
    let msg = match first.rfind(" at line ") {
        Some(i) => &first[..i],
        None => first,
    };
    let msg = msg.trim_start_matches("error: ").trim();
    if msg.is_empty() {
        "invalid YAML".to_string()
    } else {
        msg.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(line: u64, col: u64, path: &str) -> Diag {
        Diag {
            file: "s.yaml".into(),
            line,
            col,
            path: path.into(),
            message: "bad".into(),
        }
    }

    #[test]
    fn printed_as_file_line_col_path_message() {
        assert_eq!(
            diag(3, 7, "cases[0].name").to_string(),
            "s.yaml:3:7: cases[0].name: bad"
        );
        // An unknown position or an empty path is left out; a column of 0 reads as 1.
        assert_eq!(diag(0, 0, "").to_string(), "s.yaml: bad");
        assert_eq!(diag(2, 0, "").to_string(), "s.yaml:2:1: bad");
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Doc {
        items: Vec<Item>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        n: u32,
    }

    #[test]
    fn a_yaml_error_names_where_it_is() {
        let d = parse_yaml::<Doc>("items:\n  - n: 1\n  - n: x\n", "f.yaml").unwrap_err();
        assert_eq!((d.file.as_str(), d.line), ("f.yaml", 3), "{d}");
        assert!(d.path.starts_with("items[1]"), "{d}");
    }
}
