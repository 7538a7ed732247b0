//! Checkpoint records under a user's key: authenticated, and encrypted when asked.
//!
//! Every record ends with a CRC-32 ([`record::checksum`]): it catches a torn write, a
//! damaged disk or an edit by mistake, but anyone who can write the store can compute
//! it for a record of their own. With a [`RecordKey`] a saver writes, in its place, a
//! code only the key's holder can make, and reads back only records that carry it.
//!
//! # Authenticated records (a key)
//!
//! Format 4 or 5 ([`record`]) with the checksum replaced by an HMAC-SHA256 of the same
//! bytes (the record's id and its parent's, each with its length, and the text before
//! the last comma), as a base64 string:
//!
//! ```text
//! [tag, step, source, created_at, writes, next, (metadata,) (snapshot,) "mac"]
//! ```
//!
//! The tag and every field stay where formats 4 and 5 have them, so the stores' SQL (the
//! snapshot prefix, `created_at`, `next`) reads them as before. A record moved to
//! another position (another id or parent) fails its check, as a changed byte does.
//!
//! # Encrypted records (a key, `encrypt`)
//!
//! ```text
//! [6 | 7, null, null, created_at, null, [] | [0], "sealed"]
//! ```
//!
//! - `6`, or `7` ([`SNAPSHOT_PREFIX_SEALED`]) when the record holds a snapshot: a store
//!   finds a snapshot by the first bytes without the key.
//! - `created_at` (index 3) and whether the record has next tasks (index 5, `[0]` when
//!   it has, `[]` when not): what the stores' SQL reads to find stalled threads. Those
//!   two facts are all a reader without the key learns (with the record's length).
//! - `sealed`: base64 of `nonce ‖ AES-256-GCM(format-4 or -5 text)`. The associated data is
//!   the ids (as the checksum frames them) and the text before the string, so the
//!   clear fields are authenticated with the rest.
//! - The nonce is the first 12 bytes of an HMAC-SHA256 of the associated data and the
//!   plaintext (a synthetic nonce): the same record always gives the same text (how a
//!   store tells a retried `put` from a conflicting one, as unkeyed records do), and
//!   two different records never share a nonce but by a 96-bit collision.
//!
//! # Pending writes
//!
//! A pending write's value (the stores' `value` column, JSON text without a key) is
//! stored as `!a{code}{json}` (the code an HMAC-SHA256 of where the write belongs,
//! its checkpoint, task, index, node and channel, then the JSON; base64, 43
//! characters) or, encrypted, `!e{base64(nonce ‖ AES-256-GCM(json))}` with where it
//! belongs as the associated data. No JSON text starts with `!`, so a reader tells
//! the three apart by the first bytes; the stores' SQL reads no value. A
//! `MemorySaver` keeps pending writes as values, never as text.
//!
//! # Keys
//!
//! A user's key is 32 bytes; the MAC, the cipher and the nonce, of records and of
//! pending writes, each use their own key derived from it (an HMAC-SHA256 of a label
//! under the user's key), so no two uses share one. A keyed saver reads every keyed record whether or not it encrypts its
//! own writes (`encrypt` chooses how it writes). Records without a key (formats 1 to 5
//! with a checksum or none) are refused unless the key says `accept_unkeyed`: an
//! attacker who can write the store could otherwise write such a record.

use std::fmt;
use std::sync::Arc;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD_NO_PAD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::record;
use super::CheckpointRecord;

type HmacSha256 = Hmac<Sha256>;

/// The environment variable a Python saver reads its key from when it is given none
/// (LangGraph's `EncryptedSerializer` reads `LANGGRAPH_AES_KEY` the same way).
pub const KEY_ENV: &str = "IRONLOOP_CHECKPOINT_KEY";

/// The length of a key, in bytes.
pub const KEY_LEN: usize = 32;

/// The first element of an encrypted record without a snapshot.
pub const TAG_SEALED: u64 = 6;
/// The first element of an encrypted record holding a snapshot.
pub const TAG_SEALED_SNAPSHOT: u64 = 7;
/// How the text of an encrypted record holding a snapshot starts.
pub const SNAPSHOT_PREFIX_SEALED: &str = "[7,";

/// The length of the synthetic nonce.
const NONCE_LEN: usize = 12;
/// The length of AES-GCM's tag.
const TAG_LEN: usize = 16;

