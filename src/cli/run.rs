//! `podlife run`: flags checked before anything touches the cluster, the run, then its reports and bundle.

use std::process::ExitCode;

use super::{KeepNamespaces, Profile, RunArgs, default_paths, load_or_report, plural};
use crate::suite;
use std::path::PathBuf;

pub(super) fn run_cmd(mut args: RunArgs) -> ExitCode {
    // A bundle is unpacked into a temporary folder that lives (and is removed) with this call.
    let extracted = match args.replay.as_deref().map(crate::run::bundle::open) {
        Some(Ok(x)) => x,
        Some(Err(e)) => {
            crate::util::print_error(format!("--replay {e}"));
            return ExitCode::from(e.exit_code());
        }
        None => None,
    };
    let names = extracted.as_ref().map(|x| x.names.clone()).unwrap_or_default();
    if let Some(x) = &extracted {
        args.replay = Some(x.dir.clone());
        crate::run::interrupt::phase("unpacked");
    }
    let suites = match run_suites(&mut args, &names) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let opts = match run_options(args, names) {
        Ok(o) => o,
        Err(c) => return c,
    };
    if opts.list {
        return crate::run::list(&opts, &suites);
    }
    // A run whose reports cannot be written certifies nothing anyone can read: find out before
    // touching the cluster, not after a 20-minute run.
    if let Err(e) = check_writable(&opts.reports_dir, opts.junit.as_deref()) {
        crate::util::print_error(&e);
        return ExitCode::from(2);
    }
    let (junit, quiet, certify) = (opts.junit.clone(), opts.quiet, opts.certify);
    let bundle = opts.record && opts.replay.is_none();
    let mut outcome = match crate::run::run(opts, suites) {
        Ok(o) => o,
        Err(code) => return code,
    };
    crate::run::interrupt::phase("publishing");
    // Test hook (tests/cli/faults_cli.rs): hold the publishing window open so a signal can be
    // sent into it deterministically.
    #[cfg(feature = "test-hooks")]
    if let Some(ms) = std::env::var("PODLIFE_TEST_PUBLISH_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let published = crate::report::publish(
        crate::report::PublishOptions {
            dir: &outcome.report_dir,
            junit: junit.as_deref(),
            quiet,
            certify,
        },
        &mut outcome.summary,
    );
    if bundle && published.is_ok() {
        write_bundle(&outcome.report_dir, quiet);
    }
    drop(extracted);
    match published {
        // A run whose reports are missing has certified nothing anyone can read (the error,
        // naming the path, is printed already).
        Err(_) => ExitCode::from(2),
        Ok(()) => outcome.exit_code(),
    }
}

/// The suites a run judges with: a replayed run folder's own (when it kept them and no
/// `--suites` was given), else those of `--suites` or the defaults; `args.suites` is set to
/// where they came from. Every `--image` must name an image some suite uses.
fn run_suites(args: &mut RunArgs, names: &crate::files::Names) -> Result<Vec<suite::Suite>, ExitCode> {
    let suites = match recorded_suites(args, names) {
        Some(s) => s,
        None => {
            args.suites = default_paths(std::mem::take(&mut args.suites));
            load_or_report(&args.suites)?
        }
    };
    let known: std::collections::BTreeSet<&String> = suites
        .iter()
        .flat_map(|s| s.cases.iter().flat_map(|c| c.images.keys()))
        .collect();
    for (k, _) in &args.images {
        if !known.contains(k) {
            let names: Vec<_> = known.iter().map(|s| s.as_str()).collect();
            eprintln!(
                "error: --image {k}=...: no suite uses an image named `{k}` (known: {})",
                names.join(", ")
            );
            return Err(ExitCode::from(2));
        }
    }
    Ok(suites)
}

/// Reproducing a run means judging with the suites it ran. Rules added since that only guard
/// live runs (a step budget; manifests only a live apply reads, which older bundles did not
/// keep) are warnings on them. Suites that do not load even so (a field this podlife no longer
/// reads) replay with the project's suites, as `rejudge` does, and say so (`None`); a case that
/// changed since is then not comparable where its recording cannot answer it.
fn recorded_suites(args: &mut RunArgs, names: &crate::files::Names) -> Option<Vec<suite::Suite>> {
    let dir = args.replay.as_ref()?;
    if !(args.suites.is_empty() && crate::run::is_run_folder(dir) && dir.join("suites").is_dir()) {
        return None;
    }
    match suite::load_recorded_suites(&[dir.join("suites")], names) {
        Ok((s, warnings)) => {
            eprintln!("replaying with the run's own suites (as the run had them)");
            if let Some(first) = warnings.first() {
                eprintln!(
                    "warning: the run's suites break {} rule{} of this podlife that only guard live runs (first: {}); they replay as they ran",
                    warnings.len(),
                    plural(warnings.len()),
                    crate::util::printable(&first.to_string())
                );
            }
            args.suites = vec![dir.join("suites")];
            Some(s)
        }
        Err(errors) => {
            eprintln!(
                "warning: the run's own suites do not load ({} problem{}, first: {}); replaying with the suites in {}",
                errors.len(),
                plural(errors.len()),
                crate::util::printable(&errors.first().map(|e| e.to_string()).unwrap_or_default()),
                PathBuf::from("suites").display()
            );
            None
        }
    }
}

