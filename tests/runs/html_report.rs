//! The HTML report (`index.html`, `podlife::report::html::render`) from real recordings, no
//! cluster: well-formed XML, self-contained, failures first with their gap annotated, and (with
//! chromium installed) a screenshot that renders.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use quick_xml::events::Event;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `podlife run` with `args` (plus `--reports <reports>`) and returns the run folder.
fn run(args: &[&std::ffi::OsStr], reports: &Path, code: i32) -> PathBuf {
    Command::cargo_bin("podlife")
        .unwrap()
        .current_dir(root())
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .arg("run")
        .args(args)
        .arg("--reports")
        .arg(reports)
        .assert()
        .code(code);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(reports).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "one run folder in {}", reports.display());
    dirs.pop().unwrap()
}

/// The replay of every recording (all pass, some cases ignored for lack of a recording).
fn passing_run(reports: &Path) -> PathBuf {
    run(&["--replay".as_ref(), "tests/fixtures/recordings".as_ref()], reports, 0)
}

/// termination.yaml with sigterm-ignored's `term`→`kill` gap expected at 10 s: that case fails
/// with 4.832 s measured.
fn failing_run(tmp: &Path) -> PathBuf {
    std::os::unix::fs::symlink(root().join("manifests"), tmp.join("manifests")).unwrap();
    let text = std::fs::read_to_string(root().join("suites/termination.yaml")).unwrap();
    let old = "- gap: {from: term, to: kill, min: 4750ms, max: 5500ms, allow: [tick, signal]}";
    assert_eq!(text.matches(old).count(), 1, "the mutated line is in termination.yaml");
    let text = text.replace(old, "- gap: {from: term, to: kill, target: 10s, tolerance: 300ms}");
    let suite = tmp.join("termination.yaml");
    std::fs::write(&suite, text).unwrap();
    let recordings = root().join("tests/fixtures/recordings");
    let reports = tmp.join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    run(
        &[
            "--suites".as_ref(),
            suite.as_os_str(),
            "--replay".as_ref(),
            recordings.as_os_str(),
        ],
        &reports,
        1,
    )
}