/// A key that can be made from what a user gave is not one.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "a checkpoint key must be {KEY_LEN} bytes, or a str of {KEY_LEN} bytes in UTF-8 or \
         {} hex digits; {what} is {got}. Make one with \
         `python -c \"import secrets; print(secrets.token_hex(32))\"`",
        2 * KEY_LEN
    )]
    Length { what: String, got: String },
}

/// The key a saver authenticates (and optionally encrypts) its records and pending
/// writes with. Holds the keys derived from the user's, never the user's key itself.
#[derive(Clone)]
pub struct RecordKey {
    records: Keys,
    writes: Keys,
    encrypt: bool,
    accept_unkeyed: bool,
}

/// The keys of one use (records, or pending writes), each derived from the user's.
#[derive(Clone)]
struct Keys {
    mac: HmacSha256,
    nonce: HmacSha256,
    cipher: Aes256Gcm,
}

impl Keys {
    /// The keys of `purpose`: an HMAC-SHA256 of a label under the user's key each.
    fn derive(key: &[u8], purpose: &str) -> Keys {
        let derive = |what: &str| {
            let mut m = <HmacSha256 as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
            m.update(format!("ironloop checkpoint {purpose}: {what}").as_bytes());
            m.finalize().into_bytes()
        };
        let hmac = |k: &[u8]| <HmacSha256 as KeyInit>::new_from_slice(k).expect("any key");
        Keys {
            mac: hmac(&derive("mac")),
            nonce: hmac(&derive("nonce")),
            cipher: Aes256Gcm::new_from_slice(&derive("aes-256-gcm"))
                .expect("an AES-256 key is 32 bytes"),
        }
    }

    /// The HMAC of `framed` (what says where the text belongs) and `body`.
    fn mac(&self, framed: &[u8], body: &[u8]) -> HmacSha256 {
        let mut m = self.mac.clone();
        m.update(framed);
        m.update(body);
        m
    }

    /// `nonce ‖ AES-256-GCM(plain)` with `aad`, the nonce synthetic (see the module docs).
    fn seal(&self, aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let mut m = self.nonce.clone();
        m.update(&(aad.len() as u64).to_le_bytes());
        m.update(aad);
        m.update(plain);
        let full = m.finalize().into_bytes();
        let nonce = Nonce::try_from(&full[..NONCE_LEN]).expect("12 bytes");
        let sealed = self
            .cipher
            .encrypt(&nonce, Payload { msg: plain, aad })
            .expect("AES-GCM encrypts anything under 64 GiB");
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// The plaintext [`seal`](Self::seal) sealed, if the key and `aad` are its.
    fn open(&self, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN + TAG_LEN {
            return None;
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_from(nonce).ok()?;
        self.cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: ciphertext,
                    aad,
                },
            )
            .ok()
    }
}

impl fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordKey")
            .field("encrypt", &self.encrypt)
            .field("accept_unkeyed", &self.accept_unkeyed)
            .finish_non_exhaustive()
    }
}

impl RecordKey {
    /// A key of exactly [`KEY_LEN`] bytes: records are authenticated, not encrypted,
    /// and records without a key are refused (see [`encrypt`](Self::encrypt) and
    /// [`accept_unkeyed`](Self::accept_unkeyed)).
    pub fn new(key: &[u8]) -> Result<Self, KeyError> {
        if key.len() != KEY_LEN {
            return Err(KeyError::Length {
                what: "the key given".into(),
                got: format!("{} bytes", key.len()),
            });
        }
        Ok(RecordKey {
            records: Keys::derive(key, "record"),
            writes: Keys::derive(key, "pending write"),
            encrypt: false,
            accept_unkeyed: false,
        })
    }

    /// A key given as text (a setting, an environment variable): [`KEY_LEN`] bytes in
    /// UTF-8, or twice as many hex digits (what `secrets.token_hex(32)` makes).
    pub fn from_text(key: &str) -> Result<Self, KeyError> {
        if key.len() == 2 * KEY_LEN && key.bytes().all(|b| b.is_ascii_hexdigit()) {
            let bytes: Vec<u8> = (0..KEY_LEN)
                .map(|i| u8::from_str_radix(&key[2 * i..2 * i + 2], 16).expect("hex digits"))
                .collect();
            return Self::new(&bytes);
        }
        Self::new(key.as_bytes()).map_err(|_| KeyError::Length {
            what: "the str given".into(),
            got: format!("{} bytes in UTF-8", key.len()),
        })
    }

