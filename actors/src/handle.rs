//! Typed handles: the only way a stage reaches another.

use std::sync::Arc;

use crate::deadline::Deadline;
use crate::error::StageError;
use crate::message::Request;
use crate::transport::Transport;

/// Sends messages of type `M` to one stage, over whatever transport connects the two. Cheap to
/// clone; every clone reaches the same stage.
pub struct StageHandle<M: Request> {
    transport: Arc<dyn Transport<M>>,
}

impl<M: Request> Clone for StageHandle<M> {
    fn clone(&self) -> Self {
        StageHandle { transport: self.transport.clone() }
    }
}

impl<M: Request> StageHandle<M> {
    /// A handle sending over `transport`.
    pub fn new(transport: impl Transport<M>) -> Self {
        StageHandle { transport: Arc::new(transport) }
    }

    /// Sends `msg` and waits for the reply, at most until `deadline`.
    pub async fn call(&self, msg: M, deadline: Deadline) -> Result<M::Reply, StageError> {
        self.transport.send(msg, deadline).await
    }

    /// The stage this handle reaches.
    pub fn stage(&self) -> &str {
        self.transport.stage()
    }
}

impl<M, T, E> StageHandle<M>
where
    M: Request<Reply = Result<T, E>>,
    T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
    E: serde::Serialize + serde::de::DeserializeOwned + Send + 'static + From<StageError>,
{
    /// Like [`call`](Self::call) for stages answering a `Result`: a failure to reach the stage
    /// becomes the caller's error type.
    pub async fn ask(&self, msg: M, deadline: Deadline) -> Result<T, E> {
        self.call(msg, deadline).await?
    }
}
