//! The log backend (`--audit-log-path`): one JSON line per event, to standard output (`-`) or
//! to a file rotated as kube's (lumberjack) rotates it.
//!
//! Rotation: a line that would take the file past `--audit-log-maxsize` megabytes first moves
//! the file aside as `<name>-<UTC time 2006-01-02T15-04-05.000><ext>` in the same directory and
//! starts a new one; then backups beyond the newest `--audit-log-maxbackup` and those older than
//! `--audit-log-maxage` days (by the time in their name) are deleted. 0 keeps all, for both.
//! As in kube, `--audit-log-maxsize 0` is lumberjack's default of 100 MB, not "never rotate".
//! A single line larger than the limit is refused, as lumberjack refuses it.
//!
//! Writes are unbuffered, one `write` per line, so an event written is in the file even if the
//! process dies; they block the audit arbiter's thread, which exists for this (see the parent
//! module).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, NaiveDateTime, Utc};

use super::event::Event;

use crate::metrics::AUDIT_ERROR_TOTAL;

/// lumberjack's `backupTimeFormat`, `2006-01-02T15-04-05.000`.
const BACKUP_TIME: &str = "%Y-%m-%dT%H-%M-%S%.3f";
/// lumberjack's size when none is given, in megabytes.
const DEFAULT_MAX_SIZE_MB: u64 = 100;
const MEGABYTE: u64 = 1024 * 1024;

/// When a log file is rotated and which backups are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// The most bytes a file holds; a line that would pass it rotates the file first.
    pub max_bytes: u64,
    /// How many backups are kept, newest first; 0 keeps all.
    pub max_backups: usize,
    /// Backups older than this (by their name) are deleted; `None` keeps all.
    pub max_age: Option<Duration>,
}

impl Rotation {
    /// From kube's flags: `--audit-log-maxsize` (megabytes, 0 meaning 100), `--audit-log-maxbackup`
    /// and `--audit-log-maxage` (days).
    pub fn from_flags(max_size_mb: u64, max_backups: usize, max_age_days: u64) -> Rotation {
        let mb = if max_size_mb == 0 { DEFAULT_MAX_SIZE_MB } else { max_size_mb };
        Rotation {
            max_bytes: mb.saturating_mul(MEGABYTE),
            max_backups,
            max_age: (max_age_days > 0).then(|| Duration::from_secs(max_age_days.saturating_mul(24 * 3600))),
        }
    }
}

/// Where the log goes.
enum Output {
    Stdout,
    File(RotatingFile),
}

/// The log backend.
pub struct LogBackend {
    out: Output,
}

impl LogBackend {
    /// A backend writing to `path` (`-` is standard output). The file is opened (and its
    /// directory created) now, so a bad path fails at startup, not at the first request.
    pub fn open(path: &Path, rotation: Rotation) -> Result<LogBackend, String> {
        let out = if path == Path::new("-") {
            Output::Stdout
        } else {
            Output::File(RotatingFile::open(path, rotation).map_err(|e| format!("{}: {e}", path.display()))?)
        };
        Ok(LogBackend { out })
    }

    /// Writes one event as a JSON line; a failure is logged and counted in
    /// `apiserver_audit_error_total{plugin="log"}`, as kube counts it.
    pub fn write_event(&mut self, event: &Event) {
        let mut line = match serde_json::to_vec(event) {
            Ok(l) => l,
            Err(e) => return failed(&e.to_string(), event),
        };
        line.push(b'\n');
        let written = match &mut self.out {
            Output::Stdout => io::stdout().lock().write_all(&line),
            Output::File(f) => f.write_line(&line),
        };
        if let Err(e) = written {
            failed(&e.to_string(), event);
        }
    }
}

fn failed(error: &str, event: &Event) {
    metrics::counter!(AUDIT_ERROR_TOTAL, "plugin" => "log").increment(1);
    tracing::error!(audit_id = %event.audit_id, %error, "audit log write failed");
}

/// A file that rotates itself, as lumberjack's `Logger`.
pub struct RotatingFile {
    path: PathBuf,
    rotation: Rotation,
    /// `None` after a failed rotation: the next line tries to open a new file.
    file: Option<File>,
    /// Bytes in the current file.
    size: u64,
}

