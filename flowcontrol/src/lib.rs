//! API Priority and Fairness.
//!
//! A request is first classified ([`classify`]): which FlowSchema it matches and so which
//! priority level it runs at. Classification is a pure function of the user and the request,
//! run on the caller's own task before the request waits in any mailbox, so a request APF
//! exempts (`system:masters`, health probes) is never turned away by a full one. Every other
//! request then asks the [`FlowControlActor`] for a seat.
//!
//! # Layout
//! - [`shuffle`]: kube's shuffle-sharding dealer and flow hash: which queues a flow may use.
//! - [`queueset`]: one priority level's queues, seats and virtual-time fair queuing, a pure
//!   data structure the caller drives with explicit instants.
//! - [`limits`]: the server's concurrency split among priority levels and the periodic
//!   borrowing adjustment from seat-demand statistics.
//! - [`bootstrap`]: kube's mandatory and suggested FlowSchemas and PriorityLevelConfigurations,
//!   and the rule that keeps them.
//!
//! This first version classifies with kube's mandatory and suggested schemas that matter here
//! (`exempt`, `probes`, `global-default`) and grants every seat at once, so the pipeline has
//! its shape; FlowSchema and PriorityLevelConfiguration objects, queue sets, seats and 429
//! rejection come with the APF work.

pub mod bootstrap;
pub mod limits;
pub mod queueset;
pub mod shuffle;

use actix::{Actor, Context};
use actors::{Deadline, StageHandler, Work};
use apimachinery::error::ApiError;
use apimachinery::messages::{Classification, SeatGrant, StartRequest};
use apimachinery::request::{RequestInfo, UserInfo};

/// The group kube's mandatory `exempt` FlowSchema matches.
const PRIVILEGED_GROUP: &str = "system:masters";
/// The paths kube's suggested `probes` FlowSchema exempts.
const PROBES: &[&str] = &["/healthz", "/readyz", "/livez"];

fn level(flow_schema: &str, priority_level: &str) -> Classification {
    Classification {
        flow_schema: flow_schema.to_string(),
        // No FlowSchema objects are stored yet: the names stand in for their UIDs.
        flow_schema_uid: flow_schema.to_string(),
        priority_level: priority_level.to_string(),
        priority_level_uid: priority_level.to_string(),
        exempt: priority_level == "exempt",
    }
}

/// The FlowSchema and priority level of a request, matched in kube's precedence order.
pub fn classify(user: &UserInfo, request: &RequestInfo) -> Classification {
    if user.in_group(PRIVILEGED_GROUP) {
        return level("exempt", "exempt");
    }
    if !request.is_resource_request && request.verb == "get" && PROBES.contains(&request.path.trim_end_matches('/')) {
        return level("probes", "exempt");
    }
    level("global-default", "global-default")
}

/// The APF stage actor: seats for classified, non-exempt requests.
#[derive(Default)]
pub struct FlowControlActor;

impl Actor for FlowControlActor {
    type Context = Context<Self>;
}

impl StageHandler<StartRequest> for FlowControlActor {
    fn handle(
        &mut self,
        _: StartRequest,
        _: Deadline,
        _: &mut Context<Self>,
    ) -> Work<Self, Result<SeatGrant, ApiError>> {
        Work::Done(Ok(SeatGrant { seats: 1 }))
    }
}

actors::stage_handler!(FlowControlActor => StartRequest);

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::request::parse_request_info;

    fn user(groups: &[&str]) -> UserInfo {
        UserInfo {
            name: "u".into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn masters_and_probes_are_exempt_the_rest_global_default() {
        let list = parse_request_info("GET", "/api/v1/pods", false);
        let admin = classify(&user(&["system:masters", "system:authenticated"]), &list);
        assert_eq!((admin.flow_schema.as_str(), admin.exempt), ("exempt", true));
        let probe = classify(&UserInfo::anonymous(), &parse_request_info("GET", "/readyz", false));
        assert_eq!(
            (probe.flow_schema.as_str(), probe.priority_level.as_str(), probe.exempt),
            ("probes", "exempt", true)
        );
        let dev = classify(&user(&["dev", "system:authenticated"]), &list);
        assert_eq!(
            (dev.flow_schema.as_str(), dev.priority_level.as_str(), dev.exempt),
            ("global-default", "global-default", false)
        );
    }
}
