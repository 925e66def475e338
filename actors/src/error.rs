//! Why a stage could not be reached or did not answer. Each crate above maps these to its own
//! error once (the object model to a Kubernetes Status: 429, 503, 504).

use std::time::Duration;

/// Why a call to a stage failed without the stage's own answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// The transport between caller and stage failed (a later, networked transport: connection
    /// refused, reset, undecodable frame).
    #[error("the {stage} stage is unreachable: {message}")]
    Transport {
        /// Stage name.
        stage: String,
        /// What the transport reported.
        message: String,
    },
}

impl StageError {
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
