//! Bearer tokens: the generated admin token, kube's static token file (`--token-auth-file`) and
//! tokens minted by `turtles kubeconfig` (stored hashed in `DATA/auth/tokens.csv`, revocable).
//! Every lookup hashes the presented token and compares it with every known hash in constant
//! time; tokens are never logged. Files are re-read when they change, so minting and revoking take
//! effect with the next request.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::rbac::UserInfo;
use super::{AUTHENTICATED, MASTERS};

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("reading or writing {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {why}")]
    Parse {
        path: PathBuf,
        line: usize,
        why: String,
    },
}

pub type Result<T, E = TokenError> = std::result::Result<T, E>;

/// The admin user the generated kubeconfig authenticates as.
pub const ADMIN_USER: &str = "admin";

type Hash = [u8; 32];

fn hash(token: &str) -> Hash {
    Sha256::digest(token.as_bytes()).into()
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Hash> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
        let txt = std::str::from_utf8(chunk).ok()?;
        out[i] = u8::from_str_radix(txt, 16).ok()?;
    }
    Some(out)
}

/// A new random token (256 bits, URL-safe base64).
pub fn new_token() -> String {
    use base64::Engine;
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Split one CSV line of kube's static token format: `token,user,uid,"group1,group2"`.
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn user_with_groups(name: &str, uid: &str, groups: &str) -> UserInfo {
    let groups = groups
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect();
    user_with_group_list(name, uid, groups)
}

/// An authenticated user: `groups` and `system:authenticated` (kube's authenticated-group adder).
pub(crate) fn user_with_group_list(name: &str, uid: &str, mut groups: Vec<String>) -> UserInfo {
    if !groups.iter().any(|g| g == AUTHENTICATED) {
        groups.push(AUTHENTICATED.to_owned());
    }
    UserInfo {
        name: name.to_owned(),
        uid: uid.to_owned(),
        groups,
        extra: Default::default(),
    }
}

/// Parse a token file. Token fields `sha256:HEX` are stored hashes; anything else is a raw token.
fn parse_file(path: &Path) -> Result<Vec<(Hash, UserInfo)>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(TokenError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f = csv_fields(line);
        if f.len() < 3 || f[0].is_empty() || f[1].is_empty() {
            return Err(TokenError::Parse {
                path: path.to_owned(),
                line: i + 1,
                why: "expected token,user,uid[,\"group1,group2\"]".into(),
            });
        }
        let h = match f[0].strip_prefix("sha256:") {
            Some(hx) => unhex(hx).ok_or_else(|| TokenError::Parse {
                path: path.to_owned(),
                line: i + 1,
                why: "bad sha256 token hash".into(),
            })?,
            None => hash(&f[0]),
        };
        let groups = f.get(3).map(String::as_str).unwrap_or("");
        out.push((h, user_with_groups(&f[1], &f[2], groups)));
    }
    Ok(out)
}

type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()))
}

struct Table {
    stamps: Vec<Stamp>,
    entries: Vec<(Hash, UserInfo)>,
}

pub struct Authenticator {
    admin: (Hash, UserInfo),
    files: Vec<PathBuf>,
    table: Mutex<Table>,
    /// Identities the host issues to itself (controllers), in memory only: (token hash, owner,
    /// user). Keyed by owner: two controllers may act as the same ServiceAccount.
    internal: Mutex<Vec<(Hash, String, UserInfo)>>,
    /// Service account tokens (JWTs), once the server has its key.
    service_accounts: std::sync::OnceLock<std::sync::Arc<super::serviceaccount::TokenIssuer>>,
}

/// Where minted tokens are kept.
pub fn minted_file(data_dir: &Path) -> PathBuf {
    data_dir.join("auth").join("tokens.csv")
}

fn admin_token_file(data_dir: &Path) -> PathBuf {
    data_dir.join("auth").join("admin.token")
}

fn write_private(path: &Path, contents: &str) -> Result<()> {
    super::write_private(path, contents.as_bytes()).map_err(|source| TokenError::Io {
        path: path.to_owned(),
        source,
    })
}

/// The admin token, created at first start.
pub fn admin_token(data_dir: &Path) -> Result<String> {
    let path = admin_token_file(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_owned()),
        _ => {
            let t = new_token();
            write_private(&path, &format!("{t}\n"))?;
            Ok(t)
        }
    }
}

/// Mint a token for `user` with `groups`; stored hashed. Returns the token.
pub fn mint(data_dir: &Path, user: &str, groups: &[String]) -> Result<String> {
    let path = minted_file(data_dir);
    let token = new_token();
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    let uid = uuid::Uuid::new_v4();
    let line = format!(
        "sha256:{},{},{},\"{}\"\n",
        hex(&hash(&token)),
        user.replace(['"', ','], ""),
        uid,
        groups.join(",").replace('"', "")
    );
    write_private(&path, &format!("{existing}{line}"))?;
    Ok(token)
}

