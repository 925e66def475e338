//! Why an evaluation failed or stopped, in cel-go's words.

use crate::authorization::AuthzRequest;

/// An evaluation error. The first three are CEL errors, values `&&` and `||` may absorb; the
/// last two stop the evaluation outright, as cel-go's cancellation does.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// cel-go's `no such overload`: no overload takes the values met at run time (what the
    /// checker cannot see through `dyn`). kube matches on this prefix.
    #[error("no such overload")]
    NoSuchOverload,
    /// Any other CEL error (`no such key: x`, `division by zero`).
    #[error("{0}")]
    Message(String),
    /// The run-time cost passed the limit: cel-go's cancellation.
    #[error("operation cancelled: actual cost limit exceeded")]
    CostLimitExceeded,
    /// An authorization check whose decision the caller has not supplied yet: evaluation
    /// stops so the caller can ask, then evaluates again.
    #[error("authorization decision pending")]
    AuthorizationPending(Box<AuthzRequest>),
}

impl EvalError {
    /// A CEL error with this message.
    pub fn msg(m: impl Into<String>) -> EvalError {
        EvalError::Message(m.into())
    }

    /// Whether it stops evaluation rather than being a value (`&&` does not absorb it).
    pub fn is_cancellation(&self) -> bool {
        matches!(self, EvalError::CostLimitExceeded | EvalError::AuthorizationPending(_))
    }
}

/// A result of a CEL function.
pub type EvalResult<T = crate::value::Value> = Result<T, EvalError>;
