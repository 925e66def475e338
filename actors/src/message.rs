//! What a stage message must be: something that can cross a process boundary, and whose reply
//! can too, so that any stage can later move into its own process behind the same handle.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A message one stage sends another, with the type of its answer.
pub trait Request: Serialize + DeserializeOwned + Send + 'static {
    /// The answer.
    type Reply: Reply;
}

/// A stage's answer. Every answer is a `Result`, so the stage's meters can count its errors.
pub trait Reply: Serialize + DeserializeOwned + Send + 'static {
    /// Whether the answer is an error.
    fn is_error(&self) -> bool;
}

impl<T, E> Reply for Result<T, E>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    E: Serialize + DeserializeOwned + Send + 'static,
{
    fn is_error(&self) -> bool {
        self.is_err()
    }
}
