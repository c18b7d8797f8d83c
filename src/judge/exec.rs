//! `exec` expectations on the recorded result (exit code, output) of an exec step.

use super::*;

/// An `exec` expectation on the recorded result of the step of that name. An exec that did not
/// complete decides nothing: its output may be partial and its exit status unknown.
pub(super) fn exec(x: &ExecExpect, tl: &Timeline) -> J {
    use crate::observe::ActionKind;
    let name = x.name.as_str();
    let Some(r) = tl
        .actions
        .iter()
        .filter(|a| a.kind == ActionKind::Exec)
        .filter_map(|a| a.exec.as_ref())
        .find(|r| r.name == name)
    else {
        // The step never ran (the steps check says why) or has not yet.
        let j = fail(format!("exec `{name}`: no result recorded (the step did not run)"));
        return if tl.complete { j } else { undecided(j.evidence) };
    };
    let shown = |s: &str| {
        let mut t: String = s.chars().take(200).collect();
        if t.len() < s.len() {
            t.push('…');
        }
        format!("{t:?}")
    };
    // A log read (`fetchLog`) is an exec action without a command.
    let what = if r.command.is_empty() {
        format!("log over {}", r.protocol.as_deref().unwrap_or("websocket"))
    } else {
        r.command.join(" ")
    };
    let got = format!(
        "exec `{name}` in `{}` ({what}): stdout {}, stderr {}, exit code {}",
        r.container,
        shown(&r.stdout),
        shown(&r.stderr),
        r.exit_code.map_or("none".to_string(), |c| c.to_string())
    );
    if let Some(e) = &r.error {
        return undecided(format!("{got}; undecided: the exec did not complete ({e})"));
    }
    let mut problems = vec![];
    if let Some(want) = x.exit_code
        && r.exit_code != Some(want)
    {
        problems.push(format!("exit code {want} expected"));
    }
    for (stream, text, equals, regex) in [
        ("stdout", &r.stdout, &x.stdout, &x.stdout_regex),
        ("stderr", &r.stderr, &x.stderr, &x.stderr_regex),
    ] {
        if let Some(e) = equals {
            match e.expand(&|n| marks::template_value(tl, n)) {
                Ok(e) if e == *text => {}
                Ok(e) => problems.push(format!("{stream} {e:?} expected")),
                Err(why) => return undecided(format!("{got}; {stream}: {why}")),
            }
        }
        if let Some(p) = regex {
            match marks::compile(p, tl) {
                Ok(re) if re.is_match(text) => {}
                Ok(re) => problems.push(format!("{stream} matching /{}/ expected", re.as_str())),
                Err(why) => return undecided(format!("{got}; {stream}: {why}")),
            }
        }
    }
    if problems.is_empty() {
        pass(got)
    } else if r.truncated {
        // Only what podlife kept of a longer output was judged.
        undecided(format!(
            "{got}; {}; undecided: the output was longer than podlife keeps and was cut",
            problems.join(", ")
        ))
    } else {
        fail(format!("{got}; {}", problems.join(", ")))
    }
}
