//! Command-line flags. Where kube-apiserver has a flag for something, it has the same name and
//! meaning here. Duration flags take Go's syntax, as kube's do (`1m30s`, `500ms`, `0`;
//! [`parse_flag_duration`]).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use apimachinery::gofmt::parse_flag_duration;
use auth::AuthorizationMode;

/// A Kubernetes-compatible API server built from actors.
#[derive(Parser, Debug)]
#[command(name = "apiserver", version, about)]
pub struct Cli {
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags of `serve`, accepted without the subcommand too.
    #[command(flatten)]
    pub serve: ServeOptions,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the API server.
    Serve(ServeOptions),
    /// Run one shard's storage stage in its own process, reached by gateways through the
    /// topology file (`--stage-topology`).
    Stage(StageOptions),
    /// Read every key under `--etcd-prefix` and report the kinds, stored versions and formats
    /// found, and each value this server cannot decode (then exit 1). Writes nothing.
    CheckStorage(ServeOptions),
    /// Rewrite every value this server stored in its former format (MessagePack) in
    /// kube-apiserver's, and move objects to kube's key prefixes.
    MigrateStorage(ServeOptions),
}

/// Flags of `apiserver stage`: the shard to serve, and the server's own flags for its storage,
/// admission and authorization.
#[derive(Args, Debug, Clone)]
pub struct StageOptions {
    /// The shard of `--stage-topology` this process serves: it listens at the shard's URL and
    /// stores the shard's resources.
    #[arg(long)]
    pub shard: String,
    /// The server's flags.
    #[command(flatten)]
    pub serve: ServeOptions,
}

