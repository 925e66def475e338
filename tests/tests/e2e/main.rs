//! End-to-end tests: each boots the real `apiserver` binary and drives it with real clients.

mod admin;
mod bad_input;
mod durability;
mod encryption;
mod etcd;
mod kubectl;
mod namespaces;
mod python;
mod rest;
mod watch_cache;
mod watch_sync;
