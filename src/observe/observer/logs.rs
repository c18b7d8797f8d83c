//! Log input: CRI log lines parsed, capped (line length, lines and bytes per instance) and attributed to
//! the container instance that wrote them, also when a fetch delivers them late or twice.

use super::*;

impl Observer {
    pub(super) fn log(&mut self, received: Option<Timestamp>, container: &str, hint: Option<u32>, line: &str) {
        let Some((time, text)) = parse_log_line(line) else {
            return;
        };
        let text = cap_line(text);
        let text = text.as_ref();
        self.tl.stats.log_lines += 1;
        // Two instances never print the same text at the same nanosecond, so (container, time,
        // text) identifies a line whichever fetch delivered it: a duplicate never counts twice.
        let key = (container.to_string(), time, text.to_string());
        if self.log_keys.contains(&key) {
            self.tl.stats.log_duplicates += 1;
            self.relocate(container, hint, time, text);
            return;
        }
        if text.ends_with(TRUNCATED_MARKER) {
            self.tl.stats.log_lines_truncated += 1;
            if self.tl.stats.log_lines_truncated == 1 {
                self.tl.notes.push(format!(
                    "log lines longer than {MAX_LOG_LINE_BYTES} bytes were truncated (first: `{container}` at {time})"
                ));
            }
        }
        let instance = self.attribute(container, hint, time);
        if hint == Some(instance) {
            self.read_after_all(container, instance, time);
        }
        let slot = (container.to_string(), instance);
        let (lines, bytes) = self.kept.get(&slot).copied().unwrap_or((0, 0));
        if lines >= MAX_LOG_LINES_PER_INSTANCE || bytes >= MAX_LOG_BYTES_PER_INSTANCE {
            if !self.replace_tail(container, instance, time) {
                return;
            }
        } else {
            self.kept.insert(slot, (lines + 1, bytes + text.len()));
        }
        self.log_keys.insert(key);
        let ll = LogLine {
            container: container.to_string(),
            instance,
            time,
            text: text.to_string(),
            received,
        };
        let pos = self
            .tl
            .logs
            .partition_point(|l| (l.container.as_str(), l.instance, l.time) <= (container, instance, time));
        self.tl.logs.insert(pos, ll);
    }

    /// A line delivered again by another instance's stream. A fetch for instance n returns n's
    /// lines or a later instance's (a resumed fetch reads the container's current log, a late
    /// `previous` the last terminated one), never an earlier one's: when two streams deliver the
    /// same line, the later instance is the line's (instance 1's "run 2"
    /// came first through instance 0's resumed follow, then through instance 1's own), and the
    /// earlier instance's stream read another's log. Either stream may deliver first (a fetch
    /// sent first may be answered last).
    pub(super) fn relocate(&mut self, container: &str, hint: Option<u32>, time: Timestamp, text: &str) {
        let Some(h) = hint else { return };
        let Some(pos) = self
            .tl
            .logs
            .iter()
            .position(|l| l.container == container && l.time == time && l.text == text)
        else {
            return;
        };
        let owner = self.tl.logs[pos].instance;
        if owner > h {
            // Instance h's stream delivered a line a later instance's own stream already had.
            self.never_read(container, h, owner);
            return;
        }
        if owner == h {
            return;
        }
        let mut line = self.tl.logs.remove(pos);
        if let Some(k) = self.kept.get_mut(&(container.to_string(), line.instance)) {
            k.0 = k.0.saturating_sub(1);
            k.1 = k.1.saturating_sub(line.text.len());
        }
        let slot = self.kept.entry((container.to_string(), h)).or_insert((0, 0));
        slot.0 += 1;
        slot.1 += line.text.len();
        let from = line.instance;
        line.instance = h;
        let at = self
            .tl
            .logs
            .partition_point(|l| (l.container.as_str(), l.instance, l.time) <= (container, h, time));
        self.tl.logs.insert(at, line);
        self.never_read(container, from, h);
    }

