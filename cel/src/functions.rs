//! Function dispatch, as cel-go's dispatcher does it: by name and the run-time types of the
//! arguments, across the standard library ([`crate::stdlib`]) and kube's libraries
//! ([`crate::library`]), `no such overload` when none takes the arguments.

use crate::authorization::Authorizer;
use crate::error::{EvalError, EvalResult};
use crate::library;
use crate::stdlib;
use crate::value::Value;

/// The conversions, which kube's libraries extend (`string(ip)`).
const CONVERSIONS: [&str; 8] = ["int", "uint", "double", "string", "bytes", "bool", "duration", "timestamp"];

/// Calls function `name` (resolved by the checker to `overload` when it found one).
pub fn call(name: &str, overload: Option<&str>, args: &[Value], authorizer: Option<&dyn Authorizer>) -> EvalResult {
    call_with(name, overload, args, None, authorizer)
}

/// [`call`], with a regular expression already compiled for a constant pattern.
pub fn call_with(
    name: &str,
    overload: Option<&str>,
    args: &[Value],
    regex: Option<&::regex::Regex>,
    authorizer: Option<&dyn Authorizer>,
) -> EvalResult {
    if let (true, [v]) = (CONVERSIONS.contains(&name), args)
        && let Some(result) = library::convert(name, v)
    {
        return result;
    }
    if let Some(result) = stdlib::call(name, args, regex) {
        return result;
    }
    library::call(name, overload, args, regex, authorizer).unwrap_or(Err(EvalError::NoSuchOverload))
}