/// Parses the page with quick-xml, strictly: matching end tags, one root element, known entity
/// references only, valid attributes. Returns the element names in document order.
fn parse_strict(html: &str) -> Vec<String> {
    let mut reader = quick_xml::Reader::from_str(html);
    reader.config_mut().check_end_names = true;
    reader.config_mut().check_comments = true;
    let mut stack: Vec<String> = vec![];
    let mut names = vec![];
    let mut roots = 0;
    loop {
        let ev = reader
            .read_event()
            .unwrap_or_else(|e| panic!("not well-formed at byte {}: {e}", reader.error_position()));
        match ev {
            Event::Start(e) | Event::Empty(e) if stack.is_empty() && roots > 0 => {
                panic!("second root element <{}>", String::from_utf8_lossy(e.name().as_ref()))
            }
            Event::Start(e) => {
                let name = check_element(&e);
                if stack.is_empty() {
                    roots += 1;
                }
                stack.push(name.clone());
                names.push(name);
            }
            Event::Empty(e) => {
                names.push(check_element(&e));
            }
            Event::End(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                assert_eq!(stack.pop().as_deref(), Some(name.as_str()), "unbalanced </{name}>");
            }
            Event::GeneralRef(r) => {
                if r.is_char_ref() {
                    assert!(r.resolve_char_ref().unwrap().is_some(), "bad character reference");
                } else {
                    let name = r.decode().unwrap();
                    assert!(
                        ["amp", "lt", "gt", "quot", "apos"].contains(&name.as_ref()),
                        "entity &{name}; is not predefined in XML"
                    );
                }
            }
            Event::Text(t) => {
                t.decode().unwrap();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(stack.is_empty(), "unclosed elements at the end: {stack:?}");
    assert_eq!(roots, 1, "one root element");
    names
}

/// Checks one element: valid, unique attributes that unescape; nothing that loads anything.
fn check_element(e: &quick_xml::events::BytesStart) -> String {
    let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
    assert!(
        !["script", "link", "img", "iframe", "object", "embed", "image", "use"].contains(&name.as_str()),
        "<{name}> would load or run something"
    );
    for a in e.attributes() {
        let a = a.unwrap_or_else(|err| panic!("bad attribute in <{name}>: {err}"));
        let key = String::from_utf8(a.key.as_ref().to_vec()).unwrap();
        let value = a.normalized_value(quick_xml::XmlVersion::Implicit1_0).unwrap();
        assert!(
            !["src", "srcset", "xlink:href"].contains(&key.as_str()),
            "<{name} {key}=…>"
        );
        if key == "href" {
            assert!(
                value.starts_with('#'),
                "<{name} href=\"{value}\"> is not an in-page link"
            );
        }
        assert!(!value.contains("url("), "<{name} {key}=\"{value}\">");
    }
    name
}

/// The `<section class="case …">` of each case, in page order: (id, section text).
fn sections(html: &str) -> Vec<(String, &str)> {
    let mut out = vec![];
    let mut rest = html;
    while let Some(i) = rest.find("<section class=\"case ") {
        let s = &rest[i..];
        let end = s.find("</section>").unwrap() + "</section>".len();
        let id_at = s.find(" id=\"").unwrap() + 5;
        let id = s[id_at..id_at + s[id_at..].find('"').unwrap()].to_string();
        out.push((id, &s[..end]));
        rest = &s[end..];
    }
    out
}

/// The checker itself catches what it is there for.
#[test]
fn strict_parser_rejects_broken_markup() {
    let ok = "<!DOCTYPE html>\n<html><body><p a=\"1 &amp; 2\">x &lt; y &#47;</p><br/></body></html>";
    parse_strict(ok);
    for bad in [
        "<html><body><p>x</body></html>",
        "<html><p>x</p>",
        "<html>&nbsp;</html>",
        "<html><p a=\"1\" a=\"2\">x</p></html>",
        "<html><p>x</p></html><html></html>",
        "<html><script>x</script></html>",
        "<html><a href=\"https:x\">x</a></html>",
    ] {
        let r = std::panic::catch_unwind(|| parse_strict(bad));
        assert!(r.is_err(), "accepted: {bad}");
    }
}

fn assert_self_contained(html: &str) {
    for needle in ["http://", "https://", "src=", "<link", "<script", "@import", "url("] {
        assert!(!html.contains(needle), "index.html contains `{needle}`");
    }
}

#[test]
fn replay_report_is_well_formed_and_self_contained() {
    let reports = tempfile::tempdir().unwrap();
    let dir = passing_run(reports.path());
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    let names = parse_strict(&html);
    assert_self_contained(&html);

    // One SVG timeline per case that has a timeline file.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let cases = summary["cases"].as_array().unwrap();
    let with_timeline = cases.iter().filter(|c| c["timelineFile"].is_string()).count();
    let n_passed = summary["passed"].as_u64().unwrap() as usize;
    let n_ignored = summary["ignored"].as_u64().unwrap() as usize;
    assert_eq!(summary["failed"], 0);
    assert!(n_passed >= 30, "every recording replays: {n_passed} passed");
    // Every case that ran has a timeline, ignored ones none.
    assert_eq!(with_timeline, n_passed);
    assert_eq!(names.iter().filter(|n| *n == "svg").count(), with_timeline);
    assert_eq!(html.matches("<svg").count(), with_timeline);

    // Header: run id, counts and the replayed node's fingerprint.
    let run_id = summary["runId"].as_str().unwrap();
    assert!(html.contains(&format!("<code>{run_id}</code>")));
    assert!(html.contains(&format!("<b>{n_passed}</b> passed")));
    assert!(html.contains(&format!("<b>{n_ignored}</b> ignored")));
    for fact in [
        "v1.36.2",
        "containerd://2.1.9+unknown",
        "6.18.44-fc-v669",
        "Debian GNU/Linux forky/sid",
        "amd64",
    ] {
        // `://` is written with character references (the page has no literal URLs).
        let fact = fact.replace("://", ":&#47;&#47;");
        assert!(html.contains(&fact), "fingerprint fact {fact}");
    }
    assert!(html.contains("replay:tests/fixtures/recordings"));

    // All pass: passed cases (sorted) then ignored ones with their reason.
    let secs = sections(&html);
    assert_eq!(secs.len(), cases.len());
    let passed: Vec<&str> = secs
        .iter()
        .filter(|(_, s)| s.contains("class=\"case s-passed\""))
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(passed.len(), n_passed);
    let mut sorted = passed.clone();
    sorted.sort();
    assert_eq!(passed, sorted, "passed cases sorted by suite::case");
    assert!(secs[..n_passed].iter().all(|(_, s)| s.contains("s-passed")));
    assert!(secs[n_passed..].iter().all(|(_, s)| s.contains("s-ignored")));
    assert!(html.contains("ignored: no recording `restart-onfailure-exit0`"));

    // References are text without a scheme, not links.
    assert!(
        html.contains(
            "reference <code>kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination</code>"
        )
    );

    // The crash loop shows all six instances and its back-off events.
    let (_, crash) = secs
        .iter()
        .find(|(id, _)| id == "case-restart-policy--restart-always-crashloop")
        .unwrap();
    for n in 0..6 {
        assert!(crash.contains(&format!(">main#{n}</text>")), "lane main#{n}");
    }
    assert!(crash.contains(">BackOff ×6</text>"));
    assert!(crash.contains(">exit 1 Error</text>"));

    // Every case with snapshots has a STATUS lane and the `kubectl get pods -w` transcript.
    let (_, term) = secs
        .iter()
        .find(|(id, _)| id == "case-status--status-terminating")
        .unwrap();
    assert!(term.contains(">STATUS</text>"));
    assert!(term.contains("class=\"st st-term\""));
    assert!(
        term.contains("<title>STATUS Terminating from +8.998s (received)</title>"),
        "{term}"
    );
    assert!(term.contains("<summary>kubectl get pods -w</summary>"));
    assert!(
        term.contains("21:27:07.459    +8.998  prestop-exec-within-grace  1/1    Terminating        0         Running")
    );
    assert!(crash.contains(">CrashLoopBackOff</text>") || crash.contains("STATUS CrashLoopBackOff from"));
}

#[test]
fn failing_case_comes_first_with_its_gap_annotated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = failing_run(tmp.path());
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    parse_strict(&html);
    assert_self_contained(&html);

    let secs = sections(&html);
    let (id, first) = &secs[0];
    assert_eq!(id, "case-termination--sigterm-ignored");
    assert!(first.contains("<span class=\"badge b-failed\">FAILED</span>"));
    // The failed verdict with its evidence, and the bracket drawn red with the measured value.
    assert!(first.contains("<li class=\"v-fail\"><span class=\"tag\">FAIL</span> <span class=\"kind\">gap</span> gap `term`→`kill`: expected 10s ±300ms, measured 4.832s"));
    let gap = first
        .find("<g class=\"gap fail\">")
        .map(|i| &first[i..i + first[i..].find("</g>").unwrap()])
        .expect("a failed gap annotation");
    assert!(gap.contains(">✗ term→kill 4.832s</text>"), "{gap}");
    // Passing gaps stay green.
    assert!(first.contains("<g class=\"gap\">"));
    assert!(first.contains("<details class=\"collected\">"));
    // The other cases pass and follow, sorted.
    let rest: Vec<&str> = secs[1..].iter().map(|(id, _)| id.as_str()).collect();
    let mut sorted = rest.clone();
    sorted.sort();
    assert_eq!(rest, sorted);
    assert!(secs[1..].iter().all(|(_, s)| !s.contains("s-failed")));
    assert!(html.contains("<b>1</b> failed"));
}

/// A run's summary as the page is rendered from it: `summary.json` with its timeline files.
fn load_summary(dir: &Path) -> podlife::results::RunSummary {
    let mut summary: podlife::results::RunSummary =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    for c in &mut summary.cases {
        if let Some(f) = &c.timeline_file {
            c.timeline = Some(serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap());
        }
    }
    summary
}

/// The page is a function of the summary: rebuilt from `summary.json` and the timeline files,
/// it renders to the same bytes twice.
#[test]
fn render_is_deterministic() {
    let reports = tempfile::tempdir().unwrap();
    let dir = passing_run(reports.path());
    let summary = load_summary(&dir);
    let a = podlife::report::html::render(&summary);
    let b = podlife::report::html::render(&summary.clone());
    assert_eq!(a, b);
    let with_timeline = summary.cases.iter().filter(|c| c.timeline.is_some()).count();
    assert!(with_timeline >= 30);
    assert_eq!(a.matches("<svg").count(), with_timeline);
}

/// Text from suites and from the cluster (a case name, a verdict's evidence, an event reason, a
/// pod name) is markup-free text in the page and in the SVG: escaped, never an element.
#[test]
fn case_and_cluster_text_is_escaped_in_the_page_and_the_svg() {
    let reports = tempfile::tempdir().unwrap();
    let dir = passing_run(reports.path());
    let mut summary = load_summary(&dir);
    let evil = "<script>alert(1)</script> & co";
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co";
    let c = summary
        .cases
        .iter_mut()
        .find(|c| c.timeline.as_ref().is_some_and(|t| !t.events.is_empty()))
        .expect("a case with events");
    c.case = evil.into();
    c.attempts.last_mut().unwrap().verdicts[0].evidence = format!("evidence: {evil}");
    let tl = c.timeline.as_mut().unwrap();
    tl.events[0].reason = evil.into();
    tl.pod.name = evil.into();
    let html = podlife::report::html::render(&summary);
    parse_strict(&html);
    assert!(!html.contains("<script"), "a <script> element in the page");
    assert!(!html.contains(evil));
    let (_, section) = sections(&html)
        .into_iter()
        .find(|(_, s)| s.contains(&format!("::{escaped}</span>")))
        .expect("the case name, escaped, in its section title");
    assert!(section.contains(&format!("evidence: {escaped}</li>")), "{section}");
    let svg = &section[section.find("<svg").unwrap()..section.find("</svg>").unwrap()];
    // The event's tooltip holds the full reason, its lane label the first 22 characters.
    assert!(svg.contains(&format!("<title>{escaped} (")), "{svg}");
    assert!(svg.contains(">&lt;script&gt;alert(1)&lt;/scr…</text>"), "{svg}");
    assert!(section.contains(&format!("pod <code>{escaped}</code>")));
}

/// Renders the failing run's page in headless chromium and checks a screenshot came out.
#[test]
#[ignore = "needs chromium (apt-get install chromium)"]
fn screenshot_renders() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = failing_run(tmp.path());
    let page = dir.join("index.html");
    let shot = tmp.path().join("shot.png");
    let profile = tmp.path().join("chromium-profile");
    let out = std::process::Command::new("/usr/bin/chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2400")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(&shot).expect("screenshot written").len();
    assert!(size > 20_000, "screenshot is only {size} bytes");
    // Keep a copy for a human to look at.
    if let Ok(keep) = std::env::var("PODLIFE_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// The two-node fleet run A3 (vm, vm2: one fingerprint group, each undecided where the other
/// passed): the matrix holds only areas, and the differences are one table headed "vm and vm2
/// differ" — neither node is labelled the odd one, as two nodes have no majority.
#[test]
fn two_nodes_that_differ_are_one_table_not_two_odd_nodes() {
    let reports = tempfile::tempdir().unwrap();
    let bundle = "tests/fixtures/live-bundles/A3-my3ur1ih/my3ur1ih.tar.gz";
    let dir = run(&["--replay".as_ref(), bundle.as_ref()], reports.path(), 1);
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    parse_strict(&html);
    let fleet = &html[html.find("<section class=\"fleet\">").unwrap()..];
    let fleet = &fleet[..fleet.find("</section>").unwrap()];
    let matrix = &fleet[..fleet.find("</table>").unwrap()];
    assert!(!matrix.contains("kubelet"), "fingerprints are not in the matrix");
    assert_eq!(matrix.matches("<tr>").count(), 3, "a header and two nodes");
    assert!(!fleet.contains(">ODD<"), "{fleet}");
    assert!(fleet.contains("<h3>vm and vm2 differ"), "{fleet}");
    assert!(!fleet.contains("odd node out"));
    // One row per difference, a column per node.
    assert!(fleet.contains("<tr><th>case</th><th>what</th><th>vm</th><th>vm2</th><th>why</th></tr>"));
    assert!(fleet.contains("<td class=\"case\">status::status-init-progress</td><td>status</td><td class=\"v\">undecided</td><td class=\"v\">passed</td>"), "{fleet}");
    assert!(fleet.contains("<td class=\"case\">status::status-qos-besteffort</td><td>status</td><td class=\"v\">passed</td><td class=\"v\">undecided</td>"), "{fleet}");
}