    /// Lines given to an instance before its end was known (the pod watch trails the logs under
    /// load) that came after that end (`finishedAt` + 1 s) go to the later instance whose run
    /// holds them, as `attribute` places them when the status comes first; an instance left
    /// without lines had its log never read (the watch showed instance 0 running
    /// only after instance 1 had run and ended, so #0's follow read #1's log and kept its lines).
    pub(super) fn reattribute_logs(&mut self) {
        let second = jiff::SignedDuration::from_secs(1);
        let ends: HashMap<(&str, u32), Timestamp> = self
            .tl
            .instances
            .iter()
            .filter_map(|i| {
                Some((
                    (i.container.as_str(), i.instance),
                    crate::util::ts_add(i.finished_at?, second),
                ))
            })
            .collect();
        let mut moves = vec![];
        for (pos, l) in self.tl.logs.iter().enumerate() {
            let Some(end) = ends.get(&(l.container.as_str(), l.instance)) else {
                continue;
            };
            if l.time < *end {
                continue;
            }
            let later = self.tl.instances.iter().find(|i| {
                i.container == l.container
                    && i.instance > l.instance
                    && i.started_at.is_some_and(|s| l.time >= s)
                    && i.finished_at.is_none_or(|f| l.time < crate::util::ts_add(f, second))
            });
            if let Some(i) = later {
                moves.push((pos, i.instance));
            }
        }
        if moves.is_empty() {
            return;
        }
        let mut lines = vec![];
        for (pos, to) in moves.into_iter().rev() {
            let line = self.tl.logs.remove(pos);
            if let Some(k) = self.kept.get_mut(&(line.container.clone(), line.instance)) {
                k.0 = k.0.saturating_sub(1);
                k.1 = k.1.saturating_sub(line.text.len());
            }
            let k = self.kept.entry((line.container.clone(), to)).or_insert((0, 0));
            k.0 += 1;
            k.1 += line.text.len();
            lines.push((line, to));
        }
        let mut moved = BTreeSet::new();
        for (mut line, to) in lines {
            moved.insert((line.container.clone(), line.instance, to));
            line.instance = to;
            let at = self.tl.logs.partition_point(|l| {
                (l.container.as_str(), l.instance, l.time) <= (line.container.as_str(), to, line.time)
            });
            self.tl.logs.insert(at, line);
        }
        for (container, from, to) in moved {
            self.never_read(&container, from, to);
        }
    }

    /// Instance `from`'s stream delivered a later instance's (`h`) lines: unless it also
    /// delivered lines of its own, its log was never read (its fetch came when another
    /// container was current, e.g. after a restart before the first fetch), a gap in the
    /// evidence, and it is fetched once more with `previous`.
    fn never_read(&mut self, container: &str, from: u32, h: u32) {
        let source = EvidenceSource::Logs {
            container: Some(container.to_string()),
            instance: Some(from),
        };
        if !self
            .tl
            .logs
            .iter()
            .any(|l| l.container == container && l.instance == from)
            && !self.tl.gaps.iter().any(|g| g.source == source)
        {
            self.tl.notes.push(format!(
                "`{container}`#{from}: its log fetch returned #{h}'s lines only, so its own were never read (a log gap)"
            ));
            let own = OwnLogGap::NeverRead { by: h };
            self.tl.gaps.push(Gap {
                source,
                from: None,
                to: None,
                back: None,
                clock: GapClock::Node,
                reason: own.reason(from),
            });
            self.own_log_gaps.insert((container.to_string(), from), own);
            // The kubelet serves two logs of a container: the current one and, with `previous`,
            // the one before it. With a later instance current now, `previous` is #from's while
            // #from is the one before it (as after an immediate restart that printed before the
            // pod watch showed the exit); if it is not, the fetch reads another's lines,
            // which go to their own instance, and the gap stays.
            if self.refetched.insert((container.to_string(), from)) {
                let container_id = self
                    .tl
                    .instances
                    .iter()
                    .find(|i| i.container == container && i.instance == from)
                    .and_then(|i| i.container_id.clone())
                    .unwrap_or_default();
                self.new_instances.push(NewInstance {
                    container: container.to_string(),
                    instance: from,
                    container_id,
                    terminated: true,
                    previous: true,
                });
            }
        }
    }

    /// A line of `instance`'s own, delivered by its own stream before its end (the second after
    /// its `finishedAt`, known): a fetch again with `previous` read the log the first fetch
    /// missed, so its "never read" gap is withdrawn. A fetch for an instance never returns an
    /// earlier one's lines, only a later one's, which come after that end; no lower bound, as
    /// a process may print before the runtime records its start ("run 2" :23.996,
    /// startedAt :24).
    fn read_after_all(&mut self, container: &str, instance: u32, time: Timestamp) {
        let second = jiff::SignedDuration::from_secs(1);
        let inside = self
            .tl
            .instances
            .iter()
            .find(|i| i.container == container && i.instance == instance)
            .is_some_and(|i| i.finished_at.is_some_and(|f| time < crate::util::ts_add(f, second)));
        if !inside {
            return;
        }
        let source = EvidenceSource::Logs {
            container: Some(container.to_string()),
            instance: Some(instance),
        };
        let Some(own @ OwnLogGap::NeverRead { .. }) = self.own_log_gaps.get(&(container.to_string(), instance)) else {
            return;
        };
        let reason = own.reason(instance);
        let before = self.tl.gaps.len();
        self.tl
            .gaps
            .retain(|g| !(g.source == source && g.to.is_none() && g.reason == reason));
        if self.tl.gaps.len() < before {
            self.tl.notes.push(format!(
                "`{container}`#{instance}: read again with `previous`, its own lines were read after all"
            ));
        }
    }

