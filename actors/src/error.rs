//! Why a stage could not be reached or did not answer. Each crate above maps these to its own
//! error once (the object model to a Kubernetes Status: 429, 503, 504).

use std::time::Duration;

/// Why a call to a stage failed without the stage's own answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum StageError {
    /// The mailbox stayed full for the whole wait.
    #[error("the {stage} stage is saturated: its mailbox stayed full for {waited:?}")]
    Saturated {
        /// Stage name.
        stage: String,
        /// How long the caller waited.
        waited: Duration,
    },
    /// The actor stopped or dropped the request without answering.
    #[error("the {stage} stage is not running")]
    Stopped {
        /// Stage name.
        stage: String,
    },
    /// The request's deadline passed before the stage answered.
    #[error("the {stage} stage did not answer before the request's deadline")]
    DeadlineExceeded {
        /// Stage name.
        stage: String,
    },
    /// The network between caller and a stage in another process failed: connection refused,
    /// reset, a certificate refused, an undecodable frame.
    #[error("the {stage} stage is unreachable: {message}")]
    Transport {
        /// Stage name.
        stage: String,
        /// What the transport reported.
        message: String,
    },
}

impl StageError {
    /// The same error naming `stage` instead: a caller names a remote stage with its process
    /// (`storage@events`), which the stage itself does not know.
    pub fn renamed(self, stage: &str) -> Self {
        let stage = stage.to_string();
        match self {
            StageError::Saturated { waited, .. } => StageError::Saturated { stage, waited },
            StageError::Stopped { .. } => StageError::Stopped { stage },
            StageError::DeadlineExceeded { .. } => StageError::DeadlineExceeded { stage },
            StageError::Transport { message, .. } => StageError::Transport { stage, message },
        }
    }

    /// The stage the error names.
    pub fn stage(&self) -> &str {
        match self {
            StageError::Saturated { stage, .. }
            | StageError::Stopped { stage }
            | StageError::DeadlineExceeded { stage }
            | StageError::Transport { stage, .. } => stage,
        }
    }
}
