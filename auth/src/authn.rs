//! The authentication stage: credentials to a [`UserInfo`], by the authenticators kube tries
//! in order. Bearer tokens from `--token-auth-file` (kube's CSV format
//! `token,user,uid,"group1,group2"`), client certificates verified by TLS against the client
//! CA (CN is the user, O the groups), else `system:anonymous` when `--anonymous-auth` allows
//! it. An invalid token is 401 even with anonymous auth on, as kube.

use std::collections::HashMap;
use std::path::Path;

use actix::{Actor, Context};
use actors::{Deadline, StageHandler, Work};
use apimachinery::error::ApiError;
use apimachinery::messages::Authenticate;
use apimachinery::request::UserInfo;

/// The authentication stage actor.
pub struct AuthenticationActor {
    tokens: HashMap<String, UserInfo>,
    anonymous: bool,
}

/// Reads a static token file: `token,user,uid[,"group1,group2"]` per line.
pub fn load_token_file(path: &Path) -> Result<HashMap<String, UserInfo>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tokens = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_csv(line);
        if fields.len() < 3 {
            return Err(format!("{}:{}: token file entries need at least 3 columns", path.display(), n + 1));
        }
        let groups =
            fields.get(3).map(|g| g.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect());
        tokens.insert(
            fields[0].clone(),
            UserInfo {
                name: fields[1].clone(),
                uid: fields[2].clone(),
                groups: groups.unwrap_or_default(),
                ..Default::default()
            },
        );
    }
    Ok(tokens)
}

/// Splits one CSV line, honouring double quotes (a quoted field may hold commas).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

impl AuthenticationActor {
    /// An authenticator over static tokens, allowing anonymous requests if `anonymous`.
    pub fn new(tokens: HashMap<String, UserInfo>, anonymous: bool) -> Self {
        AuthenticationActor { tokens, anonymous }
    }
}

impl Actor for AuthenticationActor {
    type Context = Context<Self>;
}

fn authenticated(mut user: UserInfo) -> UserInfo {
    if !user.in_group("system:authenticated") && user.name != "system:anonymous" {
        user.groups.push("system:authenticated".into());
    }
    user
}

impl StageHandler<Authenticate> for AuthenticationActor {
    fn handle(
        &mut self,
        Authenticate(creds): Authenticate,
        _: Deadline,
        _: &mut Context<Self>,
    ) -> Work<Self, Result<UserInfo, ApiError>> {
        // kube tries client certificates before tokens: a verified certificate decides.
        let result = if let Some(user) = creds.client_certificate {
            Ok(authenticated(user))
        } else if let Some(token) = creds.bearer_token {
            self.tokens.get(&token).cloned().map(authenticated).ok_or_else(ApiError::unauthorized)
        } else if self.anonymous {
            Ok(UserInfo::anonymous())
        } else {
            Err(ApiError::unauthorized())
        };
        let label = if result.is_ok() { "success" } else { "error" };
        metrics::counter!("authentication_attempts", "result" => label).increment(1);
        Work::Done(result)
    }
}

actors::stage_handler!(AuthenticationActor => Authenticate);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_parses_quoted_groups() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tokens.csv");
        std::fs::write(&f, "t1,alice,u1,\"system:masters,dev\"\nt2,bob,u2\n").unwrap();
        let t = load_token_file(&f).unwrap();
        assert_eq!(t["t1"].groups, vec!["system:masters", "dev"]);
        assert_eq!(t["t2"].name, "bob");
        assert!(t["t2"].groups.is_empty());
    }
}