/// Flags of `apiserver serve`.
#[derive(Args, Debug, Clone)]
pub struct ServeOptions {
    /// Where the embedded store, the generated PKI and admin.kubeconfig live.
    #[arg(long, default_value = "./data")]
    pub data_dir: PathBuf,
    /// Address of the HTTPS serving port.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,
    /// Whether containers may run privileged (`securityContext.privileged`); off, as kube's
    /// default, so a privileged pod is refused unless this is `true` (kubeadm sets it).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub allow_privileged: bool,
    /// The address this server is reached at by the cluster's members: the `kubernetes`
    /// Service's endpoint for it. Default: `--bind-address`, or when that is unspecified
    /// (`0.0.0.0`), the address of the host's default route.
    #[arg(long)]
    pub advertise_address: Option<IpAddr>,
    /// How the `kubernetes` Service's endpoints are kept: `lease` (each apiserver renews an
    /// etcd lease, as kube's default), `master-count` (each adds itself, and the list is kept
    /// at `--apiserver-count`) or `none`.
    #[arg(long, default_value = "lease", value_parser = ["lease", "master-count", "none"])]
    pub endpoint_reconciler_type: String,
    /// How many apiservers run, for `--endpoint-reconciler-type=master-count`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub apiserver_count: u32,
    /// The HTTPS serving port.
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,
    /// Port of the admin endpoint (`GET /actors`): plain HTTP on loopback.
    #[arg(long, default_value_t = 6444)]
    pub admin_port: u16,
    /// Address of the admin endpoint. Any other than loopback serves it over TLS and lets only
    /// authenticated users the authorizers allow (e.g. `system:masters`) use it.
    #[arg(long, default_value = "127.0.0.1")]
    pub admin_bind_address: IpAddr,
    /// Serving certificate (PEM); generated under <data-dir>/pki when absent.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,
    /// Serving key (PEM).
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,
    /// CA that signs client certificates; the generated CA when absent.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// Static bearer tokens: CSV lines `token,user,uid,"group1,group2"`.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    /// Accept bootstrap tokens (`<id>.<secret>`, from the Secrets `bootstrap-token-<id>` in
    /// kube-system), as `kubeadm join` and kubelet TLS bootstrapping present them.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub enable_bootstrap_token_auth: bool,
    /// The node address types a kubelet is reached by, in order of preference (the first
    /// address of the first type a node reports): `Hostname`, `InternalDNS`, `InternalIP`,
    /// `ExternalDNS`, `ExternalIP`.
    #[arg(long, value_delimiter = ',', value_parser = parse_node_address_type,
          default_value = "Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP")]
    pub kubelet_preferred_address_types: Vec<String>,
    /// Client certificate presented to kubelets (logs, exec, attach, port-forward, proxy).
    #[arg(long)]
    pub kubelet_client_certificate: Option<PathBuf>,
    /// Key of `--kubelet-client-certificate`.
    #[arg(long)]
    pub kubelet_client_key: Option<PathBuf>,
    /// CA bundle that verifies kubelets' serving certificates; without it they are not
    /// verified, as kube-apiserver does not verify them then.
    #[arg(long)]
    pub kubelet_certificate_authority: Option<PathBuf>,
    /// Allow unauthenticated requests as `system:anonymous` (authorization still applies).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub anonymous_auth: bool,
    /// Issuer of ServiceAccount tokens (repeatable: the first issues, all are accepted).
    #[arg(long, default_values_t = ["https://kubernetes.default.svc.cluster.local".to_string()])]
    pub service_account_issuer: Vec<String>,
    /// PEM private key (RSA or ECDSA; PKCS#8, PKCS#1 or SEC1) ServiceAccount tokens are signed with; generated under
    /// <data-dir>/pki when neither this nor --service-account-key-file is given.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// PEM keys ServiceAccount tokens are verified with (repeatable; public keys, certificates
    /// or private keys); the signing key's when absent.
    #[arg(long)]
    pub service_account_key_file: Vec<PathBuf>,
    /// The longest lifetime a TokenRequest gets (longer requests are cut to it).
    #[arg(long, value_parser = parse_flag_duration)]
    pub service_account_max_token_expiration: Option<Duration>,
    /// The `jwks_uri` published in `/.well-known/openid-configuration` (default:
    /// `https://<this server's address>/openid/v1/jwks`).
    #[arg(long)]
    pub service_account_jwks_uri: Option<String>,
    /// Audiences of the API (comma-separated): tokens must be meant for one of them; the first
    /// issuer when empty.
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// OpenID Connect issuer whose ID tokens authenticate users (https).
    #[arg(long)]
    pub oidc_issuer_url: Option<String>,
    /// The client id OIDC tokens must be issued for (their `aud`).
    #[arg(long, default_value = "")]
    pub oidc_client_id: String,
    /// The OIDC claim naming the user.
    #[arg(long, default_value = "sub")]
    pub oidc_username_claim: String,
    /// Prefix of OIDC user names (`-` for none; default: the issuer URL and `#`, except for `email`).
    #[arg(long)]
    pub oidc_username_prefix: Option<String>,
    /// The OIDC claim listing the user's groups.
    #[arg(long)]
    pub oidc_groups_claim: Option<String>,
    /// Prefix of OIDC group names.
    #[arg(long, default_value = "")]
    pub oidc_groups_prefix: String,
    /// CA of the OIDC issuer's serving certificate (default: the public roots).
    #[arg(long)]
    pub oidc_ca_file: Option<PathBuf>,
    /// Algorithms OIDC tokens may be signed with (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "RS256")]
    pub oidc_signing_algs: Vec<String>,
    /// `claim=value` every OIDC token must carry (repeatable).
    #[arg(long, value_parser = parse_key_value)]
    pub oidc_required_claim: Vec<(String, String)>,
    /// Client certificate (PEM) presented to extension API servers: requests passed on to
    /// remote APIServices, their availability probes and discovery fetches.
    #[arg(long)]
    pub proxy_client_cert_file: Option<PathBuf>,
    /// The key of `--proxy-client-cert-file`.
    #[arg(long)]
    pub proxy_client_key_file: Option<PathBuf>,
    /// CA of front-proxy client certificates, published for extension API servers in
    /// `kube-system/extension-apiserver-authentication` (this server does not authenticate
    /// requests by front-proxy headers itself).
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// Common names a front-proxy certificate may have (comma-separated; any when empty).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// Headers naming the user behind a front proxy (kubeadm's `X-Remote-User`).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_username_headers: Vec<String>,
    /// Headers naming the user's groups (kubeadm's `X-Remote-Group`).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_group_headers: Vec<String>,
    /// Prefixes of headers carrying the user's extra attributes (kubeadm's `X-Remote-Extra-`).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// Answer 502 when an extension API server redirects a request passed on to it, rather
    /// than passing the redirect back.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub aggregator_reject_forwarding_redirects: bool,
    /// kubeconfig of a service answering TokenReviews for tokens nothing else recognises.
    #[arg(long)]
    pub authentication_token_webhook_config_file: Option<PathBuf>,
    /// TokenReview version the token webhook is sent (`v1` or `v1beta1`).
    #[arg(long, default_value = "v1beta1", value_parser = ["v1", "v1beta1"])]
    pub authentication_token_webhook_version: String,
    /// How long the token webhook's answers are kept.
    #[arg(long, default_value = "2m", value_parser = parse_flag_duration)]
    pub authentication_token_webhook_cache_ttl: Duration,
    /// kubeconfig of the service answering SubjectAccessReviews for `--authorization-mode=Webhook`.
    #[arg(long)]
    pub authorization_webhook_config_file: Option<PathBuf>,
    /// SubjectAccessReview version the authorization webhook is sent (`v1` or `v1beta1`).
    #[arg(long, default_value = "v1beta1", value_parser = ["v1", "v1beta1"])]
    pub authorization_webhook_version: String,
    /// How long the authorization webhook's allowed answers are kept.
    #[arg(long, default_value = "5m", value_parser = parse_flag_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// How long its other answers are kept.
    #[arg(long, default_value = "30s", value_parser = parse_flag_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    /// audit.k8s.io/v1 Policy: what is audited, at which level; nothing without it.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,
    /// Where audit events are written as JSON lines (`-` for standard output).
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,
    /// Size in megabytes at which the audit log is rotated (0: 100, as kube).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxsize: u64,
    /// Rotated audit logs kept (0: all).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxbackup: usize,
    /// Days rotated audit logs are kept (0: forever).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxage: u64,
    /// kubeconfig of a service audit events are posted to in batches.
    #[arg(long)]
    pub audit_webhook_config_file: Option<PathBuf>,
    /// Most events in one webhook batch.
    #[arg(long, default_value_t = 400)]
    pub audit_webhook_batch_max_size: usize,
    /// Longest a batch waits to fill before it is sent.
    #[arg(long, default_value = "30s", value_parser = parse_flag_duration)]
    pub audit_webhook_batch_max_wait: Duration,
    /// First wait before a failed batch is retried.
    #[arg(long, default_value = "10s", value_parser = parse_flag_duration)]
    pub audit_webhook_initial_backoff: Duration,
    /// Events buffered between requests and the audit writer; past it events are dropped and
    /// counted, never waited for.
    #[arg(long, default_value_t = 10_000)]
    pub audit_buffer_size: usize,
    /// Authorizers to consult in order (comma-separated): `Node`, `RBAC`, `Webhook`,
    /// `AlwaysAllow`, `AlwaysDeny`.
    #[arg(long, default_value = "RBAC", value_parser = parse_authorization_mode)]
    pub authorization_mode: AuthorizationModes,
    /// Admission plugins to run besides the default ones (comma-separated, kube's names; they
    /// run in kube's order whatever the order here).
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,
    /// Default admission plugins to leave out (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,
    /// An `AdmissionConfiguration` (YAML or JSON) giving plugins their own configuration, as
    /// kube's: `PodSecurity`'s `PodSecurityConfiguration` (defaults and exemptions).
    #[arg(long)]
    pub admission_control_config_file: Option<PathBuf>,
    /// The `tolerationSeconds` DefaultTolerationSeconds gives pods for the `not-ready` taint.
    #[arg(long, default_value_t = 300)]
    pub default_not_ready_toleration_seconds: i64,
    /// The `tolerationSeconds` DefaultTolerationSeconds gives pods for the `unreachable` taint.
    #[arg(long, default_value_t = 300)]
    pub default_unreachable_toleration_seconds: i64,
    /// Read-only requests executing at once, which with the next flag makes the seats API
    /// Priority and Fairness divides among its priority levels.
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: u32,
    /// Mutating requests executing at once (added to the above for APF).
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: u32,
    /// The default storage backend: etcd3 when `--etcd-servers` is given (as kube-apiserver's
    /// flags mean), else the embedded store.
    #[arg(long, value_enum)]
    pub storage_backend: Option<StorageBackend>,
    /// etcd endpoints of the etcd3 backend (comma-separated URLs).
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// Per-resource backends: `group/resource#server;server`, comma-separated (`/events#http://...`);
    /// `embedded` as a server names this server's own store.
    #[arg(long)]
    pub etcd_servers_overrides: Option<String>,
    /// CA file verifying etcd's serving certificate.
    #[arg(long)]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate presented to etcd.
    #[arg(long)]
    pub etcd_certfile: Option<PathBuf>,
    /// Client key presented to etcd.
    #[arg(long)]
    pub etcd_keyfile: Option<PathBuf>,
    /// EncryptionConfiguration (apiserver.config.k8s.io/v1) for encryption at rest.
    #[arg(long)]
    pub encryption_provider_config: Option<PathBuf>,
    /// Key prefix of every stored object.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// How long Events are kept after their last write (0 keeps them for good).
    #[arg(long, default_value = "1h", value_parser = parse_flag_duration)]
    pub event_ttl: Duration,
    /// How often history is compacted (0 disables).
    #[arg(long, default_value = "5m", value_parser = parse_flag_duration)]
    pub etcd_compaction_interval: Duration,
    /// Minimum watch timeout; each watch gets a random timeout between it and twice it.
    #[arg(long, default_value_t = 1800)]
    pub min_request_timeout: u64,
    /// How long a non-long-running request may take before it is answered with 504 and its
    /// stage work is cancelled (a client's `?timeout=` may shorten it).
    #[arg(long, default_value = "60s", value_parser = parse_flag_duration)]
    pub request_timeout: Duration,
    /// The range Service cluster IPs are allocated from; its first address is the
    /// `kubernetes` Service's.
    #[arg(long, default_value = "10.96.0.0/12", value_parser = parse_service_range)]
    pub service_cluster_ip_range: cluster_ips::ServiceRange,
    /// The ports NodePort and LoadBalancer Services' node ports are allocated from.
    #[arg(long, default_value = "30000-32767", value_parser = cluster_ips::PortRange::parse)]
    pub service_node_port_range: cluster_ips::PortRange,
    /// How long the server keeps serving after SIGTERM with `/readyz` failing, so load
    /// balancers move traffic away before it stops taking requests.
    #[arg(long, default_value = "0s", value_parser = parse_flag_duration)]
    pub shutdown_delay_duration: Duration,
    /// During shutdown, keep the listener open while the requests in flight drain, answering
    /// new ones 429 with `Retry-After`, and close it only then (rather than at once).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub shutdown_send_retry_after: bool,
    /// During shutdown, the longest time the watches take to end once new requests are refused:
    /// they are ended one after the other (at 200 a second or faster), cleanly, so clients
    /// re-watch elsewhere from their last resourceVersion; 0 ends them all at once.
    #[arg(long, default_value = "0s", value_parser = parse_flag_duration)]
    pub shutdown_watch_termination_grace_period: Duration,
    /// Run the built-in controllers (and the APF configuration upkeep) only while holding the
    /// `kube-system/apiserver-controllers` Lease, so replicas sharing storage run them one at a
    /// time; off runs them on this replica unconditionally.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// How long a Lease holder is trusted without renewing; others wait this long (by their own
    /// clock, from when they saw the Lease last change) before taking it over.
    #[arg(long, default_value = "15s", value_parser = parse_flag_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the holder keeps trying to renew before it stops its controllers.
    #[arg(long, default_value = "10s", value_parser = parse_flag_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How often the Lease is renewed, and how often the others try to take it.
    #[arg(long, default_value = "2s", value_parser = parse_flag_duration)]
    pub leader_elect_retry_period: Duration,
    /// The Lease (`namespace/name`) of a kube-controller-manager sharing the cluster: while
    /// someone holds it, this server's controllers of kube-controller-manager's kind (namespace
    /// finalization, service accounts, tokens, quota, role aggregation, policy status, root CA)
    /// stand aside. Empty: they never do.
    #[arg(long, default_value = controllers::standing_aside::CONTROLLER_MANAGER_LEASE)]
    pub controller_manager_lease: String,
    /// Largest accepted request body, in bytes.
    #[arg(long, default_value_t = 3 * 1024 * 1024)]
    pub max_request_body_bytes: usize,
    /// Which resources' storage stages run in other processes: a YAML file listing shards, each
    /// with a `name`, the `url` its process listens at, and its `resources` (`events`,
    /// `leases.coordination.k8s.io`). Gateways route those resources' writes, reads and watches
    /// to them.
    #[arg(long)]
    pub stage_topology: Option<PathBuf>,
    /// The CA every process of a deployment presents a certificate of, between processes.
    #[arg(long)]
    pub stage_ca_file: Option<PathBuf>,
    /// This process's certificate between processes (for serving and as a client).
    #[arg(long)]
    pub stage_cert_file: Option<PathBuf>,
    /// Its key.
    #[arg(long)]
    pub stage_key_file: Option<PathBuf>,
    /// Mailbox capacity of each stage actor.
    #[arg(long, default_value_t = 1024)]
    pub stage_mailbox_capacity: usize,
    /// How long a request waits for a slot in a full mailbox before it is refused with 429.
    #[arg(long, default_value = "2s", value_parser = parse_flag_duration)]
    pub stage_mailbox_wait: Duration,
    /// Let the admin endpoint inject storage faults (`POST /faults?storageWriteDelay=2s`), for
    /// testing backpressure and deadlines; off in normal operation.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub enable_fault_injection: bool,
    /// Judge the axes every second from the metrics (`/debug/axes`, `apiserver_axis_health`);
    /// off, the metrics are recorded without the tap that feeds it.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub diagnosis: bool,
    /// A JSON file of the thresholds the axes are judged by (`/debug/axes`); fields it leaves
    /// out keep their defaults (docs/DIAGNOSIS.md lists them).
    #[arg(long)]
    pub diagnosis_config: Option<PathBuf>,
    /// Finalize deleted namespaces (delete their content, then the namespace), the job of
    /// kube-controller-manager in a full cluster; off leaves them `Terminating`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_namespace_finalizer: bool,
    /// Create a `default` ServiceAccount in every namespace, the job of kube-controller-manager's
    /// serviceaccount controller in a full cluster.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_serviceaccount_controller: bool,
    /// Fill `kubernetes.io/service-account-token` Secrets with legacy tokens, and delete them
    /// with their ServiceAccount (kube-controller-manager's token controller).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_serviceaccount_token_controller: bool,
    /// Fill ClusterRoles that have an `aggregationRule` with the rules of the roles it selects
    /// (kube-controller-manager's clusterrole-aggregation controller).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_clusterrole_aggregation: bool,
    /// Keep ResourceQuotas' status: `status.hard` from the spec, `status.used` recounted from
    /// what is stored (kube-controller-manager's resourcequota controller). Off leaves quotas
    /// uncounted, and quota admission refuses what they cover.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_resourcequota_controller: bool,
    /// Type check ValidatingAdmissionPolicies and write `status.typeChecking`
    /// (kube-controller-manager's validatingadmissionpolicy-status-controller).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_validating_admission_policy_status_controller: bool,
    /// Publish the `kube-root-ca.crt` ConfigMap (the CA verifying this server) in every
    /// namespace (kube-controller-manager's root-ca-cert-publisher). Off by default for now: a
    /// bare kube-apiserver publishes none, and the end-to-end suite still counts ConfigMaps so.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub enable_root_ca_publisher: bool,
    /// HTTP worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Watch cache window per resource, `resource[.group]#size` comma-separated (e.g.
    /// `pods#1000,deployments.apps#500`): events kept whatever their age.
    #[arg(long, value_delimiter = ',', value_parser = parse_watch_cache_size)]
    pub watch_cache_sizes: Vec<(String, usize)>,
    /// Watch cache window of resources not in `--watch-cache-sizes`.
    #[arg(long, default_value_t = 100)]
    pub default_watch_cache_size: usize,
    /// Events younger than this stay in the watch cache window past its size, so clients
    /// re-watching soon after a burst resume without a re-list (kube keeps about 75 s).
    #[arg(long, default_value = "75s", value_parser = parse_flag_duration)]
    pub watch_cache_event_freshness: Duration,
    /// How long a watcher may leave events undelivered (its buffer full) before it is cut
    /// off; it then re-watches from its last resourceVersion.
    #[arg(long, default_value = "5s", value_parser = parse_flag_duration)]
    pub slow_watcher_budget: Duration,
}

