//! `podlife images`: the images the selected cases pull, or shell lines pre-loading them into kind or k3s.

use std::process::ExitCode;

use super::{ImagesArgs, Loader, load_or_report};

pub(super) fn images_cmd(args: ImagesArgs) -> ExitCode {
    let suites = match load_or_report(&args.suites) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let overrides: std::collections::BTreeMap<String, String> = args.images.iter().cloned().collect();
    let mut all = std::collections::BTreeSet::new();
    for c in suites.iter().flat_map(|s| &s.cases) {
        if args.selection().selected(&c.full_name()) {
            all.extend(c.images_used(&overrides));
        }
    }
    for i in all {
        match args.load {
            None => crate::outln!("{i}"),
            // kind loads from the local docker daemon, so the image is pulled there first.
            Some(Loader::Kind) => crate::outln!("docker pull {i} && kind load docker-image {i}"),
            Some(Loader::K3s) => crate::outln!("docker pull {i} && docker save {i} | sudo k3s ctr images import -"),
        }
    }
    ExitCode::SUCCESS
}