    /// Whether records are written encrypted (they are always authenticated).
    pub fn encrypt(mut self, on: bool) -> Self {
        self.encrypt = on;
        self
    }

    /// Whether records written without a key (before the key was set) are read, checked
    /// by their checksum only. Off by default: anyone who can write the store can
    /// write such a record.
    pub fn accept_unkeyed(mut self, on: bool) -> Self {
        self.accept_unkeyed = on;
        self
    }

    pub fn encrypts(&self) -> bool {
        self.encrypt
    }

    /// The HMAC of a record's ids and `body`.
    fn mac(&self, id: &str, parent_id: Option<&str>, body: &str) -> HmacSha256 {
        let mut framed = Vec::with_capacity(id.len() + parent_id.map_or(0, str::len) + 17);
        record::frame_ids(id, parent_id, |b| framed.extend_from_slice(b));
        self.records.mac(&framed, body.as_bytes())
    }
}

/// Why a stored record could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The text is not a record (see [`record::decode`]).
    Unreadable(String),
    /// The record fails the key's check, or is of the wrong kind for the saver's key
    /// (the message says which and what to do).
    Key(String),
}

/// How a saver writes and reads its records: with a checksum, or under a key.
#[derive(Clone, Default, Debug)]
pub struct Records {
    key: Option<Arc<RecordKey>>,
}

impl Records {
    pub fn new(key: Option<RecordKey>) -> Self {
        Records {
            key: key.map(Arc::new),
        }
    }

    pub fn is_keyed(&self) -> bool {
        self.key.is_some()
    }

    /// [`Records::encode`] with a snapshot's pieces kept apart
    /// ([`record::encode_parted`]) when the record is stored as it is; under a key the
    /// text is sealed or authenticated whole.
    pub fn encode_parted(&self, r: &CheckpointRecord) -> serde_json::Result<record::Parted> {
        match &self.key {
            None => record::encode_parted(r),
            Some(_) => self.encode(r).map(record::Parted::whole),
        }
    }

    /// The stored text of `record`: format 4 or 5 without a key, else authenticated or
    /// encrypted (see the module docs). Deterministic, as [`record::encode`].
    pub fn encode(&self, r: &CheckpointRecord) -> serde_json::Result<String> {
        let Some(key) = &self.key else {
            return record::encode(r);
        };
        if key.encrypt {
            return Ok(seal(key, r, &record::encode(r)?));
        }
        let mut text = record::encode_body(r)?;
        let mac = key.mac(&r.id, r.parent_id.as_deref(), &text).finalize();
        text.push_str(",\"");
        B64.encode_string(mac.into_bytes(), &mut text);
        text.push_str("\"]");
        Ok(text)
    }

    /// The record `id` (child of `parent_id`) from its stored text, if it passes the
    /// check the saver's key (or its absence) asks for.
    pub fn decode(
        &self,
        text: &str,
        id: &str,
        parent_id: Option<&str>,
    ) -> Result<CheckpointRecord, ReadError> {
        let kind = Kind::of(text);
        let Some(key) = &self.key else {
            return match kind {
                Kind::Unkeyed => record::decode(text, id, parent_id).map_err(ReadError::Unreadable),
                Kind::Authenticated => Err(ReadError::Key(keyed_without_key("authenticated"))),
                Kind::Sealed => Err(ReadError::Key(keyed_without_key("encrypted"))),
            };
        };
        match kind {
            Kind::Unkeyed if key.accept_unkeyed => {
                record::decode(text, id, parent_id).map_err(ReadError::Unreadable)
            }
            Kind::Unkeyed => Err(ReadError::Key(unkeyed())),
            Kind::Authenticated => {
                let (body, tail) = text.rsplit_once(',').unwrap_or_default();
                let code = tail
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix("\"]"))
                    .and_then(|c| B64.decode(c).ok())
                    .unwrap_or_default();
                key.mac(id, parent_id, body)
                    .verify_slice(&code)
                    .map_err(|_| ReadError::Key(mismatch("authentication code")))?;
                record::decode_authenticated(text, id, parent_id).map_err(ReadError::Unreadable)
            }
            Kind::Sealed => {
                let plain = open(key, text, id, parent_id)?;
                record::decode(&plain, id, parent_id).map_err(ReadError::Unreadable)
            }
        }
    }

    /// Whether two stored texts of record `id` are the same record (see
    /// [`record::same`]), read with this saver's key.
    pub fn same(&self, id: &str, a: (&str, Option<&str>), b: (&str, Option<&str>)) -> bool {
        if a == b {
            return true;
        }
        a.1 == b.1
            && matches!(
                (self.decode(a.0, id, a.1), self.decode(b.0, id, b.1)),
                (Ok(x), Ok(y)) if x == y
            )
    }
}