impl ServeOptions {
    /// `--api-audiences`, defaulting to the first issuer as kube does.
    pub fn audiences(&self) -> Vec<String> {
        if self.api_audiences.is_empty() {
            self.service_account_issuer[..1].to_vec()
        } else {
            self.api_audiences.clone()
        }
    }

    /// The watch cache window size of a resource (`configmaps`, `deployments.apps`).
    pub fn watch_cache_size(&self, qualified_resource: &str) -> usize {
        self.cache_settings().window_size(qualified_resource)
    }

    /// What the cachers are started with.
    pub fn cache_settings(&self) -> stage_handles::CacheSettings {
        stage_handles::CacheSettings {
            storage_prefix: self.etcd_prefix.clone(),
            window_sizes: self.watch_cache_sizes.clone(),
            default_window_size: self.default_watch_cache_size,
            window_freshness: self.watch_cache_event_freshness,
            slow_watcher_budget: self.slow_watcher_budget,
            mailbox_capacity: self.stage_mailbox_capacity,
            mailbox_wait: self.stage_mailbox_wait,
        }
    }
}

/// `--authorization-mode`'s list (a newtype, so clap takes the whole value at once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizationModes(pub Vec<AuthorizationMode>);

fn parse_authorization_mode(s: &str) -> Result<AuthorizationModes, String> {
    auth::authz::parse_modes(s).map(AuthorizationModes)
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("{s:?} is not claim=value"))?;
    Ok((k.to_string(), v.to_string()))
}