/// Revoke every minted token of `user`; returns how many.
pub fn revoke(data_dir: &Path, user: &str) -> Result<usize> {
    let path = minted_file(data_dir);
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    let mut kept = String::new();
    let mut removed = 0;
    for line in existing.lines() {
        let f = csv_fields(line);
        if f.get(1).map(String::as_str) == Some(user) {
            removed += 1;
        } else {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    write_private(&path, &kept)?;
    Ok(removed)
}

impl Authenticator {
    /// The admin token plus the given token files (minted tokens, `--token-auth-file`).
    pub fn new(admin_token: &str, files: Vec<PathBuf>) -> Result<Self> {
        let admin = (
            hash(admin_token),
            user_with_groups(ADMIN_USER, "admin", MASTERS),
        );
        let mut entries = Vec::new();
        for f in &files {
            entries.extend(parse_file(f)?);
        }
        let stamps = files.iter().map(|f| stamp(f)).collect();
        Ok(Self {
            admin,
            files,
            table: Mutex::new(Table { stamps, entries }),
            internal: Mutex::new(Vec::new()),
            service_accounts: std::sync::OnceLock::new(),
        })
    }

    /// Issue an in-memory token for `user`, held by `owner` (replacing the owner's earlier one).
    pub fn issue_internal(&self, owner: &str, user: UserInfo) -> String {
        let token = new_token();
        let mut internal = match self.internal.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        internal.retain(|(_, o, _)| o != owner);
        internal.push((hash(&token), owner.to_owned(), user));
        token
    }

    /// Withdraw the in-memory token `owner` holds.
    pub fn revoke_internal(&self, owner: &str) {
        if let Ok(mut internal) = self.internal.lock() {
            internal.retain(|(_, o, _)| o != owner);
        }
    }

    fn refresh(&self, table: &mut Table) {
        let now: Vec<Stamp> = self.files.iter().map(|f| stamp(f)).collect();
        if now == table.stamps {
            return;
        }
        let mut entries = Vec::new();
        for f in &self.files {
            match parse_file(f) {
                Ok(e) => entries.extend(e),
                Err(e) => {
                    // Keep serving the last good table rather than locking everybody out.
                    tracing::error!(error = %e, "token file unreadable; keeping the previous tokens");
                    return;
                }
            }
        }
        table.entries = entries;
        table.stamps = now;
    }

    /// The user a bearer token belongs to.
    /// Accept (and issue) service account tokens signed by `issuer`.
    pub fn set_service_accounts(&self, issuer: std::sync::Arc<super::serviceaccount::TokenIssuer>) {
        let _ = self.service_accounts.set(issuer);
    }

    pub fn service_accounts(&self) -> Option<&std::sync::Arc<super::serviceaccount::TokenIssuer>> {
        self.service_accounts.get()
    }

    /// The user a token belongs to, for the API server's own audience.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        if token.matches('.').count() == 2 {
            if let Some(user) = self.service_accounts().and_then(|i| i.verify(token)) {
                return Some(user);
            }
        }
        self.authenticate_plain(token)
    }

    /// kube's TokenReview authentication: the user a token belongs to if it is valid for one of
    /// `audiences`, and the audiences it is valid for. Service account tokens carry theirs;
    /// every other token here (admin, minted, static file, in-memory) is audience-agnostic and
    /// holds only the API server's (`authenticator.WrapAudienceAgnosticToken`).
    pub fn authenticate_for(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Option<(UserInfo, Vec<String>)> {
        if token.matches('.').count() == 2 {
            if let Some(found) = self
                .service_accounts()
                .and_then(|i| i.verify_for(token, audiences))
            {
                return Some(found);
            }
        }
        let api = super::serviceaccount::ISSUER;
        if !audiences.iter().any(|a| a == api) {
            return None;
        }
        self.authenticate_plain(token)
            .map(|u| (u, vec![api.to_owned()]))
    }

    /// The user of a token that is not a service account token.
    fn authenticate_plain(&self, token: &str) -> Option<UserInfo> {
        let h = hash(token);
        let mut found = None;
        if bool::from(self.admin.0.ct_eq(&h)) {
            found = Some(self.admin.1.clone());
        }
        let mut table = match self.table.lock() {
            Ok(t) => t,
            Err(p) => p.into_inner(),
        };
        self.refresh(&mut table);
        for (eh, user) in &table.entries {
            if bool::from(eh.ct_eq(&h)) && found.is_none() {
                found = Some(user.clone());
            }
        }
        drop(table);
        if let Ok(internal) = self.internal.lock() {
            for (eh, _, user) in internal.iter() {
                if bool::from(eh.ct_eq(&h)) && found.is_none() {
                    found = Some(user.clone());
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_groups_are_quoted() {
        assert_eq!(
            csv_fields(r#"tok,alice,1,"dev,ops""#),
            vec!["tok", "alice", "1", "dev,ops"]
        );
    }

    #[test]
    fn mint_authenticate_revoke() {
        let dir = std::env::temp_dir().join(format!("turtles-tokens-{}", uuid::Uuid::new_v4()));
        let admin = admin_token(&dir).unwrap();
        assert_eq!(admin_token(&dir).unwrap(), admin, "admin token is stable");
        let static_file = dir.join("static.csv");
        std::fs::write(&static_file, "s3cret,bob,42,\"team-a,team-b\"\n").unwrap();
        let auth = Authenticator::new(&admin, vec![minted_file(&dir), static_file]).unwrap();
        let a = auth.authenticate(&admin).unwrap();
        assert!(a.groups.contains(&MASTERS.to_owned()));
        let bob = auth.authenticate("s3cret").unwrap();
        assert_eq!(bob.name, "bob");
        assert!(bob.groups.contains(&"team-b".to_owned()));
        assert!(bob.groups.contains(&AUTHENTICATED.to_owned()));
        assert!(auth.authenticate("nope").is_none());
        let t = mint(&dir, "alice", &["devs".into()]).unwrap();
        assert_eq!(auth.authenticate(&t).unwrap().name, "alice");
        assert!(
            !std::fs::read_to_string(minted_file(&dir))
                .unwrap()
                .contains(&t),
            "stored hashed"
        );
        assert_eq!(revoke(&dir, "alice").unwrap(), 1);
        assert!(
            auth.authenticate(&t).is_none(),
            "revocation takes effect at once"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