    /// An instance over its cap: the newest line replaces the kept newest one (so the last line
    /// stays right) and whatever is dropped widens the instance's log gap. Returns true when
    /// `time`/`text` is to be inserted.
    pub(super) fn replace_tail(&mut self, container: &str, instance: u32, time: Timestamp) -> bool {
        self.tl.stats.log_lines_dropped += 1;
        let range = self
            .tl
            .logs
            .partition_point(|l| (l.container.as_str(), l.instance) < (container, instance))
            ..self
                .tl
                .logs
                .partition_point(|l| (l.container.as_str(), l.instance) <= (container, instance));
        let last = range.end.checked_sub(1).filter(|i| range.contains(i));
        // The dropped line: the incoming one when older than the kept newest, else the kept newest.
        let (dropped_time, insert) = match last.map(|i| self.tl.logs[i].time) {
            Some(t) if t <= time => {
                let old = self.tl.logs.remove(last.expect("checked"));
                self.log_keys
                    .remove(&(old.container.clone(), old.time, old.text.clone()));
                (old.time, true)
            }
            _ => (time, false),
        };
        let source = EvidenceSource::Logs {
            container: Some(container.to_string()),
            instance: Some(instance),
        };
        let slot = (container.to_string(), instance);
        let reason = OwnLogGap::Capped.reason(instance);
        let capped = match self.own_log_gaps.get(&slot) {
            Some(OwnLogGap::Capped) => self
                .tl
                .gaps
                .iter_mut()
                .find(|g| g.source == source && g.reason == reason),
            _ => None,
        };
        match capped {
            Some(g) => {
                g.from = g.from.map(|f| f.min(dropped_time));
                g.to = g.to.map(|t| t.max(dropped_time));
            }
            None => {
                self.tl.notes.push(format!(
                    "`{container}`#{instance}: more than {MAX_LOG_LINES_PER_INSTANCE} lines or {} MiB of log; the first lines and the newest are kept, the rest dropped (a log gap)",
                    MAX_LOG_BYTES_PER_INSTANCE >> 20
                ));
                self.tl.gaps.push(Gap {
                    source,
                    from: Some(dropped_time),
                    to: Some(dropped_time),
                    back: None,
                    clock: GapClock::Node,
                    reason,
                });
                self.own_log_gaps.insert(slot, OwnLogGap::Capped);
            }
        }
        insert
    }

    /// Picks the instance a log line belongs to: the instance whose stream it came from
    /// (`hint`). A process prints before the runtime records its `startedAt` (whole seconds), so
    /// a line before the hint's `startedAt` is still the hint's (instance
    /// 1's "run 2" at :23.996, its startedAt :24, instance 0's finishedAt :23). Only a line
    /// after the hint's end (at or past `finishedAt` + 1 s) cannot be the hint's: a resumed
    /// fetch of the container's current log after a restart returns the next instance's lines,
    /// so it goes to the later instance whose window holds it. Without a hint (a CRI log file),
    /// the status windows decide.
    pub(super) fn attribute(&self, container: &str, hint: Option<u32>, time: Timestamp) -> u32 {
        let second = jiff::SignedDuration::from_secs(1);
        let window = |i: &Instance| -> Option<bool> {
            let start = i.started_at?;
            let after_start = time >= start;
            let before_end = i.finished_at.is_none_or(|f| time < crate::util::ts_add(f, second));
            Some(after_start && before_end)
        };
        let instances: Vec<&Instance> = self.tl.instances_of(container).collect();
        if let Some(h) = hint {
            let ended_before = instances
                .iter()
                .find(|i| i.instance == h)
                .and_then(|i| i.finished_at)
                .is_some_and(|f| time >= crate::util::ts_add(f, second));
            if !ended_before {
                return h;
            }
            return instances
                .iter()
                .find(|i| i.instance > h && window(i) == Some(true))
                .map_or(h, |i| i.instance);
        }
        if let Some(i) = instances.iter().find(|i| window(i) == Some(true)) {
            return i.instance;
        }
        instances
            .iter()
            .rev()
            .find(|i| i.started_at.is_some_and(|s| s <= time))
            .map(|i| i.instance)
            .unwrap_or(0)
    }
}

/// A gap the observer itself opens in an instance's log, by cause; its reason is derived from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OwnLogGap {
    /// The instance logged beyond the cap: lines between the first kept and the newest dropped.
    Capped,
    /// The instance's fetch read only instance `by`'s lines: its own were never read.
    NeverRead { by: u32 },
}