/// Where a pending write belongs: what its code covers beside its value, so that a
/// value moved to another write fails its check.
#[derive(Debug, Clone, Copy)]
pub struct WritePlace<'a> {
    pub checkpoint_id: &'a str,
    pub task_id: &'a str,
    pub idx: i64,
    pub node: &'a str,
    pub channel: &'a str,
}

impl WritePlace<'_> {
    fn framed(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        for part in [self.checkpoint_id, self.task_id, self.node, self.channel] {
            out.extend_from_slice(&(part.len() as u64).to_le_bytes());
            out.extend_from_slice(part.as_bytes());
        }
        out.extend_from_slice(&self.idx.to_le_bytes());
        out
    }
}

/// How an authenticated pending write's text starts (no JSON text starts with `!`),
/// followed by the code in base64 ([`MAC_B64_LEN`] characters) and the value's JSON.
const WRITE_AUTHENTICATED: &str = "!a";
/// How an encrypted pending write's text starts, followed by the sealed JSON in base64.
const WRITE_SEALED: &str = "!e";
/// The length of an HMAC-SHA256 in base64 without padding.
const MAC_B64_LEN: usize = 43;

impl Records {
    /// The stored text of a pending write's `value` (at `place`): its JSON without a
    /// key, else `!a{code}{json}` or, encrypted, `!e{sealed}`.
    pub fn encode_write(
        &self,
        place: &WritePlace<'_>,
        value: &serde_json::Value,
    ) -> serde_json::Result<String> {
        let json = serde_json::to_string(value)?;
        let Some(key) = &self.key else {
            return Ok(json);
        };
        let framed = place.framed();
        if key.encrypt {
            let mut text = String::from(WRITE_SEALED);
            B64.encode_string(key.writes.seal(&framed, json.as_bytes()), &mut text);
            return Ok(text);
        }
        let code = key.writes.mac(&framed, json.as_bytes()).finalize();
        let mut text = String::with_capacity(2 + MAC_B64_LEN + json.len());
        text.push_str(WRITE_AUTHENTICATED);
        B64.encode_string(code.into_bytes(), &mut text);
        text.push_str(&json);
        Ok(text)
    }

    /// A pending write's value (at `place`) from its stored text, if it passes the
    /// check the saver's key (or its absence) asks for.
    pub fn decode_write(
        &self,
        place: &WritePlace<'_>,
        text: &str,
    ) -> Result<serde_json::Value, ReadError> {
        let prefix = text.get(..2);
        let json = match (&self.key, prefix) {
            (None, Some(WRITE_AUTHENTICATED)) => {
                return Err(ReadError::Key(keyed_without_key("authenticated")))
            }
            (None, Some(WRITE_SEALED)) => {
                return Err(ReadError::Key(keyed_without_key("encrypted")))
            }
            (Some(key), Some(WRITE_AUTHENTICATED)) => {
                let (code, json) = text[2..]
                    .split_at_checked(MAC_B64_LEN)
                    .ok_or_else(|| ReadError::Key(mismatch("authentication code")))?;
                let code = B64
                    .decode(code)
                    .map_err(|_| ReadError::Key(mismatch("authentication code")))?;
                key.writes
                    .mac(&place.framed(), json.as_bytes())
                    .verify_slice(&code)
                    .map_err(|_| ReadError::Key(mismatch("authentication code")))?;
                std::borrow::Cow::Borrowed(json)
            }
            (Some(key), Some(WRITE_SEALED)) => {
                let sealed = B64
                    .decode(&text[2..])
                    .map_err(|_| ReadError::Key(mismatch("encrypted text (not base64)")))?;
                let plain = key
                    .writes
                    .open(&place.framed(), &sealed)
                    .ok_or_else(|| ReadError::Key(mismatch("authentication tag")))?;
                std::borrow::Cow::Owned(
                    String::from_utf8(plain).map_err(|e| ReadError::Unreadable(e.to_string()))?,
                )
            }
            (Some(key), _) if !key.accept_unkeyed => return Err(ReadError::Key(unkeyed())),
            _ => std::borrow::Cow::Borrowed(text),
        };
        serde_json::from_str(&json).map_err(|e| ReadError::Unreadable(e.to_string()))
    }
}

