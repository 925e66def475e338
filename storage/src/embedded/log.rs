//! The write-ahead log: framing, records, replay and snapshot rewrite.
//!
//! A log is a sequence of frames `[u32 length][u32 crc32 of payload][payload]` (little endian),
//! each payload one [`Record`] encoded with rmp-serde's named encoding. It always starts with a
//! [`Record::Header`], then the snapshot's [`Record::Restore`]s, then one [`Record::Put`] or
//! [`Record::Delete`] per revision. A frame that does not check out (short, a crc mismatch, or
//! zeros where a length should be) ends the log when nothing good follows it: it is the torn
//! tail of a write that was never acknowledged, and replay truncates it away. When a good record
//! does follow it, the damage is in the middle of what was written (every batch is fsynced
//! before the next is written), so truncating would drop acknowledged writes: replay refuses.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::Revision;
use crate::faults::Faults;

/// The log's file name inside the store's directory.
pub const LOG_FILE: &str = "store.wal";
/// Where a snapshot is written before it is renamed over the log.
const TMP_FILE: &str = "store.wal.tmp";
/// The layout version written in every header.
const FORMAT: u32 = 1;
/// Bytes of framing before each payload.
const FRAME_HEADER: usize = 8;

/// One log record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) enum Record {
    /// First record of every log: the layout version and where the snapshot stands.
    Header {
        /// Layout version ([`FORMAT`]).
        format: u32,
        /// Revisions below this were compacted away.
        compacted: Revision,
        /// The store's revision when the snapshot was taken; the next write gets one more.
        revision: Revision,
    },
    /// A key live at the snapshot's revision.
    Restore {
        /// The key.
        key: String,
        /// When the key was created.
        create_revision: Revision,
        /// When it was last written.
        mod_revision: Revision,
        /// Its value.
        #[serde(with = "bytes_field")]
        value: Bytes,
        /// When it expires (Unix milliseconds), if it was written with a TTL. Absent in logs
        /// written before TTLs, which read as none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires: Option<u64>,
    },
    /// A put at `revision`.
    Put {
        /// The write's revision.
        revision: Revision,
        /// The key.
        key: String,
        /// The key's create revision after the write.
        create_revision: Revision,
        /// The value.
        #[serde(with = "bytes_field")]
        value: Bytes,
        /// When the key expires (Unix milliseconds), for a put with a TTL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires: Option<u64>,
    },
    /// A delete at `revision`.
    Delete {
        /// The write's revision.
        revision: Revision,
        /// The key.
        key: String,
    },
}

impl Record {
    /// A header for a snapshot at `revision` with history before `compacted` gone.
    pub fn header(compacted: Revision, revision: Revision) -> Self {
        Record::Header { format: FORMAT, compacted, revision }
    }
}

/// Serializes `Bytes` as a MessagePack `bin` rather than an array of integers.
mod bytes_field {
    use std::fmt;

    use bytes::Bytes;
    use serde::de::{self, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(value)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct BytesVisitor;
        impl<'de> Visitor<'de> for BytesVisitor {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes::copy_from_slice(v))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes::from(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Bytes::from(out))
            }
        }
        d.deserialize_byte_buf(BytesVisitor)
    }
}

/// Appends one framed record to `buf`. The payload is written in place with
/// `rmp_serde::encode::write_named`, the encoding of `rmp_serde::to_vec_named` without its
/// intermediate vector.
pub(super) fn encode_into(buf: &mut Vec<u8>, record: &Record) {
    let start = buf.len();
    buf.extend_from_slice(&[0; FRAME_HEADER]);
    rmp_serde::encode::write_named(buf, record).expect("a record always encodes into a Vec");
    let payload = &buf[start + FRAME_HEADER..];
    let len = u32::try_from(payload.len()).expect("records are bounded by the value size limit");
    let crc = crc32fast::hash(payload);
    buf[start..start + 4].copy_from_slice(&len.to_le_bytes());
    buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Why replay stopped before the end of the file.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum TailDamage {
    /// The file ends inside a frame.
    Short,
    /// A frame's checksum does not match its payload.
    Checksum,
    /// A frame's length is zero.
    Zeros,
}

/// What replay found.
#[derive(Debug)]
pub(super) struct ReplayEnd {
    /// Length of the valid prefix: the offset just after the last good record.
    pub good_len: u64,
    /// The file's length.
    pub file_len: u64,
    /// Why the valid prefix is shorter than the file, if it is.
    pub damage: Option<TailDamage>,
}

/// Reads every good record of the log at `path` into `apply`, in order. Stops at the first frame
/// that does not check out. A record that checks out but does not decode, or that `apply`
/// rejects, is an error: that is not a torn write, and truncating it could drop acknowledged
/// data. So is a frame that does not check out with a good record somewhere after it.
pub(super) fn replay(path: &Path, apply: impl FnMut(Record) -> Result<(), String>) -> io::Result<ReplayEnd> {
    let end = replay_frames(path, apply)?;
    if let Some(damage) = &end.damage {
        let mut rest = Vec::new();
        let mut file = File::open(path)?;
        io::Seek::seek(&mut file, io::SeekFrom::Start(end.good_len + 1))?;
        file.read_to_end(&mut rest)?;
        if let Some(at) = first_good_frame(&rest) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the frame at offset {} does not check out ({:?}) but a good record follows it at offset {}: \
                     the log is damaged in the middle, not torn at its end, and truncating it would drop \
                     acknowledged writes (to start from the records before the damage, keep a copy of the \
                     log and cut it to {} bytes)",
                    end.good_len,
                    damage,
                    end.good_len + 1 + at as u64,
                    end.good_len
                ),
            ));
        }
    }
    Ok(end)
}

