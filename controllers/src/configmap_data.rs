//! One ConfigMap of the API server's own, brought to the data it should hold: read, changed as
//! the caller says, written, and read again after a conflict with another server's write.

use actors::Deadline;
use apimachinery::catalogue::Catalogue;
use apimachinery::messages::{CreateObject, GetObject, Target, UpdateObject};
use apimachinery::options::{GetOptions, ReadAt, WriteOptions};
use apimachinery::request::UserInfo;
use serde_json::{Map, Value, json};
use stage_handles::Stages;

use super::WRITE_TIMEOUT;

/// Brings `namespace/name` to `wanted(current data)`: `None` leaves it as it is; the data of a
/// missing ConfigMap is `None` and it is created. Writes as `user`; a conflict is read again,
/// up to five times.
pub async fn reconcile(
    stages: &Stages,
    catalogue: &Catalogue,
    (namespace, name): (&str, &str),
    user: &UserInfo,
    wanted: impl Fn(Option<&Map<String, Value>>) -> Option<Map<String, Value>>,
) -> Result<(), String> {
    let def = catalogue.find("", "v1", "configmaps").ok_or("configmaps are not served")?;
    for _ in 0..5 {
        let get = GetObject {
            target: Target::object(&def, namespace, name),
            options: GetOptions { read_at: ReadAt::Latest },
        };
        let existing = stages.reads(&def).map_err(|e| e.message)?.reader.get(get).await.ok().map(|o| o.value());
        let empty = Map::new();
        let data = existing.as_ref().map(|e| e.get("data").and_then(Value::as_object).unwrap_or(&empty));
        let Some(data) = wanted(data) else { return Ok(()) };
        let deadline = Deadline::after(WRITE_TIMEOUT);
        let options = WriteOptions::default();
        let result = match existing {
            Some(mut e) => {
                e["data"] = Value::Object(data);
                let target = Target::object(&def, namespace, name);
                let update = UpdateObject { target, object: e, user: user.clone(), options };
                stages.update.ask(update, deadline).await.map(|_| ())
            }
            None => {
                let object = json!({"metadata": {"name": name, "namespace": namespace}, "data": data});
                let create =
                    CreateObject { target: Target::collection(&def, namespace), object, user: user.clone(), options };
                stages.create.ask(create, deadline).await.map(|_| ())
            }
        };
        match result {
            Ok(()) => return Ok(()),
            Err(e) if matches!(e.reason, apimachinery::Reason::Conflict | apimachinery::Reason::AlreadyExists) => {}
            Err(e) => return Err(format!("{namespace}/{name}: {}", e.message)),
        }
    }
    Err(format!("{namespace}/{name}: kept conflicting"))
}
