//! Namespace names of cases (`namespace_name`): one per run, suite, case and attempt, a valid
//! DNS-1123 label of at most 63 characters. Pure string work (no kube), so `validate` can reject
//! two cases that would share a name before anything touches a cluster.

use std::collections::BTreeMap;

use super::load::{Diag, Suite};

/// Kubernetes limits namespace names to one DNS-1123 label.
pub(crate) const MAX_NAMESPACE_LEN: usize = 63;

/// What a case contributes to its namespace name: `<suite>-<case>`. Two cases with the same
/// stem would share namespaces, so `validate` rejects that (see `stem_collisions`).
pub(crate) fn namespace_stem(suite: &str, case: &str) -> String {
    format!("{suite}-{case}")
}

/// The namespace of one attempt of a case: `podlife-<run>-<suite>-<case>` for the first attempt,
/// `…-<n>` for the n-th (repetitions and retries count on, so `--repeat` and `--retries` never
/// reuse a name that may still be terminating). Longer than 63 characters: cut, and ended with
/// a hash of the full identity so that two long names that share a prefix still differ.
pub fn namespace_name(run_id: &str, suite: &str, case: &str, attempt: usize) -> String {
    let mut full = format!("podlife-{run_id}-{}", namespace_stem(suite, case));
    if attempt > 0 {
        full.push_str(&format!("-{}", attempt + 1));
    }
    if full.len() <= MAX_NAMESPACE_LEN {
        return full;
    }
    hashed(&full, &format!("{run_id}\0{suite}\0{case}\0{attempt}"))
}

/// The namespace of one attempt of a case's `--each-node` copy on `node`:
/// `podlife-<run>-<suite>-<case>-<node>[-<n>]`. Node names may hold dots (DNS subdomains, e.g.
/// `ip-10-0-1-2.ec2.internal`) that a namespace may not: they become `-`, and such a name (like
/// one over 63 characters) ends with a hash of the full identity, so `a.b` and `a-b` differ.
pub(crate) fn node_namespace_name(run_id: &str, suite: &str, case: &str, node: &str, attempt: usize) -> String {
    let clean: String = node
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut full = format!(
        "podlife-{run_id}-{}-{}",
        namespace_stem(suite, case),
        clean.trim_matches('-')
    );
    if attempt > 0 {
        full.push_str(&format!("-{}", attempt + 1));
    }
    if full.len() <= MAX_NAMESPACE_LEN && clean == node {
        return full;
    }
    hashed(&full, &format!("{run_id}\0{suite}\0{case}\0{node}\0{attempt}"))
}

/// A name that is certainly different from any other of this run: used by the runner when a
/// computed name was already handed out (e.g. case `a-2` and the second attempt of case `a`).
pub(crate) fn namespace_name_alt(run_id: &str, suite: &str, case: &str, node: Option<&str>, attempt: usize) -> String {
    let full = match node {
        Some(n) => node_namespace_name(run_id, suite, case, n, attempt),
        None => namespace_name(run_id, suite, case, attempt),
    };
    let node = node.unwrap_or_default();
    hashed(&full, &format!("alt\0{run_id}\0{suite}\0{case}\0{node}\0{attempt}"))
}

/// The second namespace of the attempt whose namespace is `ns` (`secondNamespace:`): `ns`'s
/// prefix and a hash of `ns`. Always hashed, so it never equals a name `namespace_name` gives
/// (those end with the case name or an attempt number, the hash only when over 63 characters).
pub fn second_namespace_name(ns: &str) -> String {
    hashed(&format!("{ns}-b"), &format!("second\0{ns}"))
}

/// `prefix-<10 hex digits>` within 63 characters, the prefix cut from `full`.
fn hashed(full: &str, identity: &str) -> String {
    let h = format!("{:010x}", fnv1a(identity.as_bytes()) & 0xff_ffff_ffff);
    let keep = MAX_NAMESPACE_LEN - h.len() - 1;
    let prefix: String = full.chars().take(keep).collect();
    format!("{}-{h}", prefix.trim_end_matches('-'))
}

use crate::util::fnv1a;

