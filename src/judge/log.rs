//! `log` expectations: how many CRI log lines of a container (or instance) match, decided around log gaps.

use super::*;

pub(super) fn log(l: &LogExpect, tl: &Timeline) -> J {
    let re = match matcher(l.text(), tl) {
        Ok(r) => r,
        Err(why) => return undecided(format!("log {} in `{}`: {why}", l.text(), l.container)),
    };
    // The last instance is found once, not once per line (that was quadratic: 40 k lines took
    // 8.75 s to judge).
    let last = match l.instance {
        InstanceSel::Last => tl.logs_of(&l.container, None).map(|y| y.instance).max(),
        _ => None,
    };
    let lines: Vec<_> = tl
        .logs_of(&l.container, None)
        .filter(|x| match l.instance {
            InstanceSel::Nth(n) => x.instance == n,
            InstanceSel::Any | InstanceSel::Each => true,
            InstanceSel::Last => Some(x.instance) == last,
        })
        .collect();
    let matching: Vec<_> = lines.iter().filter(|x| re.is_match(&x.text)).collect();
    let what = format!("log {} in `{}`{}", re.label(), l.container, l.instance);
    let count = l.count.unwrap_or(Count::at_least(1));
    let sel = match l.instance {
        InstanceSel::Nth(n) => Some(n),
        InstanceSel::Last => lines.first().map(|x| x.instance),
        InstanceSel::Any | InstanceSel::Each => None,
    };
    let gap = tl.log_gaps(&l.container, sel).next().map(|g| g.describe());
    let mut j = decide_count_in_gap(&count, matching.len() as u64, tl.complete, what, gap);
    if let Some(first) = matching.first() {
        j.evidence.push_str(&format!(
            "; first \"{}\" {}#{} {}",
            first.text,
            first.container,
            first.instance,
            marks::hms(first.time)
        ));
    } else if j.outcome != Outcome::Pass {
        let tail: Vec<_> = lines
            .iter()
            .rev()
            .take(3)
            .rev()
            .map(|x| format!("\"{}\"", x.text))
            .collect();
        j.evidence.push_str(&format!(
            "; {} line(s) from `{}`, last: {}",
            lines.len(),
            l.container,
            if tail.is_empty() {
                "none".into()
            } else {
                tail.join(", ")
            }
        ));
    }
    j
}
