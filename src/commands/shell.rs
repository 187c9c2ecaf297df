//! `verify completions SHELL` and `verify man`: the command line described for shells and
//! `man`, generated from the clap definitions so they cannot drift from `verify --help`.

use clap::CommandFactory;

use super::*;

/// `verify completions SHELL`: the completion script on stdout.
pub(super) fn completions(shell: clap_complete::Shell) -> Outcome {
    let mut script = Vec::new();
    // generated into memory: clap_complete panics on a failed write, and stdout may be closed
    clap_complete::generate(
        shell,
        &mut crate::cli::Cli::command(),
        "verify",
        &mut script,
    );
    out!("{}", String::from_utf8_lossy(&script));
    Outcome::Held
}

/// `verify man`: the man page (roff, section 1) on stdout.
pub(super) fn man_page() -> Result<Outcome> {
    let mut page = Vec::new();
    clap_mangen::Man::new(crate::cli::Cli::command())
        .render(&mut page)
        .context("rendering the man page")?;
    out!("{}", String::from_utf8_lossy(&page));
    Ok(Outcome::Held)
}
