//! The command line of `tests::load`: `stages` / `stage=<key>[,<key>...]`, each stage stepped
//! up to its capacity.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use tests::load::stages::{self, StepPlan};
use tests::load::targets;

/// `stages` and `stage=` options.
#[derive(Parser, Debug)]
#[command(no_binary_name = true)]
struct StagesArgs {
    /// Where `stages.json` and `stages.svg` go.
    #[arg(long, default_value = "loadgen-out")]
    out: PathBuf,
}

/// `stages` (every stage) or `stage=a,b`: steps of `seconds` each.
pub async fn stages(seconds: Duration, which: &str, rest: Vec<String>) {
    let args = StagesArgs::parse_from(rest);
    let keys: Vec<&str> = match which {
        "stages" => targets::ALL.to_vec(),
        list => list.split(',').collect(),
    };
    if let Err(e) = stages::run_all(&keys, &StepPlan::new(seconds), &args.out).await {
        eprintln!("loadgen: {e}");
        std::process::exit(1);
    }
}