/// What to do about a record that fails its check.
const RESTORE: &str = "restore the store from a copy, or go back to an earlier checkpoint \
                       of the thread";

/// A keyed record or write read by a saver without a key.
fn keyed_without_key(how: &str) -> String {
    format!(
        "was written {how} with a key, and this saver has none: open it with the key it \
         was written with (key=..., or the environment variable {KEY_ENV})"
    )
}

/// An unkeyed record or write read by a saver with a key that does not accept them.
fn unkeyed() -> String {
    format!(
        "carries no authentication code (it was written without a key), and this saver \
         reads only what is authenticated with its key. If the store holds checkpoints \
         written before the key was set, open the saver with accept_unkeyed=True to read \
         them (checked by their checksum only); if it should not, someone wrote this \
         behind the saver's back: {RESTORE}"
    )
}

fn mismatch(what: &str) -> String {
    format!(
        "fails its check: its {what} does not match the saver's key. Either it was \
         written with another key (check key=... or {KEY_ENV}), or it was changed after \
         it was written (tampered with, moved, or damaged); if the key is right, {RESTORE}"
    )
}

/// What kind of text a stored record is, from its first and last bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Formats 1 to 5: a checksum or none.
    Unkeyed,
    /// Format 4 or 5 with an authentication code for a checksum.
    Authenticated,
    /// Encrypted.
    Sealed,
}

impl Kind {
    fn of(text: &str) -> Kind {
        let tag = text.get(..3);
        if matches!(tag, Some("[6," | "[7,")) {
            Kind::Sealed
        } else if matches!(tag, Some("[4," | "[5," | "[8,")) && text.ends_with("\"]") {
            // A format-4 or -5 checksum is digits: only a code is a string.
            Kind::Authenticated
        } else {
            Kind::Unkeyed
        }
    }
}

/// The encrypted text of `r`, whose format-4 or -5 text is `plain`.
fn seal(key: &RecordKey, r: &CheckpointRecord, plain: &str) -> String {
    let tag = if r.snapshot.is_some() {
        TAG_SEALED_SNAPSHOT
    } else {
        TAG_SEALED
    };
    let created_at = serde_json::to_string(&r.created_at).unwrap_or_else(|_| "0".into());
    let next = if r.next.is_empty() { "[]" } else { "[0]" };
    let mut text = format!("[{tag},null,null,{created_at},null,{next},\"");
    let clear = &text[..text.len() - 1];
    let aad = associated_data(&r.id, r.parent_id.as_deref(), clear);
    let sealed = key.records.seal(&aad, plain.as_bytes());
    B64.encode_string(&sealed, &mut text);
    text.push_str("\"]");
    text
}

/// The format-4 or -5 text inside the encrypted record `text`.
fn open(
    key: &RecordKey,
    text: &str,
    id: &str,
    parent_id: Option<&str>,
) -> Result<String, ReadError> {
    let (clear, sealed) = text
        .rsplit_once(",\"")
        .and_then(|(c, s)| Some((c, s.strip_suffix("\"]")?)))
        .ok_or_else(|| ReadError::Key(mismatch("encrypted text (cut short)")))?;
    let clear = &text[..clear.len() + 1];
    let sealed = B64
        .decode(sealed)
        .map_err(|_| ReadError::Key(mismatch("encrypted text (not base64)")))?;
    let aad = associated_data(id, parent_id, clear);
    let plain = key
        .records
        .open(&aad, &sealed)
        .ok_or_else(|| ReadError::Key(mismatch("authentication tag")))?;
    String::from_utf8(plain).map_err(|e| ReadError::Unreadable(e.to_string()))
}

