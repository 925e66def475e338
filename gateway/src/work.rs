//! What a request will cost, counted for flow control before it runs ([`RequestWork`]): the
//! objects a list goes through and the watchers a write's event reaches, read from the
//! resource's cacher (two atomic reads, no lock held).
//!
//! Objects are counted for this server's read path: lists come from the cache's ordered
//! snapshot, so a list without selectors stops after `limit` objects while one with selectors
//! walks them all; a list by `metadata.name` is one object, as kube counts it.

use apimachinery::messages::RequestWork;
use apimachinery::options::Params;
use apimachinery::request::RequestInfo;

use crate::state::ServerState;

/// The work `info` asks for.
pub fn request_work(server: &ServerState, info: &RequestInfo, query: &Params) -> RequestWork {
    if !info.is_resource_request || !info.subresource.is_empty() {
        return RequestWork::default();
    }
    let lists = info.verb == "list" || (info.verb == "watch" && query.flag("sendInitialEvents"));
    let writes = info.is_mutating();
    if !lists && !writes {
        return RequestWork::default();
    }
    let Some(def) = server.catalogue.find(&info.api_group, &info.api_version, &info.resource) else {
        return RequestWork::default();
    };
    let Some(reads) = server.stages.caches.get(&def.storage_path) else { return RequestWork::default() };
    if writes {
        return RequestWork { objects: 0, watchers: reads.reader.watcher_count() };
    }
    RequestWork { objects: listed_objects(reads.reader.object_count(), query), watchers: 0 }
}

/// Objects a list of a resource holding `stored` goes through.
fn listed_objects(stored: u64, query: &Params) -> u64 {
    let fields = query.get("fieldSelector").unwrap_or("");
    let by_name = fields.starts_with("metadata.name=") && !fields.contains(',');
    let selective = !fields.is_empty() || query.non_empty("labelSelector").is_some();
    let limit = query.get("limit").and_then(|l| l.parse::<u64>().ok()).filter(|l| *l > 0);
    match limit {
        _ if by_name => 1,
        Some(limit) if !selective => limit.min(stored),
        _ => stored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Params {
        Params::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn a_list_goes_through_what_its_selectors_and_limit_make_it_read() {
        assert_eq!(listed_objects(5_000, &query(&[])), 5_000);
        assert_eq!(listed_objects(5_000, &query(&[("limit", "500")])), 500, "a page stops at its limit");
        assert_eq!(listed_objects(100, &query(&[("limit", "500")])), 100);
        assert_eq!(
            listed_objects(5_000, &query(&[("limit", "500"), ("labelSelector", "a=b")])),
            5_000,
            "a selector walks everything"
        );
        assert_eq!(listed_objects(5_000, &query(&[("fieldSelector", "metadata.name=x")])), 1);
        assert_eq!(listed_objects(5_000, &query(&[("fieldSelector", "metadata.name=x,spec.nodeName=n")])), 5_000);
    }
}
