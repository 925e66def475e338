//! Where a server's CPU goes, by stage: `perf record` samples the process's stacks while a load
//! runs, and each sample is put in the first stage (in [`STAGES`] order) that one of its
//! frames names. Frames are matched by the crate paths of their symbols, so the classes follow
//! the code's layout: a protobuf decode inside the storage stage's update counts as the storage
//! codec, a JSON decode inside the gateway as request decoding.
//!
//! `perf` with DWARF call graphs copies each sample's stack, which slows the sampled process a
//! little: the shares are what a profile gives, and the CPU per request they are applied to
//! should come from a run without it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The stages samples are put in, most specific first, each with the symbol prefixes that name
/// it (a frame's symbol, `<` and all, starts with one of them or holds it after `<`).
pub const STAGES: &[(&str, &[&str])] = &[
    ("managedFields", &["apimachinery::managedfields", "apimachinery::fieldpath"]),
    ("patch", &["apimachinery::patch"]),
    (
        "defaulting and validation",
        &[
            "validation::",
            "kinds::defaults",
            "apimachinery::validation",
            "apimachinery::schema::fields",
            "apimachinery::catalogue::ResourceDef::validate",
            "apimachinery::catalogue::ResourceDef::apply_defaults",
        ],
    ),
    ("admission", &["admission::"]),
    ("authorization", &["auth::authz", "auth::rbac"]),
    ("authentication", &["auth::authn", "auth::serviceaccount"]),
    ("APF", &["flowcontrol::"]),
    ("cacher and watch fan-out", &["cacher::", "gateway::watch"]),
    ("storage codec (protobuf)", &["storage_codec::", "protobuf::"]),
    ("storage round trip (etcd client)", &["storage::", "etcd_client::", "tonic::", "h2::", "hyper::", "tower::"]),
    ("registry (the write itself)", &["registry::"]),
    ("response encoding", &["serde_json::ser", "apimachinery::encoded", "gateway::negotiate"]),
    ("request decoding", &["serde_json::de", "serde_json::value::de", "serde_yaml_ng::", "gateway::body"]),
    ("TLS", &["rustls::", "ring::", "ring_core", "tokio_rustls::"]),
    ("HTTP", &["actix_http::", "actix_web::", "actix_server::", "gateway::listener", "gateway::first_head"]),
    ("gateway (routing, chain)", &["gateway::"]),
    ("stage messaging", &["actors::", "actix::"]),
];

/// Samples none of [`STAGES`] names: the runtime's own work, scheduling and the kernel.
pub const REST: &str = "runtime, scheduling, kernel";

/// The stage of a sample whose frames (symbols, innermost first) are `stack`.
pub fn classify<S: AsRef<str>>(stack: &[S]) -> &'static str {
    let names = |frame: &str, prefix: &str| {
        frame.starts_with(prefix) || frame.match_indices('<').any(|(i, _)| frame[i + 1..].starts_with(prefix))
    };
    for (stage, prefixes) in STAGES {
        if stack.iter().any(|f| prefixes.iter().any(|p| names(f.as_ref(), p))) {
            return stage;
        }
    }
    REST
}

/// Samples per stage, in [`STAGES`] order, then [`REST`].
#[derive(Debug, Default, Clone)]
pub struct Breakdown {
    /// All samples.
    pub samples: usize,
    /// (stage, samples), every stage listed.
    pub stages: Vec<(&'static str, usize)>,
}

impl Breakdown {
    /// Of the samples in `perf script -F ip,sym` output: frames one per line, samples apart
    /// by blank lines.
    pub fn of_script(text: &str) -> Breakdown {
        let mut b = Breakdown { samples: 0, stages: STAGES.iter().map(|(s, _)| (*s, 0)).chain([(REST, 0)]).collect() };
        let mut stack: Vec<&str> = Vec::new();
        let close = |stack: &mut Vec<&str>, b: &mut Breakdown| {
            if stack.is_empty() {
                return;
            }
            let stage = classify(stack);
            b.samples += 1;
            if let Some(row) = b.stages.iter_mut().find(|(s, _)| *s == stage) {
                row.1 += 1;
            }
            stack.clear();
        };
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() {
                close(&mut stack, &mut b);
                continue;
            }
            // `<address> <symbol>`: the symbol may hold spaces.
            stack.push(line.split_once(' ').map_or("", |(_, sym)| sym.trim()));
        }
        close(&mut stack, &mut b);
        b
    }

