//! The `flowcontrol.apiserver.k8s.io` printers: FlowSchemas (listed in matching order, as
//! kube's list printer sorts them) and PriorityLevelConfigurations.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::d;
use super::{AGE, NAME, StaticPrinter, age, arr, at, col, int, name, s};
use apimachinery::table::{Column, Printer, Row};

/// `printFlowSchema` / `printFlowSchemaList`.
pub struct FlowSchemaPrinter;

/// The FlowSchema printer.
pub static FLOW_SCHEMAS: FlowSchemaPrinter = FlowSchemaPrinter;

const FLOW_SCHEMA_COLUMNS: &[Column] = &[
    NAME,
    col("PriorityLevel", "string", d::FS_PRIORITY_LEVEL),
    col("MatchingPrecedence", "string", d::FS_MATCHING_PRECEDENCE),
    col("DistinguisherMethod", "string", d::FS_DISTINGUISHER_METHOD),
    AGE,
    col("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
];

impl Printer for FlowSchemaPrinter {
    fn columns(&self) -> &[Column] {
        FLOW_SCHEMA_COLUMNS
    }

    /// The priority level, precedence, distinguisher (`<none>`) and the `Dangling` condition's
    /// status (`?` until the controller sets it).
    fn row(&self, obj: &Value, now: DateTime<Utc>) -> Row {
        let distinguisher = match at(obj, "spec.distinguisherMethod") {
            Some(dm) => s(dm, "type").to_string(),
            None => "<none>".to_string(),
        };
        let missing = arr(obj, "status.conditions")
            .iter()
            .find(|c| c["type"].as_str() == Some("Dangling"))
            .map_or("?", |c| c["status"].as_str().unwrap_or(""));
        Row::cells(vec![
            name(obj),
            s(obj, "spec.priorityLevelConfiguration.name").into(),
            int(obj, "spec.matchingPrecedence").into(),
            distinguisher.into(),
            age(obj, now),
            missing.into(),
        ])
    }

    /// `FlowSchemaSequence`: by matching precedence, then name.
    fn order(&self, objects: &mut [&Value]) {
        objects.sort_by(|a, b| {
            (int(a, "spec.matchingPrecedence"), s(a, "metadata.name"))
                .cmp(&(int(b, "spec.matchingPrecedence"), s(b, "metadata.name")))
        });
    }
}

/// `printPriorityLevelConfiguration`: the type, and a limited level's shares and queuing
/// (`<none>` where the level has none).
pub static PRIORITY_LEVEL_CONFIGURATIONS: StaticPrinter = StaticPrinter {
    columns: &[
        NAME,
        col("Type", "string", d::PL_TYPE),
        col("NominalConcurrencyShares", "string", d::PL_NOMINAL_CONCURRENCY_SHARES),
        col("Queues", "string", d::PL_QUEUES),
        col("HandSize", "string", d::PL_HAND_SIZE),
        col("QueueLengthLimit", "string", d::PL_QUEUE_LENGTH_LIMIT),
        AGE,
    ],
    row: |obj, now| {
        let none = || Value::from("<none>");
        let (mut shares, mut queues, mut hand, mut limit) = (none(), none(), none(), none());
        if let Some(l) = at(obj, "spec.limited") {
            shares = int(l, "nominalConcurrencyShares").into();
            if let Some(q) = at(l, "limitResponse.queuing") {
                queues = int(q, "queues").into();
                hand = int(q, "handSize").into();
                limit = int(q, "queueLengthLimit").into();
            }
        }
        Row::cells(vec![name(obj), s(obj, "spec.type").into(), shares, queues, hand, limit, age(obj, now)])
    },
};
