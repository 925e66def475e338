//! kube's CEL environment, versioned as kube 1.32 versions it (`environment/base.go`).
//!
//! Every library kube has is in both versions served here: the standard library with UTC as
//! the default time zone, cross-type numeric comparisons, optional types, strings (version
//! 2), sets, and kube's URLs, regex, lists, authorizer (with selectors), quantity, IP, CIDR
//! and format libraries. kube 1.32 adds two-variable comprehensions. cel-go's math and
//! encoders extensions, bindings and strings `reverse` are not kube's and are not here.
//!
//! kube compiles an expression a user writes (a create, or an update that changes the
//! expression) in the environment of its minimum compatibility version, 1.31
//! ([`Version::NEW_EXPRESSIONS`]), so that a rollback to 1.31 still understands it;
//! expressions already stored compile in the newest, 1.32 ([`Version::STORED`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use crate::decls::{self, Library, Overload};
use crate::types::Type;

/// A version of kube's CEL environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// kube 1.31: everything but two-variable comprehensions.
    V1_31,
    /// kube 1.32.
    V1_32,
}

impl Version {
    /// Where new expressions compile: kube's `DefaultCompatibilityVersion`.
    pub const NEW_EXPRESSIONS: Version = Version::V1_31;
    /// Where stored expressions compile and everything evaluates.
    pub const STORED: Version = Version::V1_32;

    /// The libraries of this version.
    pub fn libraries(self) -> Vec<Library> {
        let mut out = vec![
            Library::Standard,
            Library::Urls,
            Library::Regex,
            Library::Lists,
            Library::Authz,
            Library::Optional,
            Library::Quantity,
            Library::StringsV2,
            Library::Sets,
            Library::Ip,
            Library::Cidr,
            Library::Format,
            Library::AuthzSelectors,
        ];
        if self >= Version::V1_32 {
            out.push(Library::TwoVarComprehensions);
        }
        out
    }

    /// The functions of this version, by name.
    pub fn functions(self) -> Arc<HashMap<String, Vec<Overload>>> {
        static V1_31: LazyLock<Arc<HashMap<String, Vec<Overload>>>> =
            LazyLock::new(|| Arc::new(decls::functions(&Version::V1_31.libraries())));
        static V1_32: LazyLock<Arc<HashMap<String, Vec<Overload>>>> =
            LazyLock::new(|| Arc::new(decls::functions(&Version::V1_32.libraries())));
        match self {
            Version::V1_31 => V1_31.clone(),
            Version::V1_32 => V1_32.clone(),
        }
    }
}

/// An environment: a version and the variables an expression may name.
#[derive(Clone, Debug)]
pub struct Env {
    /// The version it compiles in.
    pub version: Version,
    variables: BTreeMap<String, Type>,
    functions: Arc<HashMap<String, Vec<Overload>>>,
}

impl Env {
    /// The environment of `version`, without variables.
    pub fn new(version: Version) -> Env {
        Env { version, variables: BTreeMap::new(), functions: version.functions() }
    }

    /// With variable `name` of type `t`.
    pub fn declare(mut self, name: &str, t: Type) -> Env {
        self.variables.insert(name.to_string(), t);
        self
    }

    /// The type of variable `name`, if declared.
    pub fn variable(&self, name: &str) -> Option<&Type> {
        self.variables.get(name)
    }

    /// The overloads of function `name`, if declared.
    pub fn function(&self, name: &str) -> Option<&[Overload]> {
        self.functions.get(name).map(Vec::as_slice)
    }
}
