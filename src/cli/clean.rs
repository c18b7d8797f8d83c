//! `podlife clean`: lists (and with --yes deletes) the namespaces earlier runs left behind.

use std::process::ExitCode;

use super::CleanArgs;

/// `podlife clean`: 0 when nothing is left (or in a dry run), 1 when a namespace could not be
/// deleted, 2 when the cluster could not be reached or listed.
pub(super) fn clean_cmd(args: CleanArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let connect = crate::cluster::ConnectOptions {
        kubeconfig: args.kubeconfig,
        context: args.context,
    };
    let cluster = match rt.block_on(crate::cluster::Cluster::connect(&connect)) {
        Ok(c) => c,
        Err(e) => {
            crate::util::print_error(&e);
            return ExitCode::from(2);
        }
    };
    let opts = crate::cluster::clean::CleanOptions {
        run: args.run,
        older_than: args.older_than,
        yes: args.yes,
        timeout: args.timeout,
        request_timeout: args.request_timeout,
        now: jiff::Timestamp::now(),
    };
    let mut out = std::io::stdout();
    let r = rt.block_on(crate::cluster::clean::clean(&cluster.client, &opts, &mut out));
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    match r {
        Ok(o) if o.failed.is_empty() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            crate::util::print_error(&e);
            ExitCode::from(2)
        }
    }
}