/// The run's options from its flags, checked before anything touches the cluster: the
/// durations file beside the suites, the `--logfile`, and the targeting flags (live only).
fn run_options(args: RunArgs, names: crate::files::Names) -> Result<crate::run::RunOptions, ExitCode> {
    let durations = match suite::durations::Durations::beside(&args.suites, &names) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {}", crate::util::printable(&e.to_string()));
            return Err(ExitCode::from(2));
        }
    };
    let opts = crate::run::RunOptions {
        filter: args.filter,
        exact: args.exact,
        skip: args.skip,
        test_threads: args.test_threads.map_or(0, |n| n as usize),
        list: args.list,
        ignored: args.ignored,
        include_ignored: args.include_ignored,
        retries: args.retries,
        undecided_retries: args.undecided_retries,
        starts_per_node: args.starts_per_node,
        budget: crate::run::budget::Budget {
            watches: args.max_watches,
            requests_per_second: args.max_requests_per_second,
            starting: args.max_starting,
        },
        durations,
        keep_on_failure: args.keep_namespaces == KeepNamespaces::OnFailure,
        replay: args.replay,
        names,
        reports_dir: args.reports,
        junit: args.junit,
        images: args.images.into_iter().collect(),
        connect: crate::cluster::ConnectOptions {
            kubeconfig: args.kubeconfig,
            context: args.context,
        },
        cleanup_timeout: args.cleanup_timeout,
        request_timeout: args.request_timeout,
        api_outage_budget: args.api_outage_budget,
        settle: args.settle,
        quiet: args.quiet,
        logfile: args.logfile,
        cancel: None,
        repeat: args.repeat,
        certify: args.profile == Some(Profile::Certify),
        upstream_applicable: suite::upstream::upstream_applicable(&args.suites),
        target: crate::cluster::Target {
            node: args.node,
            node_selector: args.node_selector.into_iter().collect(),
            runtime_class: args.runtime_class,
            each_node: args.each_node || args.each_group.is_some(),
            per_group: args.each_group,
        },
        #[cfg(feature = "test-hooks")]
        panic_in_case: None,
        record: !args.no_record,
    };
    // libtest-mimic panics on a logfile it cannot create: check it here and say so instead.
    if let Some(p) = &opts.logfile {
        let created = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| std::fs::File::create(p).map(|_| ()));
        if let Err(e) = created {
            eprintln!("error: --logfile {}: {e}", p.display());
            return Err(ExitCode::from(2));
        }
    }
    if opts.replay.is_some() && !opts.target.is_empty() {
        eprintln!(
            "error: --node, --node-selector, --runtime-class, --each-node and --each-group pin pods on a live cluster; they do not apply to --replay (a replayed --each-node run replays each node)"
        );
        return Err(ExitCode::from(2));
    }
    if opts.certify && (opts.filter.is_some() || !opts.skip.is_empty()) {
        eprintln!("warning: --profile certify with a filter certifies only the selected cases");
    }
    Ok(opts)
}

/// The shareable archive of a recorded run; a failure to write it is a warning (the run folder
/// holds the same files).
fn write_bundle(run_dir: &std::path::Path, quiet: bool) {
    match crate::run::bundle::write(run_dir) {
        Ok(p) if !quiet => crate::outln!("bundle: {} (replay: podlife run --replay {0})", p.display()),
        Ok(_) => {}
        Err(e) => eprintln!("warning: writing the bundle of {}: {e}", run_dir.display()),
    }
}

/// An output path of `run` that cannot be written, named as the flag that gave it.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {}: cannot {what}: {source}", path.display())]
struct Unwritable {
    flag: &'static str,
    path: std::path::PathBuf,
    /// What could not be done: `create`, `write`, `create <parent folder>`.
    what: String,
    source: std::io::Error,
}

/// Checks the report folder can be created and the `--junit` file opened for writing (without
/// truncating an existing one). The error names the path.
fn check_writable(reports: &std::path::Path, junit: Option<&std::path::Path>) -> Result<(), Unwritable> {
    let fails = |flag, path: &std::path::Path, what: &str| {
        let (path, what) = (path.to_path_buf(), what.to_string());
        move |source| Unwritable {
            flag,
            path,
            what,
            source,
        }
    };
    std::fs::create_dir_all(reports).map_err(fails("--reports", reports, "create"))?;
    let probe = reports.join(format!(".podlife-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(fails("--reports", reports, "write"))?;
    if let Some(p) = junit {
        if let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            let what = format!("create {}", parent.display());
            std::fs::create_dir_all(parent).map_err(fails("--junit", p, &what))?;
        }
        let existed = p.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p)
            .map_err(fails("--junit", p, "write"))?;
        // An empty file would read as a broken JUnit report if the run stops before writing it.
        if !existed {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}
