//! Event input: a Kubernetes Event about the pod, as occurrences on the timeline (repeats folded by its
//! `count`, redeliveries dropped, attributed to the container its field path names).

use super::*;

impl Observer {
    pub(super) fn event(&mut self, received: Timestamp, _kind: WatchKind, ev: &core::Event) {
        let obj = &ev.involved_object;
        if obj.kind.as_deref().is_some_and(|k| k != "Pod") {
            return;
        }
        if let (Some(want), Some(name)) = (&self.pod_name, &obj.name)
            && want != name
        {
            return;
        }
        self.tl.stats.event_deliveries += 1;
        let uid = ev
            .metadata
            .uid
            .clone()
            .unwrap_or_else(|| ev.metadata.name.clone().unwrap_or_default());
        let count = u32::try_from(ev.count.unwrap_or(1).max(1)).unwrap_or(1);
        let prev = self.event_counts.get(&uid).copied().unwrap_or(0);
        if count <= prev {
            self.tl.stats.event_duplicates += 1;
            return;
        }
        self.event_counts.insert(uid.clone(), count);
        let container = obj.field_path.as_deref().and_then(container_from_field_path);
        let (time, precision) = match (&ev.event_time, &ev.last_timestamp) {
            (Some(t), _) => (Some(t.0), 1_000),
            (None, Some(t)) => (Some(t.0), 1_000_000_000),
            (None, None) => (ev.first_timestamp.as_ref().map(|t| t.0), 1_000_000_000),
        };
        let source = ev
            .source
            .as_ref()
            .and_then(|s| s.component.clone())
            .or_else(|| ev.reporting_component.clone())
            .filter(|s| !s.is_empty());
        // Repetitions folded into one delivery are kept compact: the first repetition of the
        // object (which has `firstTimestamp`) on its own, the rest as one item (`repeats`) whose
        // last has `lastTimestamp`. Never one item per repetition: `count` is the sender's word
        // and may be 2147483647.
        let mut items = vec![];
        let coalesced = count - prev > 1;
        let mut from = prev + 1;
        if from == 1 && count > 1 {
            items.push((1, 1, ev.first_timestamp.as_ref().map(|t| t.0)));
            from = 2;
        }
        items.push((count, count - from + 1, time));
        for (n, repeats, time) in items {
            let occ = EventOccurrence {
                received,
                reason: ev.reason.clone().unwrap_or_default(),
                r#type: ev.type_.clone().unwrap_or_default(),
                message: ev.message.clone().unwrap_or_default(),
                container: container.clone(),
                count: n,
                time,
                time_precision_ns: precision,
                uid: uid.clone(),
                source: source.clone(),
                coalesced,
                repeats,
            };
            let pos = self.tl.events.partition_point(|e| e.received <= received);
            self.tl.events.insert(pos, occ);
        }
    }
}

/// `spec.containers{main}` / `spec.initContainers{sidecar}` → `main` / `sidecar`.
pub fn container_from_field_path(fp: &str) -> Option<String> {
    let start = fp.find('{')?;
    let end = fp.rfind('}')?;
    (end > start + 1).then(|| fp[start + 1..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_container_of_a_field_path() {
        assert_eq!(
            container_from_field_path("spec.containers{main}").as_deref(),
            Some("main")
        );
        assert_eq!(
            container_from_field_path("spec.initContainers{sidecar}").as_deref(),
            Some("sidecar")
        );
        assert_eq!(container_from_field_path("spec.containers{}"), None);
        assert_eq!(container_from_field_path("spec.containers"), None);
    }
}
