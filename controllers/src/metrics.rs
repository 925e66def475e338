//! The names of the metrics the controllers record, kube's names.

// k8s.io/client-go/tools/leaderelection

/// Whether this server holds a lease, by lease `name`: 1 leader, 0 backup (gauge).
pub const LEADER_ELECTION_MASTER_STATUS: &str = "leader_election_master_status";