/// One error per case whose namespace stem another case already has (`a-b` + `c` and `a` +
/// `b-c` both give `a-b-c`): such cases would delete each other's namespaces.
pub(crate) fn stem_collisions(suites: &[Suite]) -> Vec<Diag> {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut out = vec![];
    for s in suites {
        for c in &s.cases {
            let stem = namespace_stem(s.name(), c.name());
            let here = c.full_name();
            match seen.get(&stem) {
                Some(prev) => out.push(Diag {
                    file: s.shown.clone(),
                    line: c.spec.name.line,
                    col: c.spec.name.col,
                    path: "name".into(),
                    message: format!(
                        "case `{here}` would share the namespace name `podlife-<run>-{stem}` with `{prev}`: rename the suite or the case"
                    ),
                }),
                None => {
                    seen.insert(stem, here);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(n: &str) -> bool {
        n.len() <= MAX_NAMESPACE_LEN
            && n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !n.starts_with('-')
            && !n.ends_with('-')
    }

    #[test]
    fn short_names_are_readable_and_attempts_differ() {
        assert_eq!(
            namespace_name("abc12345", "termination", "sigterm-handled", 0),
            "podlife-abc12345-termination-sigterm-handled"
        );
        assert_eq!(
            namespace_name("abc12345", "termination", "sigterm-handled", 2),
            "podlife-abc12345-termination-sigterm-handled-3"
        );
    }

    #[test]
    fn a_second_namespace_is_valid_and_differs_from_every_first() {
        let short = namespace_name("abc12345", "objects", "secret-volume-other-ns", 0);
        let long = namespace_name("abc12345", &"s".repeat(40), &"c".repeat(40), 1);
        for ns in [&short, &long] {
            let second = second_namespace_name(ns);
            assert!(valid(&second), "{second}");
            assert_ne!(&second, ns);
            assert_eq!(second, second_namespace_name(ns), "the same attempt, the same name");
        }
        assert!(
            second_namespace_name(&short).starts_with(&short),
            "readable: the first's name leads"
        );
        assert_ne!(second_namespace_name(&short), second_namespace_name(&long));
        // A case named `<case>-b` has the first namespace `…-<case>-b`: never the second of `<case>`.
        let b = namespace_name("abc12345", "objects", "secret-volume-other-ns-b", 0);
        assert_ne!(second_namespace_name(&short), b);
    }

    #[test]
    fn long_names_are_cut_with_a_hash_and_stay_unique() {
        let suite = "s".repeat(40);
        let a = namespace_name("abc12345", &suite, &format!("{}-a", "c".repeat(38)), 0);
        let b = namespace_name("abc12345", &suite, &format!("{}-b", "c".repeat(38)), 0);
        let b2 = namespace_name("abc12345", &suite, &format!("{}-b", "c".repeat(38)), 1);
        for n in [&a, &b, &b2] {
            assert!(valid(n), "{n}");
            assert_eq!(n.len(), MAX_NAMESPACE_LEN, "{n}");
        }
        assert_ne!(a, b);
        assert_ne!(b, b2);
        // A cut that ends on a `-` does not leave `--`.
        let dash = namespace_name("abc12345", "x", &format!("{}-{}", "y".repeat(31), "z".repeat(30)), 0);
        assert!(valid(&dash) && !dash.contains("--"), "{dash}");
    }

    #[test]
    fn the_alternative_name_differs() {
        let n = namespace_name("r", "s", "a", 1);
        let alt = namespace_name_alt("r", "s", "a", None, 1);
        assert_ne!(n, alt);
        assert!(valid(&alt), "{alt}");
    }

    #[test]
    fn each_node_copies_differ_by_node_and_stay_valid() {
        let a = node_namespace_name("abc12345", "termination", "sigterm-handled", "vm", 0);
        assert_eq!(a, "podlife-abc12345-termination-sigterm-handled-vm");
        let b = node_namespace_name("abc12345", "termination", "sigterm-handled", "vm2", 0);
        assert_ne!(a, b);
        // Dots are not allowed in a namespace; `a.b` and `a-b` still get different names.
        let dot = node_namespace_name("abc12345", "s", "c", "ip-10-0-1-2.ec2.internal", 0);
        let dash = node_namespace_name("abc12345", "s", "c", "ip-10-0-1-2-ec2-internal", 0);
        assert!(valid(&dot) && valid(&dash), "{dot} {dash}");
        assert_ne!(dot, dash);
        let long = node_namespace_name("abc12345", &"s".repeat(30), &"c".repeat(30), &"n".repeat(60), 3);
        assert!(valid(&long), "{long}");
        assert_ne!(
            namespace_name_alt("r", "s", "c", Some("vm"), 0),
            namespace_name_alt("r", "s", "c", Some("vm2"), 0)
        );
    }
}
