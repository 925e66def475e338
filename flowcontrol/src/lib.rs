//! The API Priority and Fairness stage.
//!
//! Every request that passed authorization asks [`FlowControlActor`] for a seat before it
//! executes. This first version grants every request at once under the `exempt` priority level
//! for `system:masters` and `global-default` otherwise, so the pipeline has its shape; flow
//! schemas, queue sets, seats and 429 rejection come with the APF work.

use actix::{Actor, Context, Handler};
use actors::error::ApiError;
use actors::messages::{SeatGrant, StartRequest};

/// The APF stage actor.
#[derive(Default)]
pub struct FlowControlActor;

impl Actor for FlowControlActor {
    type Context = Context<Self>;
}

impl Handler<StartRequest> for FlowControlActor {
    type Result = Result<SeatGrant, ApiError>;

    fn handle(&mut self, msg: StartRequest, _: &mut Context<Self>) -> Self::Result {
        let level = if msg.user.in_group("system:masters") { "exempt" } else { "global-default" };
        Ok(SeatGrant { flow_schema_uid: level.to_string(), priority_level_uid: level.to_string() })
    }
}

actors::stage_handler!(FlowControlActor => StartRequest);