impl ServeOptions {
    /// The address the `kubernetes` Service lists for this server (see `--advertise-address`).
    pub fn advertised_address(&self) -> Option<IpAddr> {
        if let Some(ip) = self.advertise_address {
            return Some(ip);
        }
        if !self.bind_address.is_unspecified() {
            return Some(self.bind_address);
        }
        // Connecting a UDP socket sends nothing: it picks the default route's local address.
        let probe = std::net::UdpSocket::bind((self.bind_address, 0)).ok()?;
        let off_host: IpAddr =
            if self.bind_address.is_ipv4() { [10, 255, 255, 255].into() } else { "fd00::1".parse().ok()? };
        probe.connect((off_host, 9)).ok()?;
        probe.local_addr().ok().map(|a| a.ip())
    }
}

fn parse_service_range(s: &str) -> Result<cluster_ips::ServiceRange, String> {
    cluster_ips::ServiceRange::parse(s)
}

/// Parses one `resource[.group]#size` entry of `--watch-cache-sizes`.
fn parse_watch_cache_size(s: &str) -> Result<(String, usize), String> {
    let (resource, size) = s.split_once('#').ok_or_else(|| format!("invalid value of watch cache size: {s}"))?;
    let size = size.trim().parse().map_err(|_| format!("invalid size of watch cache capabilities: {s}"))?;
    Ok((resource.trim().to_string(), size))
}