    /// The share of samples of `stage`, 0 to 1.
    pub fn share(&self, stage: &str) -> f64 {
        let n = self.stages.iter().find(|(s, _)| *s == stage).map_or(0, |r| r.1);
        n as f64 / self.samples.max(1) as f64
    }

    /// One line per stage with samples: its share, and `per_request` µs of CPU split by it.
    pub fn lines(&self, per_request: f64) -> Vec<String> {
        self.stages
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(stage, n)| {
                let share = *n as f64 / self.samples.max(1) as f64;
                format!("    {stage:<34} {:>5.1}%  {:>8.1} µs", 100.0 * share, share * per_request)
            })
            .collect()
    }
}

/// A `perf record` of a process, running.
pub struct Recording {
    child: Child,
    data: PathBuf,
}

/// Starts sampling `pid` (499 Hz, DWARF stacks) into `data` for `length`; `None` when perf
/// cannot be run here.
pub fn record(pid: u32, data: &Path, length: Duration) -> Option<Recording> {
    let child = Command::new("perf")
        .args(["record", "-q", "-F", "499", "--call-graph", "dwarf,16384", "-p", &pid.to_string(), "-o"])
        .arg(data)
        .args(["--", "sleep", &format!("{:.1}", length.as_secs_f64())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    Some(Recording { child, data: data.to_path_buf() })
}

impl Recording {
    /// Waits for the recording to end and classifies its samples; `None` when it recorded
    /// nothing readable.
    pub fn finish(mut self) -> Option<Breakdown> {
        self.child.wait().ok()?;
        let out = Command::new("perf")
            .args(["script", "-F", "ip,sym", "--no-inline", "-i"])
            .arg(&self.data)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let b = Breakdown::of_script(&String::from_utf8_lossy(&out.stdout));
        (b.samples > 0).then_some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_goes_to_the_most_specific_stage_on_its_stack() {
        let decode_in_update = [
            "_mi_page_malloc_zero",
            "protobuf::codec::decode_at",
            "storage_codec::codec::decode_object",
            "registry::store::RegistryStore::guaranteed_update::{{closure}}",
            "<registry::actor::StorageActor as actors::stage::StageHandler<apimachinery::messages::PatchObject>>::handle::{{closure}}",
            "tokio::runtime::task::raw::poll",
        ];
        assert_eq!(classify(&decode_in_update), "storage codec (protobuf)");
        let fields_in_update = ["apimachinery::fieldpath::FieldSet::emit", "registry::store::track_update"];
        assert_eq!(classify(&fields_in_update), "managedFields");
        let json_in_gateway = ["serde_json::de::from_trait", "gateway::rest::serve_target"];
        assert_eq!(classify(&json_in_gateway), "request decoding");
        let handshake = ["ring_core_0_17_14_x25519", "<rustls::conn::ConnectionCommon<T>>::process", "actix_http::h1"];
        assert_eq!(classify(&handshake), "TLS");
        assert_eq!(classify(&["finish_task_switch.isra.0", "tokio::runtime::park"]), REST);
    }

    #[test]
    fn perf_script_output_is_read_sample_by_sample() {
        let text = "\n\t  97496 _int_malloc\n\t  19dae26 apimachinery::fieldpath::FieldSet::emit\n\n\
                    \t  f5aacf <alloc::collections::btree::map::BTreeMap<K,V,A> as core::clone::Clone>::clone\n\
                    \t  f0983c <registry::actor::StorageActor as actors::stage::StageHandler<M>>::handle\n\n\
                    \t ffffffff82244564 finish_task_switch\n";
        let b = Breakdown::of_script(text);
        assert_eq!(b.samples, 3);
        assert_eq!(b.share("managedFields"), 1.0 / 3.0);
        assert_eq!(b.share("registry (the write itself)"), 1.0 / 3.0);
        assert_eq!(b.share(REST), 1.0 / 3.0);
        assert_eq!(b.lines(300.0).len(), 3);
    }
}
