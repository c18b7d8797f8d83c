//! The `update` step on the cluster: GET, change, PUT with the resourceVersion read, repeated and
//! paced, each conflict answered by reading again and each lost answer settled by reading back.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kube::api::{Api, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

use super::{CaseApi, ClusterError};
use crate::observe::UpdateResult;
use crate::suite::{UPDATES_PER_SEC, UpdateStep};
use crate::util::backoff::Backoff;

/// How often one update reads the pod again after a 409 (the pod changed between our GET and
/// our PUT: the kubelet writes its status after each of our changes) or after a PUT whose answer
/// was lost: each conflict is a real write by someone else, so a few suffice.
const MAX_TRIES: u32 = 8;

/// What an update step did, and when its last accepted PUT was sent.
pub struct UpdateDone {
    pub result: UpdateResult,
    pub last_put: Option<jiff::Timestamp>,
}

/// What every round of an update step works with: the pod's API and name, the step, and how to
/// render its change.
struct Round<'a> {
    api: &'a Api<DynamicObject>,
    name: &'a str,
    step: &'a UpdateStep,
    init: &'a BTreeSet<String>,
    images: &'a BTreeMap<String, String>,
    outage_budget: Duration,
}

impl CaseApi {
    /// Runs an `update` step: `step.times()` rounds of GET, change, PUT, at most
    /// `UPDATES_PER_SEC` rounds a second. A GET is retried while the API is unavailable (within
    /// `outage_budget`); a PUT is not sent twice blindly: after a lost answer the pod is read
    /// again, and its generation says whether our change took effect (only the API server's
    /// handling of a spec change bumps it; the kubelet's status writes never do). Anything else
    /// stops the step with its cause in the record (`error`), which leaves its expectations
    /// undecided. Only an interrupt is an `Err`.
    pub(crate) async fn update_pod(
        &self,
        name: &str,
        step: &UpdateStep,
        init: &BTreeSet<String>,
        images: &BTreeMap<String, String>,
        outage_budget: Duration,
    ) -> Result<UpdateDone, ClusterError> {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Pod"));
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &ar);
        let mut r = UpdateResult {
            name: step.name.value.clone(),
            times: step.times(),
            ..Default::default()
        };
        let mut last_put = None;
        let began = tokio::time::Instant::now();
        let pace = Duration::from_millis(1000 / u64::from(UPDATES_PER_SEC));
        for k in 0..step.times() {
            let due = began + pace * k;
            if let Some(wait) = due.checked_duration_since(tokio::time::Instant::now())
                && self.sleep_or_cancel(wait).await
            {
                return Err(ClusterError::Interrupted);
            }
            let round = Round {
                api: &api,
                name,
                step,
                init,
                images,
                outage_budget,
            };
            match self.update_once(&round, &mut r).await {
                Ok(Some(sent)) => last_put = Some(sent),
                Ok(None) => {}
                Err(ClusterError::Interrupted) => return Err(ClusterError::Interrupted),
                Err(e) => {
                    r.error = Some(format!("update {} of {}: {e}", k + 1, r.times));
                    break;
                }
            }
        }
        Ok(UpdateDone { result: r, last_put })
    }

    /// One round; `Some(sent)` when our PUT was answered (sent then), `None` when a read showed a
    /// PUT whose answer was lost had taken effect.
    async fn update_once(
        &self,
        round: &Round<'_>,
        r: &mut UpdateResult,
    ) -> Result<Option<jiff::Timestamp>, ClusterError> {
        let Round {
            api,
            name,
            step,
            init,
            images,
            outage_budget,
        } = *round;
        let what = format!("update pod {}/{name}", self.namespace);
        let mut lost: Option<Option<i64>> = None; // the generation read before a PUT whose answer was lost
        let mut backoff = Backoff::new();
        for _ in 0..MAX_TRIES {
            let pod = self
                .retrying(outage_budget, || self.call(&what, None, true, api.get(name)))
                .await?;
            let read_generation = pod.metadata.generation;
            if r.first_sent.is_none() {
                r.first_sent = self.last_sent();
                r.generation_read = read_generation;
            }
            if let Some(before) = lost.take()
                && step.changes_spec()
                && read_generation > before
            {
                // The lost PUT was applied: the API bumped the generation for it.
                r.accepted += 1;
                r.generation = read_generation;
                return Ok(None);
            }
            let mut body = serde_json::to_value(&pod).map_err(|e| ClusterError::Api {
                what: what.clone(),
                reason: format!("the pod read does not serialize: {e}"),
                code: None,
            })?;
            step.change(&mut body, init, images)
                .map_err(|reason| ClusterError::Api {
                    what: what.clone(),
                    reason: reason.to_string(),
                    code: None,
                })?;
            let body: DynamicObject = serde_json::from_value(body).map_err(|e| ClusterError::Api {
                what: what.clone(),
                reason: format!("the changed pod does not parse: {e}"),
                code: None,
            })?;
            match self
                .call(&what, None, true, api.replace(name, &PostParams::default(), &body))
                .await
            {
                Ok(answer) => {
                    r.accepted += 1;
                    r.generation = answer.metadata.generation;
                    return Ok(self.last_sent());
                }
                // Someone wrote the pod between our GET and our PUT: read it again.
                Err(ClusterError::Api { code: Some(409), .. }) => r.conflicts += 1,
                // The answer was lost: the next read tells whether the change took effect.
                Err(e) if e.is_transient() => {
                    lost = Some(read_generation);
                    if backoff.pause(&self.pauses()).await {
                        return Err(ClusterError::Interrupted);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(ClusterError::Api {
            what,
            reason: format!("no PUT accepted in {MAX_TRIES} reads (conflicts or lost answers each time)"),
            code: None,
        })
    }
}