/// What AES-GCM authenticates beside the ciphertext: the ids and the clear fields.
fn associated_data(id: &str, parent_id: Option<&str>, clear: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(id.len() + parent_id.map_or(0, str::len) + clear.len() + 17);
    record::frame_ids(id, parent_id, |b| aad.extend_from_slice(b));
    aad.extend_from_slice(clear.as_bytes());
    aad
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{TaskRecord, Write};
    use serde_json::json;

    fn record(snapshot: bool) -> CheckpointRecord {
        CheckpointRecord {
            snapshot: snapshot
                .then(|| json!({"v": 1, "values": {"secret": "s3cr3t-value"}}).into()),
            id: "c1".into(),
            parent_id: Some("p".into()),
            step: 3,
            source: "loop".into(),
            writes: vec![Write {
                node: "agent".into(),
                channel: "messages".into(),
                value: json!([{"type": "ai", "content": "the launch code is 0000"}]).into(),
                new_task: false,
            }],
            next: vec![TaskRecord {
                id: "c1:0:tools".into(),
                node: "tools".into(),
                arg: None,
                timeout: None,
            }],
            created_at: 1_795_000_000.5,
            metadata: json!({"source": "loop", "step": 3, "parents": {}}),
        }
    }

    fn keyed(byte: u8, encrypt: bool) -> Records {
        Records::new(Some(
            RecordKey::new(&[byte; KEY_LEN]).unwrap().encrypt(encrypt),
        ))
    }

    #[test]
    fn keys_are_32_bytes_or_64_hex_digits() {
        assert!(RecordKey::new(&[0; 32]).is_ok());
        for len in [0, 16, 31, 33, 64] {
            let e = RecordKey::new(&vec![0; len]).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{len} bytes")) && e.contains("token_hex"),
                "{e}"
            );
        }
        assert!(RecordKey::from_text(&"k".repeat(32)).is_ok());
        let hex = "0123456789abcdefABCDEF0123456789".repeat(2);
        assert!(RecordKey::from_text(&hex).is_ok());
        // 64 hex digits are the 32 bytes they spell, not 64 bytes of text.
        let text = Records::new(Some(RecordKey::from_text(&"ab".repeat(32)).unwrap()));
        let bytes = Records::new(Some(RecordKey::new(&[0xab; 32]).unwrap()));
        let t = text.encode(&record(false)).unwrap();
        assert!(bytes.decode(&t, "c1", Some("p")).is_ok());
        let e = RecordKey::from_text("short").unwrap_err().to_string();
        assert!(e.contains("5 bytes in UTF-8"), "{e}");
        // Its Debug never shows the key.
        let d = format!("{:?}", RecordKey::new(&[0x41; 32]).unwrap());
        assert!(!d.contains("65") && !d.contains("AAAA"), "{d}");
    }

    #[test]
    fn keyed_records_round_trip_deterministically() {
        for encrypt in [false, true] {
            for snapshot in [false, true] {
                let (c, r) = (keyed(1, encrypt), record(snapshot));
                let text = c.encode(&r).unwrap();
                assert_eq!(text, c.encode(&r).unwrap(), "not deterministic");
                assert_eq!(c.decode(&text, "c1", Some("p")).unwrap(), r);
                assert_eq!(record::has_snapshot(&text), snapshot, "{text}");
                assert!(c.same("c1", (&text, Some("p")), (&text, Some("p"))));
                let plain = record::encode(&r).unwrap();
                if encrypt {
                    assert!(
                        !text.contains("launch") && !text.contains("s3cr3t"),
                        "{text}"
                    );
                    // The clear fields sit where the stores' SQL reads them.
                    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(v[3], json!(1_795_000_000.5));
                    assert_eq!(v[5], json!([0]));
                    // An unkeyed copy of the same record is the same record.
                    let lenient = Records::new(Some(
                        RecordKey::new(&[1; KEY_LEN]).unwrap().accept_unkeyed(true),
                    ));
                    assert!(lenient.same("c1", (&text, Some("p")), (&plain, Some("p"))));
                } else {
                    // Format 4's text, the checksum replaced by the code.
                    let body = plain.rsplit_once(',').unwrap().0;
                    assert!(text.starts_with(&format!("{body},\"")), "{text}");
                }
            }
        }
    }

    #[test]
    fn a_keyed_record_reads_only_with_its_key_and_its_position() {
        for encrypt in [false, true] {
            let text = keyed(1, encrypt).encode(&record(false)).unwrap();
            for (c, id, parent) in [
                (keyed(2, encrypt), "c1", Some("p")),
                (keyed(2, !encrypt), "c1", Some("p")),
                (keyed(1, encrypt), "c2", Some("p")),
                (keyed(1, encrypt), "c1", Some("q")),
                (keyed(1, encrypt), "c1", None),
            ] {
                match c.decode(&text, id, parent) {
                    Err(ReadError::Key(m)) => assert!(m.contains("another key"), "{m}"),
                    other => panic!("{other:?}"),
                }
            }
            // A keyed saver reads either kind, whichever it writes.
            assert!(keyed(1, !encrypt).decode(&text, "c1", Some("p")).is_ok());
            match Records::default().decode(&text, "c1", Some("p")) {
                Err(ReadError::Key(m)) => assert!(m.contains("has none"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn pending_writes_under_a_key_read_only_at_their_place() {
        let place = WritePlace {
            checkpoint_id: "c1",
            task_id: "t1",
            idx: 0,
            node: "agent",
            channel: "messages",
        };
        let value = json!({"content": "the launch code is 0000"});
        let plain = Records::default().encode_write(&place, &value).unwrap();
        for encrypt in [false, true] {
            let c = keyed(1, encrypt);
            let text = c.encode_write(&place, &value).unwrap();
            assert_eq!(text, c.encode_write(&place, &value).unwrap());
            assert_eq!(text.contains("launch"), !encrypt, "{text}");
            assert_eq!(c.decode_write(&place, &text).unwrap(), value);
            assert!(keyed(1, !encrypt).decode_write(&place, &text).is_ok());
            // Another place (checkpoint, task, index, node or channel), another key, a
            // changed byte: refused.
            for other in [
                WritePlace {
                    checkpoint_id: "c2",
                    ..place
                },
                WritePlace {
                    task_id: "t2",
                    ..place
                },
                WritePlace { idx: 1, ..place },
                WritePlace {
                    node: "tools",
                    ..place
                },
                WritePlace {
                    channel: "other",
                    ..place
                },
            ] {
                assert!(matches!(
                    c.decode_write(&other, &text),
                    Err(ReadError::Key(m)) if m.contains("another key")
                ));
            }
            assert!(matches!(
                keyed(2, encrypt).decode_write(&place, &text),
                Err(ReadError::Key(_))
            ));
            for i in 0..text.len() {
                let mut b = text.clone().into_bytes();
                b[i] = if b[i] == b'1' { b'2' } else { b'1' };
                let changed = String::from_utf8(b).unwrap();
                assert!(c.decode_write(&place, &changed).is_err(), "{changed}");
            }
            // Without the key, or an unkeyed write with it: refused unless accepted.
            assert!(matches!(
                Records::default().decode_write(&place, &text),
                Err(ReadError::Key(m)) if m.contains("has none")
            ));
            assert!(matches!(
                c.decode_write(&place, &plain),
                Err(ReadError::Key(m)) if m.contains("accept_unkeyed")
            ));
        }
        let lenient = Records::new(Some(
            RecordKey::new(&[1; KEY_LEN]).unwrap().accept_unkeyed(true),
        ));
        assert_eq!(lenient.decode_write(&place, &plain).unwrap(), value);
    }

    #[test]
    fn every_changed_byte_of_a_keyed_record_fails_its_check() {
        for encrypt in [false, true] {
            let c = keyed(1, encrypt);
            let text = c.encode(&record(true)).unwrap();
            for i in 0..text.len() {
                for b in [b'0', b'1', b'"', b'A', b',', b']'] {
                    let mut bytes = text.clone().into_bytes();
                    if bytes[i] == b {
                        continue;
                    }
                    bytes[i] = b;
                    let changed = String::from_utf8(bytes).unwrap();
                    assert!(
                        matches!(c.decode(&changed, "c1", Some("p")), Err(ReadError::Key(_))),
                        "byte {i} set to {b}: {changed}"
                    );
                }
                assert!(c.decode(&text[..i], "c1", Some("p")).is_err());
            }
        }
    }
}
