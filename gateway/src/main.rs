//! `apiserver`: a Kubernetes-compatible API server built from actors.

use clap::Parser;
use gateway::config::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,actix_server=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let system = actix_web::rt::System::new();
    let result = match cli.command {
        Some(Command::Serve(o)) => system.block_on(gateway::server::serve(o)),
        Some(Command::Stage(o)) => system.block_on(gateway::stage_process::run(o)),
        None => system.block_on(gateway::server::serve(cli.serve)),
    };
    if let Err(e) = result {
        eprintln!("apiserver: {e}");
        std::process::exit(1);
    }
}