/// Where in `bytes` the first frame starts that checks out and holds a record, if any: a
/// search at every offset, since damage may have changed the lengths that chain frames.
fn first_good_frame(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len().saturating_sub(FRAME_HEADER)).find(|&at| {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes"));
        let body = at + FRAME_HEADER;
        len != 0
            && bytes.len() - body >= len
            && crc32fast::hash(&bytes[body..body + len]) == crc
            && rmp_serde::from_slice::<Record>(&bytes[body..body + len]).is_ok()
    })
}

/// [`replay`]'s first pass: the good records up to the first frame that does not check out.
fn replay_frames(path: &Path, mut apply: impl FnMut(Record) -> Result<(), String>) -> io::Result<ReplayEnd> {
    let file = File::open(path)?;
    let file_len = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut offset = 0u64;
    let mut payload = Vec::new();
    let damage = loop {
        if offset == file_len {
            break None;
        }
        let mut header = [0u8; FRAME_HEADER];
        if file_len - offset < FRAME_HEADER as u64 {
            break Some(TailDamage::Short);
        }
        reader.read_exact(&mut header)?;
        let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as u64;
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        if len == 0 {
            // Every record has a payload: zeros here are blocks of a torn append that the file
            // grew over but that never reached the disk.
            break Some(TailDamage::Zeros);
        }
        if file_len - offset - (FRAME_HEADER as u64) < len {
            break Some(TailDamage::Short);
        }
        payload.resize(len as usize, 0);
        reader.read_exact(&mut payload)?;
        if crc32fast::hash(&payload) != crc {
            break Some(TailDamage::Checksum);
        }
        let record: Record = rmp_serde::from_slice(&payload).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("record at offset {offset} does not decode: {e}"))
        })?;
        apply(record)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("record at offset {offset}: {e}")))?;
        offset += FRAME_HEADER as u64 + len;
    };
    Ok(ReplayEnd { good_len: offset, file_len, damage })
}

/// The log file being appended to.
pub(super) struct LogWriter {
    /// The open log, positioned at its end.
    file: File,
    /// Its path, for errors.
    path: PathBuf,
    /// Bytes durably in it.
    len: u64,
}

impl LogWriter {
    /// Opens the log at `path` for appending after its first `len` bytes (the valid prefix).
    pub fn open(path: &Path, len: u64) -> io::Result<Self> {
        let file = OpenOptions::new().append(true).open(path)?;
        if file.metadata()?.len() != len {
            file.set_len(len)?;
            file.sync_all()?;
        }
        Ok(LogWriter { file, path: path.to_path_buf(), len })
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes in the log.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Writes `frames` and waits until they are on disk: one `sync_data` for the whole batch.
    /// On failure, tries to cut the file back to its last durable length so that no partial
    /// batch stays behind it; the caller must still stop writing (after a failed fsync the page
    /// cache no longer says what is on disk).
    /// `faults`, when given, may delay or fail the sync (test failpoints).
    pub fn append(&mut self, frames: &[u8], faults: Option<&Faults>) -> io::Result<()> {
        let result = self
            .file
            .write_all(frames)
            .and_then(|()| faults.map_or(Ok(()), Faults::before_fsync))
            .and_then(|()| self.file.sync_data());
        match result {
            Ok(()) => {
                self.len += frames.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.file.set_len(self.len);
                Err(e)
            }
        }
    }
}

/// Writes a new log (a snapshot) into `dir` atomically: records go to a temp file, which is
/// fsynced and renamed over the log, then the directory is fsynced so the rename is durable.
/// Returns the new log's length. Before the rename, a crash leaves the old log in place; after
/// it, the new one.
pub(super) fn write_snapshot(dir: &Path, records: impl Iterator<Item = Record>) -> io::Result<u64> {
    let tmp = dir.join(TMP_FILE);
    let result = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
        let mut buf = Vec::with_capacity(64 << 10);
        let mut len = 0u64;
        for record in records {
            encode_into(&mut buf, &record);
            if buf.len() >= 32 << 10 {
                out.write_all(&buf)?;
                len += buf.len() as u64;
                buf.clear();
            }
        }
        out.write_all(&buf)?;
        len += buf.len() as u64;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok::<_, io::Error>(len)
    })();
    let len = match result {
        Ok(len) => len,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
    };
    fs::rename(&tmp, dir.join(LOG_FILE))?;
    sync_dir(dir)?;
    Ok(len)
}

