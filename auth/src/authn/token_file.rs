//! `--token-auth-file`: static bearer tokens in kube's CSV format
//! (`token,user,uid,"group1,group2"`).

use std::collections::HashMap;
use std::path::Path;

use apimachinery::messages::Authenticated;
use apimachinery::request::UserInfo;
use async_trait::async_trait;

use super::TokenAuthenticator;

/// The tokens of a token file.
pub struct StaticTokens(pub HashMap<String, UserInfo>);

#[async_trait(?Send)]
impl TokenAuthenticator for StaticTokens {
    fn name(&self) -> &'static str {
        "token-file"
    }

    async fn authenticate(&self, token: &str, _: &[String]) -> Result<Option<Authenticated>, String> {
        Ok(self.0.get(token).map(|user| Authenticated { user: user.clone(), audiences: Vec::new() }))
    }
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
