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
    let options = match cli.command {
        Some(Command::Serve(o)) => o,
        None => cli.serve,
    };
    let result = actix_web::rt::System::new().block_on(gateway::server::serve(options));
    if let Err(e) = result {
        eprintln!("apiserver: {e}");
        std::process::exit(1);
    }
}
