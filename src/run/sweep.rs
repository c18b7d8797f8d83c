//! The end-of-run sweep: after every case, the run's namespaces that no case cleaned up are
//! found (registry and label) and deleted, so nothing the run created outlives it unsaid.

use std::collections::{BTreeMap, BTreeSet};

/// The end-of-run sweep: deletes (UID-checked) every namespace of this run that no case cleaned
/// up, and waits for those still terminating, all at once and within one `cleanup_timeout`.
/// Returns the leftovers, described, and the namespaces among them.
pub(super) async fn sweep(
    client: kube::Client,
    run_id: &str,
    registered: BTreeMap<String, String>,
    handled: &BTreeSet<String>,
    terminating: &BTreeSet<String>,
    opts: &super::RunOptions,
) -> (Vec<String>, BTreeSet<String>) {
    let (cleanup_timeout, request_timeout, outage_budget) =
        (opts.cleanup_timeout, opts.request_timeout, opts.api_outage_budget);
    let deadline = crate::util::after_tokio(cleanup_timeout);
    let mut todo = registered;
    // Listing costs one request and finds a namespace whose create answer never reached us. An
    // API that is away (a restart) is waited for, within the outage budget.
    let give_up = crate::util::after_tokio(outage_budget.max(cleanup_timeout));
    // `Err(None)`: no answer within the request timeout. Uninterrupted pauses: the sweep is the
    // cleanup, which a signal starts rather than stops; `give_up` bounds it.
    let list = crate::util::backoff::Backoff::new()
        .retry(
            give_up,
            &crate::util::backoff::Pauses::Uninterrupted,
            |e: &Option<crate::cluster::ClusterError>| e.as_ref().is_none_or(|e| e.is_transient()),
            || async {
                tokio::time::timeout_at(
                    give_up.min(crate::util::after_tokio(request_timeout)),
                    crate::cluster::namespaces_labelled(&client, Some(run_id)),
                )
                .await
                .map_err(|_| None)?
                .map_err(Some)
            },
        )
        .await
        .map_err(|end| match end {
            crate::util::backoff::RetryEnd::Failed(e) => e,
            crate::util::backoff::RetryEnd::Cancelled => None,
        });
    let mut leftovers = vec![];
    match list {
        Ok(found) => {
            // A registered namespace the list no longer has is gone (the list is one consistent
            // view of the run's label): nothing to do for it.
            let listed: BTreeSet<(String, String)> = found.iter().map(|n| (n.name.clone(), n.uid.clone())).collect();
            todo.retain(|name, uid| listed.contains(&(name.clone(), uid.clone())));
            for n in found {
                if !handled.contains(&n.name) && !todo.contains_key(&n.name) {
                    todo.insert(n.name, n.uid);
                }
            }
        }
        // Without the list, the registry is all we know: say so only if something may be lost.
        Err(Some(e)) => leftovers.push(format!(
            "could not list this run's namespaces to check for leftovers: {e}"
        )),
        Err(None) => leftovers.push("could not list this run's namespaces to check for leftovers: no answer".into()),
    }
    let deletes = todo.into_iter().map(|(ns, uid)| {
        let api = crate::cluster::CaseApi::new(client.clone(), &ns).bounded(request_timeout, None);
        async move {
            let left = tokio::time::Instant::now();
            let wait = deadline.saturating_duration_since(left);
            // A namespace whose case's DELETE was accepted is only waited for.
            let gone = if terminating.contains(&ns) {
                let backoff = crate::util::backoff::Backoff::new();
                api.wait_namespace_gone(&uid, deadline, backoff).await
            } else {
                api.delete_namespace(&uid, wait, outage_budget).await
            };
            match gone {
                Ok(true) => None,
                Ok(false) => Some((ns.clone(), format!("namespace {ns} still terminating"))),
                Err(e) => Some((ns.clone(), format!("namespace {ns}: {e}"))),
            }
        }
    });
    let mut left = BTreeSet::new();
    for (ns, why) in futures::future::join_all(deletes).await.into_iter().flatten() {
        left.insert(ns);
        leftovers.push(why);
    }
    (leftovers, left)
}
