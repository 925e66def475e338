//! The official Python `kubernetes` client (30.1.0, the 1.30 line).

use tests::{TestServer, assert_success};

fn scenario(name: &str) {
    let s = TestServer::start();
    let out = s.python("client.py", &[name]);
    let stdout = assert_success(&format!("python scenario {name}"), &out);
    assert_eq!(stdout.trim(), "ok", "{stdout}\nserver log:\n{}", s.log_tail());
}

#[test]
fn python_crud_selectors_paging_conflicts() {
    scenario("crud_and_selectors");
}

#[test]
fn python_watch_from_resource_version_sees_events_in_order() {
    scenario("watch_in_order");
}

#[test]
fn python_concurrent_read_modify_write_loses_no_update() {
    scenario("concurrent_updates");
}

#[test]
fn python_typed_apis_of_the_newer_kinds() {
    scenario("new_kinds");
}

#[test]
fn python_custom_resources_through_a_crd() {
    scenario("custom_resources");
}

/// The client writes times as Python does (`+00:00`); a write that changes nothing after kube's
/// decoding keeps the resourceVersion and wakes no watcher.
#[test]
fn python_no_op_replace_writes_nothing() {
    scenario("noop_replace");
}
