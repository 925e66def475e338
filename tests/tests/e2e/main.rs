//! End-to-end tests: each boots the real `apiserver` binary and drives it with real clients.

mod admin;
mod admission_policies;
mod admission_webhooks;
mod audit;
mod backpressure;
mod bad_input;
mod durability;
mod encryption;
mod etcd;
mod flowcontrol;
mod helm;
mod identities;
mod kinds;
mod kubectl;
mod namespaces;
mod options;
mod pod_security;
mod protobuf;
mod python;
mod rbac;
mod rest;
mod serviceaccounts;
mod services;
mod watch_cache;
mod watch_sync;