impl OwnLogGap {
    /// The gap's reason, for the gap of instance `of`.
    fn reason(self, of: u32) -> String {
        match self {
            OwnLogGap::Capped => format!(
                "lines dropped over the cap of {MAX_LOG_LINES_PER_INSTANCE} lines / {} MiB per instance",
                MAX_LOG_BYTES_PER_INSTANCE >> 20
            ),
            OwnLogGap::NeverRead { by } => {
                format!("the log fetch for #{of} returned #{by}'s lines only: #{of}'s own lines were never read")
            }
        }
    }
}

/// Longest log line kept (bytes of text after the timestamp); longer lines are cut at a
/// character boundary and end with `TRUNCATED_MARKER`. The live reader and the recording reader
/// use the same cap, so the same line is the same text whichever fetch delivered it.
pub const MAX_LOG_LINE_BYTES: usize = 64 * 1024;
/// Lines kept per container instance. Beyond it (or `MAX_LOG_BYTES_PER_INSTANCE`), the first
/// lines stay, the newest line replaces the previous newest (so `lastLogLine` stays right),
/// and the lines in between are dropped and recorded as a log gap.
pub const MAX_LOG_LINES_PER_INSTANCE: usize = 50_000;
/// Bytes of log text kept per container instance (see `MAX_LOG_LINES_PER_INSTANCE`).
pub const MAX_LOG_BYTES_PER_INSTANCE: usize = 32 * 1024 * 1024;
/// Ends a line cut at `MAX_LOG_LINE_BYTES`.
pub const TRUNCATED_MARKER: &str = " [podlife: line truncated at 65536 bytes]";

/// Cuts `text` to `MAX_LOG_LINE_BYTES` (at a character boundary) plus `TRUNCATED_MARKER`.
/// Idempotent: a line already cut upstream is returned unchanged.
pub fn cap_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_LOG_LINE_BYTES
        || (text.ends_with(TRUNCATED_MARKER) && text.len() - TRUNCATED_MARKER.len() <= MAX_LOG_LINE_BYTES)
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = MAX_LOG_LINE_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!("{}{TRUNCATED_MARKER}", &text[..end]))
}

/// Parses a `kubectl logs --timestamps` / kube `timestamps=true` line, or a CRI log file line
/// (`<time> <stream> <P|F> <text>`): RFC3339 with 1–9 fractional digits.
pub fn parse_log_line(line: &str) -> Option<(Timestamp, &str)> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let (ts, rest) = line.split_once(' ').unwrap_or((line, ""));
    let time: Timestamp = ts.parse().ok()?;
    Some((time, rest))
}

/// Parses a CRI log file line into (time, full-line flag, text); stdout/stderr is dropped.
pub fn parse_cri_line(line: &str) -> Option<(Timestamp, bool, &str)> {
    let (time, rest) = parse_log_line(line)?;
    let mut it = rest.splitn(3, ' ');
    let stream = it.next()?;
    if stream != "stdout" && stream != "stderr" {
        return None;
    }
    let tag = it.next()?;
    let text = it.next().unwrap_or("");
    Some((time, tag.starts_with('F'), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamped_line_splits_at_the_first_space() {
        let (t, text) = parse_log_line("2026-11-29T21:07:43.123456789Z hello  world\r\n").unwrap();
        assert_eq!(t.to_string(), "2026-11-29T21:07:43.123456789Z");
        assert_eq!(text, "hello  world");
        assert_eq!(parse_log_line("2026-11-29T21:07:43Z").unwrap().1, "");
        assert!(parse_log_line("not-a-time hello").is_none());
    }

    #[test]
    fn cri_lines_carry_stream_and_partial_flag() {
        let (_, full, text) = parse_cri_line("2026-11-29T21:07:43Z stderr F done").unwrap();
        assert!(full);
        assert_eq!(text, "done");
        let (_, full, _) = parse_cri_line("2026-11-29T21:07:43Z stdout P part").unwrap();
        assert!(!full);
        assert!(parse_cri_line("2026-11-29T21:07:43Z stdin F x").is_none());
    }

    #[test]
    fn long_lines_are_cut_once_at_a_character_boundary() {
        assert_eq!(cap_line("short"), "short");
        // 'é' is two bytes: the cut must not split it.
        let long = format!("a{}", "é".repeat(MAX_LOG_LINE_BYTES));
        let cut = cap_line(&long).into_owned();
        assert!(cut.ends_with(TRUNCATED_MARKER));
        let kept = cut.len() - TRUNCATED_MARKER.len();
        // Boundaries lie at odd offsets after the leading `a`: the cut falls one byte short.
        assert_eq!(kept, MAX_LOG_LINE_BYTES - 1);
        assert_eq!(cap_line(&cut), cut.as_str());
    }
}
