//! Which cases libtest's filter (`FILTER`, `--exact`, `--skip`) selects. `run`, `list` and
//! `images` all select cases by name, so the rules sit here, below `run` and `cli` both.

/// A libtest-style filter as given on the command line.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Filter<'a> {
    pub filter: Option<&'a str>,
    pub exact: bool,
    pub skip: &'a [String],
}

impl Filter<'_> {
    /// libtest-style name filtering: substring (or exact) match, minus `--skip` substrings.
    pub fn selected(&self, name: &str) -> bool {
        let (filter, exact, skip) = (self.filter, self.exact, self.skip);
        let included = match filter {
            None => true,
            Some(f) if exact => name == f,
            Some(f) => name.contains(f),
        };
        included
            && !skip
                .iter()
                .any(|s| if exact { name == s } else { name.contains(s.as_str()) })
    }

    /// Whether the filter can select the case named `plain` (`suite::case`), before the nodes of
    /// an `--each-node` run are known: a name of a node copy is `suite::case@node`, so a filter
    /// with an `@` selects the case when its part before the `@` ends (or, exact, is) its name.
    /// Case and suite names never contain `@`.
    pub(crate) fn could_select(&self, plain: &str) -> bool {
        let included = match self.filter {
            None => true,
            Some(f) => match f.rsplit_once('@') {
                Some((name, _)) if self.exact => plain == name,
                Some((name, _)) => plain.ends_with(name),
                None if self.exact => plain == f,
                None => plain.contains(f),
            },
        };
        // A skip names a node copy, or the case itself (then every copy of it).
        let skipped = self.skip.iter().any(|s| {
            !s.contains('@')
                && if self.exact {
                    plain == *s
                } else {
                    plain.contains(s.as_str())
                }
        });
        included && !skipped
    }

    /// Whether the filter selects this case (or node copy of it, `name` = `suite::case@node`).
    pub fn selects(&self, plain: &str, name: &str) -> bool {
        let hit = |f: &str| {
            if self.exact {
                name == f || plain == f
            } else {
                name.contains(f)
            }
        };
        self.filter.is_none_or(hit) && !self.skip.iter().any(|s| hit(s))
    }
}