/// Makes the directory's entries (a created or renamed file) durable.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Removes a temp file left by a compaction that crashed before its rename.
pub(super) fn remove_stale_tmp(dir: &Path) -> io::Result<()> {
    match fs::remove_file(dir.join(TMP_FILE)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_round_trips() {
        let records = vec![
            Record::header(3, 7),
            Record::Restore {
                key: "/a".into(),
                create_revision: 2,
                mod_revision: 3,
                value: Bytes::from_static(b"x\0y"),
                expires: Some(1_700_000_000_123),
            },
            // Without an expiry the field is left out, as in logs written before TTLs.
            Record::Put { revision: 8, key: "/b".into(), create_revision: 8, value: Bytes::new(), expires: None },
            Record::Put { revision: 9, key: "/c".into(), create_revision: 9, value: Bytes::new(), expires: Some(5) },
            Record::Delete { revision: 10, key: "/a".into() },
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let mut buf = Vec::new();
        for r in &records {
            encode_into(&mut buf, r);
        }
        fs::write(&path, &buf).unwrap();
        let mut back = Vec::new();
        let end = replay(&path, |r| {
            back.push(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(back, records);
        assert_eq!(end.good_len, buf.len() as u64);
        assert_eq!(end.damage, None);
    }

    #[test]
    fn values_are_stored_as_bin_not_as_integer_arrays() {
        let mut buf = Vec::new();
        encode_into(
            &mut buf,
            &Record::Put {
                revision: 2,
                key: "/k".into(),
                create_revision: 2,
                value: Bytes::from(vec![0xff; 1000]),
                expires: None,
            },
        );
        assert!(buf.len() < 1100, "1000 bytes of 0xff took {} bytes", buf.len());
    }

    #[test]
    fn a_flipped_bit_ends_the_log_at_the_damaged_record() {
        let mut buf = Vec::new();
        encode_into(&mut buf, &Record::header(0, 1));
        let first = buf.len();
        encode_into(&mut buf, &Record::Delete { revision: 2, key: "/a".into() });
        buf[first + 10] ^= 0x04;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        fs::write(&path, &buf).unwrap();
        let end = replay(&path, |_| Ok(())).unwrap();
        assert_eq!(end.good_len, first as u64);
        assert_eq!(end.damage, Some(TailDamage::Checksum));
    }

    /// A log of a header and three deletes, with where each frame ends.
    fn three_writes() -> (Vec<u8>, Vec<usize>) {
        let mut buf = Vec::new();
        encode_into(&mut buf, &Record::header(0, 1));
        let mut ends = vec![buf.len()];
        for revision in 2..5 {
            encode_into(&mut buf, &Record::Delete { revision, key: format!("/k{revision}") });
            ends.push(buf.len());
        }
        (buf, ends)
    }

    fn replay_bytes(bytes: &[u8]) -> io::Result<ReplayEnd> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        fs::write(&path, bytes).unwrap();
        replay(&path, |_| Ok(()))
    }

    #[test]
    fn damage_with_a_good_record_after_it_is_refused_not_truncated() {
        let (buf, ends) = three_writes();
        // In a payload, and in a length, of a record that is not the last.
        for (at, next_good) in [(ends[1] + 12, ends[2]), (ends[0] + 1, ends[1])] {
            let mut damaged = buf.clone();
            damaged[at] ^= 0x10;
            let e = replay_bytes(&damaged).expect_err("mid-log damage refuses");
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            assert!(e.to_string().contains("damaged in the middle"), "{e}");
            assert!(e.to_string().contains(&format!("good record follows it at offset {next_good}")), "{e}");
        }
        // The last record damaged: a torn tail.
        let mut torn = buf.clone();
        torn[ends[2] + 12] ^= 0x10;
        let end = replay_bytes(&torn).unwrap();
        assert_eq!((end.good_len, end.damage), (ends[2] as u64, Some(TailDamage::Checksum)));
    }

    #[test]
    fn zeros_after_the_last_record_are_a_torn_tail() {
        let (mut buf, ends) = three_writes();
        buf.extend_from_slice(&[0u8; 4096]);
        let end = replay_bytes(&buf).unwrap();
        assert_eq!((end.good_len, end.damage), (ends[3] as u64, Some(TailDamage::Zeros)));
    }
}