impl RotatingFile {
    /// Opens `path` for appending (creating it, owner-only, and its directory), then deletes
    /// the backups the limits no longer allow.
    pub fn open(path: &Path, rotation: Rotation) -> io::Result<RotatingFile> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_options().append(true).open(path)?;
        let size = file.metadata()?.len();
        let f = RotatingFile { path: path.to_path_buf(), rotation, file: Some(file), size };
        f.remove_old_backups();
        Ok(f)
    }

    /// Writes one line, rotating first if it would not fit.
    pub fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let len = line.len() as u64;
        if len > self.rotation.max_bytes {
            let msg = format!("write length {len} exceeds maximum file size {}", self.rotation.max_bytes);
            return Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        }
        if self.file.is_none() || self.size + len > self.rotation.max_bytes {
            self.rotate()?;
        }
        let file = self.file.as_mut().expect("rotate opened a file");
        file.write_all(line)?;
        self.size += len;
        Ok(())
    }

    /// Moves the current file aside under its backup name and starts an empty one.
    fn rotate(&mut self) -> io::Result<()> {
        self.file = None;
        if self.path.exists() {
            std::fs::rename(&self.path, backup_name(&self.path, Utc::now()))?;
        }
        self.file = Some(open_options().write(true).truncate(true).open(&self.path)?);
        self.size = 0;
        self.remove_old_backups();
        Ok(())
    }

    /// Deletes backups past `max_backups` (oldest first) and older than `max_age`; a failure
    /// is logged, never fatal to the write that caused it.
    fn remove_old_backups(&self) {
        if self.rotation.max_backups == 0 && self.rotation.max_age.is_none() {
            return;
        }
        let mut backups = match self.backups() {
            Ok(b) => b,
            Err(e) => return tracing::warn!(path = %self.path.display(), error = %e, "listing audit log backups"),
        };
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let mut remove = Vec::new();
        if self.rotation.max_backups > 0 && backups.len() > self.rotation.max_backups {
            remove.extend(backups.split_off(self.rotation.max_backups));
        }
        if let Some(age) = self.rotation.max_age {
            let cutoff = Utc::now() - chrono::Duration::from_std(age).unwrap_or(chrono::Duration::MAX);
            remove.extend(backups.into_iter().filter(|(t, _)| *t < cutoff));
        }
        for (_, path) in remove {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "removing an old audit log");
            }
        }
    }

    /// The backups beside the file, with the time in their names.
    fn backups(&self) -> io::Result<Vec<(DateTime<Utc>, PathBuf)>> {
        let (stem, ext) = split_ext(file_name(&self.path));
        let prefix = format!("{stem}-");
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let stamp = name.strip_prefix(&prefix).and_then(|n| n.strip_suffix(ext));
            if let Some(t) = stamp.and_then(|s| NaiveDateTime::parse_from_str(s, BACKUP_TIME).ok()) {
                out.push((t.and_utc(), entry.path()));
            }
        }
        Ok(out)
    }
}

fn open_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Audit events name users and carry request bodies: owner-only, as kube creates it.
        o.mode(0o600);
    }
    o
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("audit.log")
}

/// Go's `filepath.Ext` split: the extension is from the last dot, dot included.
fn split_ext(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i) => (&name[..i], &name[i..]),
        None => (name, ""),
    }
}

/// `<dir>/<name>-<time><ext>`, as lumberjack names a backup made at `now`.
pub fn backup_name(path: &Path, now: DateTime<Utc>) -> PathBuf {
    let (stem, ext) = split_ext(file_name(path));
    path.with_file_name(format!("{stem}-{}{ext}", now.format(BACKUP_TIME)))
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn rotation(max_bytes: u64, max_backups: usize) -> Rotation {
        Rotation { max_bytes, max_backups, max_age: None }
    }

    fn backups(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "audit.log")
            .collect();
        names.sort();
        names
    }

    #[test]
    fn backups_are_named_as_lumberjack_names_them() {
        let t = Utc.with_ymd_and_hms(2024, 1, 2, 3, 4, 5).unwrap() + chrono::Duration::milliseconds(67);
        assert_eq!(
            backup_name(Path::new("/var/log/audit.log"), t),
            Path::new("/var/log/audit-2024-01-02T03-04-05.067.log")
        );
        assert_eq!(backup_name(Path::new("/var/log/audit"), t), Path::new("/var/log/audit-2024-01-02T03-04-05.067"));
        assert_eq!(Rotation::from_flags(0, 0, 0), Rotation { max_bytes: 100 << 20, max_backups: 0, max_age: None });
        assert_eq!(Rotation::from_flags(1, 3, 2).max_age, Some(Duration::from_secs(2 * 86400)));
    }

    #[test]
    fn files_rotate_by_size_and_keep_maxbackup_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut f = RotatingFile::open(&path, rotation(100, 2)).unwrap();
        let line = [b'x'; 39].iter().chain(b"\n").copied().collect::<Vec<u8>>();
        for _ in 0..10 {
            f.write_line(&line).unwrap();
            // Backups are named to the millisecond: keep rotations in distinct ones.
            std::thread::sleep(Duration::from_millis(3));
        }
        // Two 40-byte lines fit in 100 bytes: 10 lines make 5 files, of which 2 backups stay.
        assert_eq!(std::fs::read(&path).unwrap().len(), 80);
        let kept = backups(dir.path());
        assert_eq!(kept.len(), 2, "{kept:?}");
        for name in &kept {
            assert!(name.starts_with("audit-") && name.ends_with(".log"), "{name}");
            assert_eq!(std::fs::read(dir.path().join(name)).unwrap().len(), 80);
        }
        let err = f.write_line(&[b'y'; 101]).unwrap_err();
        assert_eq!(err.to_string(), "write length 101 exceeds maximum file size 100");
    }

    #[test]
    fn maxbackup_zero_keeps_every_backup_and_maxage_removes_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let old = backup_name(&path, Utc::now() - chrono::Duration::days(10));
        std::fs::write(&old, "old\n").unwrap();
        std::fs::write(dir.path().join("audit-notatime.log"), "kept: not a backup\n").unwrap();
        let mut f = RotatingFile::open(&path, rotation(10, 0)).unwrap();
        for _ in 0..4 {
            f.write_line(b"12345678\n").unwrap();
            std::thread::sleep(Duration::from_millis(3));
        }
        assert_eq!(backups(dir.path()).len(), 5, "3 rotations, the old backup and the stranger");
        let aged = Rotation { max_age: Some(Duration::from_secs(86400)), ..rotation(10, 0) };
        drop(RotatingFile::open(&path, aged).unwrap());
        assert!(!old.exists(), "older than maxage");
        assert_eq!(backups(dir.path()).len(), 4);
    }

    #[test]
    fn an_existing_file_is_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/audit.log");
        RotatingFile::open(&path, rotation(100, 0)).unwrap().write_line(b"one\n").unwrap();
        RotatingFile::open(&path, rotation(100, 0)).unwrap().write_line(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