/// `--storage-backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageBackend {
    /// The embedded store under `--data-dir`.
    Embedded,
    /// etcd v3 at `--etcd-servers`.
    Etcd3,
}

/// One of a node's address types, as `--kubelet-preferred-address-types` takes them.
fn parse_node_address_type(value: &str) -> Result<String, String> {
    const TYPES: [&str; 5] = ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"];
    if TYPES.contains(&value) {
        Ok(value.to_string())
    } else {
        Err(format!("{value:?} is not a node address type (one of {})", TYPES.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_flags_take_go_durations_and_refuse_a_bare_number() {
        let cli = Cli::try_parse_from([
            "apiserver",
            "--request-timeout=1m0s",
            "--shutdown-delay-duration=1m30s",
            "--etcd-compaction-interval",
            "0",
            "--stage-mailbox-wait=1h2m3.5s",
            "--slow-watcher-budget=500ms",
        ])
        .unwrap();
        assert_eq!(cli.serve.request_timeout, Duration::from_secs(60));
        assert_eq!(cli.serve.shutdown_delay_duration, Duration::from_secs(90));
        assert_eq!(cli.serve.etcd_compaction_interval, Duration::ZERO);
        assert_eq!(cli.serve.stage_mailbox_wait, Duration::from_millis(3_723_500));
        assert_eq!(cli.serve.slow_watcher_budget, Duration::from_millis(500));
        let refused = Cli::try_parse_from(["apiserver", "--request-timeout=60"]).unwrap_err().to_string();
        assert!(refused.contains("time: missing unit in duration \"60\""), "{refused}");
        assert!(Cli::try_parse_from(["apiserver", "--request-timeout=-1s"]).is_err());
    }

    #[test]
    fn watch_cache_sizes_follow_kube_syntax() {
        let cli = Cli::try_parse_from(["apiserver", "--watch-cache-sizes", "pods#1000,deployments.apps#5"]).unwrap();
        assert_eq!(cli.serve.watch_cache_size("pods"), 1000);
        assert_eq!(cli.serve.watch_cache_size("deployments.apps"), 5);
        assert_eq!(cli.serve.watch_cache_size("configmaps"), 100);
        assert!(Cli::try_parse_from(["apiserver", "--watch-cache-sizes", "pods"]).is_err());
        assert!(Cli::try_parse_from(["apiserver", "--watch-cache-sizes", "pods#many"]).is_err());
    }

    #[test]
    fn kubeadm_flags_parse_as_kube_parses_them() {
        let cli = Cli::try_parse_from(["apiserver"]).unwrap();
        assert_eq!(
            cli.serve.kubelet_preferred_address_types,
            ["Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP"]
        );
        assert!(!cli.serve.enable_bootstrap_token_auth);
        let kubeadm = [
            "apiserver",
            "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
            "--enable-bootstrap-token-auth=true",
        ];
        let cli = Cli::try_parse_from(kubeadm).unwrap();
        assert_eq!(cli.serve.kubelet_preferred_address_types, ["InternalIP", "ExternalIP", "Hostname"]);
        assert!(cli.serve.enable_bootstrap_token_auth);
        assert!(
            Cli::try_parse_from(["apiserver", "--enable-bootstrap-token-auth"])
                .unwrap()
                .serve
                .enable_bootstrap_token_auth
        );
        assert!(
            Cli::try_parse_from(["apiserver", "--kubelet-preferred-address-types=InternalIP,LegacyHostIP"]).is_err()
        );
    }

    #[test]
    fn serve_is_the_default() {
        let cli = Cli::try_parse_from(["apiserver", "--secure-port", "7443"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.secure_port, 7443);
        let cli = Cli::try_parse_from(["apiserver", "serve", "--authorization-mode", "AlwaysAllow"]).unwrap();
        assert!(
            matches!(cli.command, Some(Command::Serve(o)) if o.authorization_mode.0 == [AuthorizationMode::AlwaysAllow])
        );
    }
}
