//! `apiserver`: a Kubernetes-compatible API server built from actors.

use std::io::IsTerminal;

use clap::Parser;
use gateway::config::{Cli, Command};

/// A request allocates and frees thousands of small values (decoded objects, managed fields):
/// glibc's allocator spent a third of a pod status PATCH's CPU on them, and mimalloc cut that
/// PATCH's CPU by 40%. It is built without transparent huge pages (`no_thp`), which otherwise
/// held 40 MiB more resident (docs/BENCHMARKS.md, "The request mix").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,actix_server=warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(colour_logs())
        .init();
    let system = actix_web::rt::System::new();
    let result = match cli.command {
        Some(Command::Serve(o)) => system.block_on(gateway::server::serve(o)),
        Some(Command::Stage(o)) => system.block_on(gateway::stage_process::run(o)),
        Some(Command::CheckStorage(o)) => system.block_on(gateway::storage_commands::check_storage(o)),
        Some(Command::MigrateStorage(o)) => system.block_on(gateway::storage_commands::migrate_storage(o)),
        None => system.block_on(gateway::server::serve(cli.serve)),
    };
    if let Err(e) = result {
        eprintln!("apiserver: {e}");
        std::process::exit(1);
    }
}

/// Whether log lines carry colour codes: only when stderr is a terminal, so files, journald and
/// pipes get plain text, and not when `NO_COLOR` is set (no-color.org).
fn colour_logs() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
