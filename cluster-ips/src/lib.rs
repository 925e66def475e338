//! The values Services take from shared pools, reserved atomically in storage: cluster IPs from
//! `--service-cluster-ip-range` and node ports from `--service-node-port-range`.
//!
//! As kube's bitmap allocators do, each pool's allocations are one object in storage (a
//! `RangeAllocation` at `<prefix>/ranges/serviceips` or `<prefix>/ranges/servicenodeports`: the
//! range and a bitmap of the values in use), and every change to it is a write guarded by the
//! mod revision it was read at. Two concurrent allocations, in this process or in another
//! server on the same storage (a kube-apiserver included), cannot take the same value: one of
//! the guarded writes fails and retries with the other's bitmap. The bitmap survives restarts
//! with the rest of the store; when it does not exist yet (a new store, or one written before
//! this allocator), it is rebuilt from the Services.
//!
//! Values are offsets from the range's first: for addresses, its network address + 1 (the
//! broadcast address of an IPv4 range is never handed out); for ports, the range's base. As in
//! kube, dynamic allocations prefer the range above a small static band kept for values users
//! choose. Unlike kube, which starts at a random offset so that allocators rarely race for one
//! bit, the lowest free value is taken: the guarded write already settles races, and values
//! stay predictable (the first Services of a `10.96.0.0/12` range get `10.96.1.x`, the first
//! node ports of `30000-32767` are 30086 and up).
//!
//! The registry reaches the allocators through the core's `AddressAllocator` trait, by the
//! claims the Service strategy makes, so that it names no kind; this crate is the Service
//! kind's side of it.
//!
//! # Layout
//! One module: the two ranges ([`ServiceRange`], [`PortRange`]), the generic bitmap
//! (`Bitmap`, reserving and releasing offsets with guarded writes), and [`ServiceAllocators`],
//! both pools behind the `AddressAllocator` trait.

use std::net::IpAddr;
use std::sync::Arc;

use apimachinery::catalogue::{AddressAllocator, Catalogue, Claim, Pool};
use apimachinery::error::{ApiError, Cause};
use apimachinery::validation::field::{self, Bad, Path};
use base64::Engine;
use serde_json::{Value, json};
use storage::router::StorageRouter;
use storage::{Expect, Revision, Storage, StorageError};
use storage_codec::codec;

/// How many times an allocation retries a conflicting write before giving up.
const MAX_RETRIES: usize = 64;

/// The largest range served: 2^20 addresses (kube allows a /12 for IPv4, a /108 for IPv6).
const MAX_BITS: u32 = 20;

/// A parsed `--service-cluster-ip-range`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceRange {
    network: IpAddr,
    prefix_len: u32,
}

impl ServiceRange {
    /// Parses `10.96.0.0/12` or `fd00::/108`.
    pub fn parse(cidr: &str) -> Result<Self, String> {
        let (ip, len) = cidr.split_once('/').ok_or_else(|| format!("{cidr} is not a CIDR (want address/bits)"))?;
        let ip: IpAddr = ip.trim().parse().map_err(|_| format!("{cidr}: {ip} is not an IP address"))?;
        let prefix_len: u32 = len.trim().parse().map_err(|_| format!("{cidr}: {len} is not a prefix length"))?;
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        if prefix_len > bits {
            return Err(format!("{cidr}: prefix length {prefix_len} is longer than the address"));
        }
        if bits - prefix_len > MAX_BITS {
            return Err(format!(
                "specified --service-cluster-ip-range is too large; for {}-bit addresses, the mask must be >= {}",
                bits,
                bits - MAX_BITS
            ));
        }
        if bits - prefix_len < 2 {
            return Err(format!("{cidr}: the range is too small to hold a service address"));
        }
        let host_bits = bits - prefix_len;
        let network = from_u128(ip.is_ipv4(), to_u128(ip) >> host_bits << host_bits);
        Ok(ServiceRange { network, prefix_len })
    }

    fn host_bits(&self) -> u32 {
        (if self.network.is_ipv4() { 32 } else { 128 }) - self.prefix_len
    }

    /// How many addresses can be handed out.
    pub fn size(&self) -> u64 {
        let all = 1u64 << self.host_bits();
        // Network address always, broadcast of IPv4 too.
        if self.network.is_ipv4() { all - 2 } else { all - 1 }
    }

    /// The address at `offset` (offset 0 is the network address + 1).
    pub fn address(&self, offset: u64) -> IpAddr {
        from_u128(self.network.is_ipv4(), to_u128(self.network) + 1 + u128::from(offset))
    }

    /// The offset of `ip`, if it is in the range.
    pub fn offset(&self, ip: IpAddr) -> Option<u64> {
        if ip.is_ipv4() != self.network.is_ipv4() {
            return None;
        }
        let first = to_u128(self.network) + 1;
        let n = to_u128(ip).checked_sub(first)?;
        (n < u128::from(self.size())).then_some(n as u64)
    }

    /// The first usable address: the `kubernetes` Service's.
    pub fn first(&self) -> IpAddr {
        self.address(0)
    }

    /// Addresses below it are left to users choosing theirs (kube's static sub-range).
    fn static_band(&self) -> u64 {
        (self.size() / 16).clamp(16, 256).min(self.size())
    }
}

impl Range for ServiceRange {
    fn size(&self) -> u64 {
        ServiceRange::size(self)
    }

    fn static_band(&self) -> u64 {
        ServiceRange::static_band(self)
    }

    fn offset_of(&self, value: &str) -> Option<u64> {
        self.offset(value.parse().ok()?)
    }

    fn value_at(&self, offset: u64) -> String {
        self.address(offset).to_string()
    }

    fn translate(&self, stored: &str, offset: u64) -> Option<u64> {
        let addr = ServiceRange::parse(stored).map_or(self.address(offset), |r| r.address(offset));
        self.offset(addr)
    }
}

impl std::fmt::Display for ServiceRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn from_u128(v4: bool, n: u128) -> IpAddr {
    if v4 { IpAddr::V4((n as u32).into()) } else { IpAddr::V6(n.into()) }
}

/// A parsed `--service-node-port-range` (`30000-32767`, kube's default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    base: u16,
    size: u16,
}

impl PortRange {
    /// Parses `30000-32767` (or a single port, `30000`), as kube's `net.ParsePortRange` does.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let port = |p: &str| p.trim().parse::<u16>().map_err(|_| format!("{text}: {p} is not a port number"));
        let (low, high) = match text.split_once('-') {
            Some((low, high)) => (port(low)?, port(high)?),
            None => (port(text)?, port(text)?),
        };
        if low == 0 || high < low {
            return Err(format!("{text}: not a range of ports (want low-high, 1 <= low <= high)"));
        }
        Ok(PortRange { base: low, size: high - low + 1 })
    }
}

impl Default for PortRange {
    fn default() -> Self {
        PortRange { base: 30000, size: 2768 }
    }
}

impl Range for PortRange {
    fn size(&self) -> u64 {
        u64::from(self.size)
    }

    /// kube's `calculateRangeOffset`: a thirty-second of the range, between 16 and 128 ports.
    fn static_band(&self) -> u64 {
        let size = u64::from(self.size);
        if size <= 16 { 0 } else { (size / 32).clamp(16, 128) }
    }

    fn offset_of(&self, value: &str) -> Option<u64> {
        let port: u16 = value.parse().ok()?;
        port.checked_sub(self.base).filter(|o| *o < self.size).map(u64::from)
    }

    fn value_at(&self, offset: u64) -> String {
        (u64::from(self.base) + offset).to_string()
    }

    fn translate(&self, stored: &str, offset: u64) -> Option<u64> {
        let base = PortRange::parse(stored).map_or(self.base, |r| r.base);
        self.offset_of(&(u64::from(base) + offset).to_string())
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.base, u32::from(self.base) + u32::from(self.size) - 1)
    }
}

/// A range of values as a bitmap sees it: offsets `0..size`.
trait Range: std::fmt::Display + Send + Sync {
    /// How many values can be handed out.
    fn size(&self) -> u64;
    /// Offsets below it are left to users choosing their values.
    fn static_band(&self) -> u64;
    /// The offset of a value as an object holds it, if it is in the range.
    fn offset_of(&self, value: &str) -> Option<u64>;
    /// The value at an offset, as an object holds it.
    fn value_at(&self, offset: u64) -> String;
    /// The offset here of bit `offset` of a bitmap stored for the range `stored` (a range
    /// written by a server with other flags keeps the values still in this one).
    fn translate(&self, stored: &str, offset: u64) -> Option<u64>;
}

/// Which addresses are taken, as the stored bitmap says, and the revision it was read at.
#[derive(Clone)]
struct Allocations {
    bits: Vec<u64>,
    /// 0: not stored yet (a write must create the key).
    revision: Revision,
}

impl Allocations {
    fn empty(size: u64) -> Self {
        Allocations { bits: vec![0; size.div_ceil(64) as usize], revision: 0 }
    }

    fn taken(&self, offset: u64) -> bool {
        self.bits[(offset / 64) as usize] & (1 << (offset % 64)) != 0
    }

    fn set(&mut self, offset: u64, taken: bool) {
        let word = &mut self.bits[(offset / 64) as usize];
        if taken {
            *word |= 1 << (offset % 64);
        } else {
            *word &= !(1 << (offset % 64));
        }
    }

    /// The lowest offset in `from..to` not taken, skipping full words.
    fn first_free(&self, from: u64, to: u64) -> Option<u64> {
        let mut offset = from;
        while offset < to {
            let word = self.bits[(offset / 64) as usize];
            if offset.is_multiple_of(64) && word == u64::MAX {
                offset += 64;
                continue;
            }
            if !self.taken(offset) {
                return Some(offset);
            }
            offset += 1;
        }
        None
    }

    fn count(&self) -> u64 {
        self.bits.iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

/// What an allocation wants.
enum Change {
    /// The next free value but these offsets (a dry run's earlier choices in one request).
    Next(Vec<u64>),
    Exactly(u64),
    Release(u64),
}

/// One pool's allocations, kept in storage as kube's `RangeAllocation` of the pool.
struct Bitmap<R> {
    range: R,
    /// Which of the Services' claims it holds.
    pool: Pool,
    router: Arc<StorageRouter>,
    catalogue: Arc<Catalogue>,
    /// Key of the stored bitmap.
    key: String,
    /// The server's storage prefix, to find the Services when rebuilding.
    prefix: String,
    /// The last bitmap this server wrote or read. A tokio mutex, held across the guarded write,
    /// so this server's own allocations queue here instead of conflicting in storage; other
    /// servers' are caught by the write's guard.
    state: tokio::sync::Mutex<Option<Allocations>>,
}

impl<R: Range> Bitmap<R> {
    fn new(
        range: R,
        pool: Pool,
        name: &str,
        router: Arc<StorageRouter>,
        catalogue: Arc<Catalogue>,
        prefix: &str,
    ) -> Self {
        let prefix = prefix.trim_end_matches('/').to_string();
        Bitmap {
            range,
            pool,
            router,
            catalogue,
            key: format!("{prefix}/ranges/{name}"),
            prefix,
            state: tokio::sync::Mutex::new(None),
        }
    }

    fn storage(&self) -> &Arc<dyn Storage> {
        self.router.backend(&self.key)
    }

    /// Writes the bitmap again in kube's form if it is still in this server's former one
    /// (MessagePack, bytes least significant first); returns whether it did. Guarded by the
    /// revision read, as every write of the bitmap is.
    async fn rewrite_in_kube_format(&self) -> Result<bool, StorageError> {
        let (Some(kv), _) = self.storage().get(&self.key).await? else { return Ok(false) };
        if codec::Format::of(&kv.value) != codec::Format::MessagePack {
            return Ok(false);
        }
        // Only the format changes: a bitmap of another range than this allocator's is not
        // rewritten into this one (which would drop the values outside it).
        let doc = codec::decode(&self.key, &kv.value)?;
        let stored = doc.get("range").and_then(Value::as_str).unwrap_or_default();
        if stored != self.range.to_string() {
            return Err(StorageError::Corrupt {
                key: self.key.clone(),
                message: format!(
                    "the bitmap is of the range {stored}, not {}: give the servers' range flags",
                    self.range
                ),
            });
        }
        let current = self.decode(&kv.value, kv.mod_revision)?;
        self.store(&current).await?;
        Ok(true)
    }

    /// How many values are taken, as this server last saw the bitmap.
    async fn used(&self) -> Result<u64, ApiError> {
        let mut state = self.state.lock().await;
        match self.load(&mut state).await {
            Ok(current) => Ok(current.count()),
            Err(AllocError::Storage(e)) => Err(ApiError::internal(e)),
            Err(AllocError::Full | AllocError::Taken | AllocError::AlreadyFree) => {
                unreachable!("loading allocates nothing")
            }
        }
    }

    async fn change(&self, change: Change, dry_run: bool) -> Result<Option<u64>, AllocError> {
        let mut state = self.state.lock().await;
        // Whether the bitmap in hand was read from storage during this change: an answer that
        // writes nothing (full, taken, already free) must not come from a bitmap another server
        // may have changed since this one last saw it.
        let mut fresh = state.is_none();
        for _ in 0..MAX_RETRIES {
            let current = self.load(&mut state).await?;
            let mut next = current.clone();
            let decided = match &change {
                Change::Next(skipped) => match self.next_free(&current, skipped) {
                    Some(offset) => {
                        next.set(offset, true);
                        Ok(offset)
                    }
                    None => Err(AllocError::Full),
                },
                Change::Exactly(offset) if current.taken(*offset) => Err(AllocError::Taken),
                Change::Exactly(offset) => {
                    next.set(*offset, true);
                    Ok(*offset)
                }
                Change::Release(offset) if !current.taken(*offset) => Err(AllocError::AlreadyFree),
                Change::Release(offset) => {
                    next.set(*offset, false);
                    Ok(*offset)
                }
            };
            let offset = match decided {
                Ok(offset) => offset,
                Err(_) if !fresh => {
                    *state = None;
                    fresh = true;
                    continue;
                }
                Err(AllocError::AlreadyFree) => return Ok(None),
                Err(e) => return Err(e),
            };
            if dry_run {
                return Ok(Some(offset));
            }
            match self.store(&next).await {
                Ok(revision) => {
                    next.revision = revision;
                    *state = Some(next);
                    return Ok(Some(offset));
                }
                // Another server changed the bitmap: read it again and redo the change on it.
                Err(StorageError::Conflict { .. } | StorageError::AlreadyExists { .. }) => {
                    *state = None;
                    fresh = true;
                }
                Err(e) => return Err(AllocError::Storage(e)),
            }
        }
        Err(AllocError::Storage(StorageError::Unavailable {
            backend: self.storage().describe(),
            message: format!("too many concurrent changes to {}", self.key),
        }))
    }

    /// The bitmap, read from storage unless this server holds the latest it wrote.
    async fn load(&self, state: &mut Option<Allocations>) -> Result<Allocations, AllocError> {
        if let Some(s) = state {
            return Ok(s.clone());
        }
        let (kv, _) = self.storage().get(&self.key).await.map_err(AllocError::Storage)?;
        let loaded = match kv {
            Some(kv) => self.decode(&kv.value, kv.mod_revision).map_err(AllocError::Storage)?,
            None => self.rebuild().await?,
        };
        *state = Some(loaded.clone());
        Ok(loaded)
    }

    /// The bitmap of the values the stored Services hold, for a store that has none yet.
    async fn rebuild(&self) -> Result<Allocations, AllocError> {
        let mut out = Allocations::empty(self.range.size());
        let Some(services) = self.catalogue.find("", "v1", "services") else { return Ok(out) };
        let prefix = services.key_prefix(&self.prefix);
        let list = self.router.backend(&prefix).list(&prefix, Default::default()).await.map_err(AllocError::Storage)?;
        for kv in &list.items {
            let Ok(svc) = codec::decode(&kv.key, &kv.value) else { continue };
            for claim in services.strategy.claims(&svc).into_iter().filter(|c| c.pool == self.pool) {
                if let Some(offset) = claim.value.and_then(|v| self.range.offset_of(&v)) {
                    out.set(offset, true);
                }
            }
        }
        if out.count() > 0 {
            tracing::info!(key = self.key, values = out.count(), "rebuilt the allocations from the Services");
        }
        Ok(out)
    }

    /// The lowest free offset of the dynamic band, else of the static band, but `skipped`.
    fn next_free(&self, current: &Allocations, skipped: &[u64]) -> Option<u64> {
        let (size, band) = (self.range.size(), self.range.static_band());
        let mut current = std::borrow::Cow::Borrowed(current);
        for offset in skipped.iter().filter(|o| **o < size) {
            current.to_mut().set(*offset, true);
        }
        current.first_free(band, size).or_else(|| current.first_free(0, band))
    }

    fn decode(&self, bytes: &[u8], revision: Revision) -> Result<Allocations, StorageError> {
        let corrupt = |message: String| StorageError::Corrupt { key: self.key.clone(), message };
        let doc = codec::decode(&self.key, bytes)?;
        let data = doc.get("data").and_then(Value::as_str).unwrap_or("");
        let mut raw = base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| corrupt(e.to_string()))?;
        // kube's bitmap is a big-endian integer whose bit n is offset n; this server once wrote
        // it least significant byte first, in MessagePack.
        if codec::Format::of(bytes) != codec::Format::MessagePack {
            raw.reverse();
        }
        let mut out = Allocations::empty(self.range.size());
        out.revision = revision;
        let stored_range = doc.get("range").and_then(Value::as_str).unwrap_or_default();
        for (i, byte) in raw.iter().enumerate() {
            for bit in 0..8 {
                if byte & (1 << bit) == 0 {
                    continue;
                }
                if let Some(o) = self.range.translate(stored_range, (i * 8 + bit) as u64) {
                    out.set(o, true);
                }
            }
        }
        Ok(out)
    }

    /// Writes `next`, guarded by the revision it was derived from; returns the new revision.
    async fn store(&self, next: &Allocations) -> Result<Revision, StorageError> {
        // As kube's allocator snapshots it: a big-endian integer without leading zero bytes,
        // in an object with empty metadata.
        let mut bytes: Vec<u8> = next.bits.iter().rev().flat_map(|w| w.to_be_bytes()).collect();
        let leading = bytes.iter().take_while(|b| **b == 0).count();
        bytes.drain(..leading);
        let doc = json!({
            "kind": "RangeAllocation",
            "apiVersion": "v1",
            "metadata": {},
            "range": self.range.to_string(),
            "data": base64::engine::general_purpose::STANDARD.encode(bytes),
        });
        let value = codec::encode_typed(&doc).expect("a RangeAllocation always encodes");
        let expect = if next.revision == 0 { Expect::Absent } else { Expect::ModRevision(next.revision) };
        Ok(self.storage().put(&self.key, value, expect).await?.mod_revision)
    }
}

enum AllocError {
    Full,
    Taken,
    /// A release of an address the bitmap does not hold.
    AlreadyFree,
    Storage(StorageError),
}

/// Both of the Service pools: what the registry reserves a Service's claims from.
pub struct ServiceAllocators {
    ips: Bitmap<ServiceRange>,
    ports: Bitmap<PortRange>,
}

impl ServiceAllocators {
    /// Allocators for `ips` and `ports`, keeping their bitmaps under `prefix` in the backends
    /// `router` stores them in.
    pub fn new(
        ips: ServiceRange,
        ports: PortRange,
        router: Arc<StorageRouter>,
        catalogue: Arc<Catalogue>,
        prefix: &str,
    ) -> Self {
        let ip_bitmap = Bitmap::new(ips, Pool::ClusterIps, "serviceips", router.clone(), catalogue.clone(), prefix);
        ServiceAllocators {
            ips: ip_bitmap,
            ports: Bitmap::new(ports, Pool::NodePorts, "servicenodeports", router, catalogue, prefix),
        }
    }

    /// The range addresses come from.
    pub fn ip_range(&self) -> ServiceRange {
        self.ips.range
    }

    /// Writes the address bitmap again in kube's form if it is still in this server's former
    /// one (MessagePack); returns whether it did. (Node ports were never stored that way.)
    pub async fn rewrite_in_kube_format(&self) -> Result<bool, StorageError> {
        self.ips.rewrite_in_kube_format().await
    }

    /// How many values of `pool` are taken, as this server last saw its bitmap.
    pub async fn used(&self, pool: Pool) -> Result<u64, ApiError> {
        match pool {
            Pool::ClusterIps => self.ips.used().await,
            Pool::NodePorts => self.ports.used().await,
        }
    }

    async fn reserve_ip(
        &self,
        claim: &Claim,
        name: &str,
        skipped: &[String],
        dry_run: bool,
    ) -> Result<String, ApiError> {
        let change = match &claim.value {
            None => Change::Next(skipped.iter().filter_map(|v| self.ips.range.offset_of(v)).collect()),
            Some(ip) => {
                // An address that does not parse is validation's to report.
                let Ok(addr) = ip.parse::<IpAddr>() else { return Ok(ip.clone()) };
                match self.ips.range.offset(addr) {
                    Some(offset) => Change::Exactly(offset),
                    None => {
                        let why = format!(
                            "the provided IP ({addr}) is not in the valid range. The range of valid IPs is {}",
                            self.ips.range
                        );
                        return Err(invalid_ip(name, ip, &why));
                    }
                }
            }
        };
        match self.ips.change(change, dry_run).await {
            Ok(offset) => Ok(offset.map(|o| self.ips.range.value_at(o)).unwrap_or_default()),
            Err(AllocError::Full) => Err(ApiError::internal("failed to allocate a serviceIP: range is full")),
            Err(AllocError::Taken) => {
                Err(invalid_ip(name, claim.value.as_deref().unwrap_or_default(), "provided IP is already allocated"))
            }
            Err(AllocError::Storage(e)) => Err(ApiError::internal(e)),
            Err(AllocError::AlreadyFree) => unreachable!("only releases find a value free"),
        }
    }

    async fn reserve_port(
        &self,
        claim: &Claim,
        name: &str,
        skipped: &[String],
        dry_run: bool,
    ) -> Result<String, ApiError> {
        let health = claim.field == "spec.healthCheckNodePort";
        let requested = claim.value.as_deref().and_then(|v| v.parse::<i64>().ok());
        let invalid = |why: &str| {
            let cause = field::invalid(&Path::new(&claim.field), Bad::Int(requested.unwrap_or(0)), why);
            ApiError::invalid("", "Service", name, vec![cause])
        };
        let change = match &claim.value {
            None => Change::Next(skipped.iter().filter_map(|v| self.ports.range.offset_of(v)).collect()),
            Some(port) => match self.ports.range.offset_of(port) {
                Some(offset) => Change::Exactly(offset),
                // A number that is no port is validation's to report.
                None if requested.is_none_or(|p| !(1..=65535).contains(&p)) => return Ok(port.clone()),
                None => {
                    let why = format!(
                        "provided port is not in the valid range. The range of valid ports is {}",
                        self.ports.range
                    );
                    return Err(if health {
                        ApiError::internal(format!("failed to allocate requested HealthCheck NodePort {port}: {why}"))
                    } else {
                        invalid(&why)
                    });
                }
            },
        };
        let why = match self.ports.change(change, dry_run).await {
            Ok(offset) => return Ok(offset.map(|o| self.ports.range.value_at(o)).unwrap_or_default()),
            Err(AllocError::Full) => "range is full",
            Err(AllocError::Taken) => "provided port is already allocated",
            Err(AllocError::Storage(e)) => return Err(ApiError::internal(e)),
            Err(AllocError::AlreadyFree) => unreachable!("only releases find a value free"),
        };
        Err(match (&claim.value, health) {
            (Some(port), true) => {
                ApiError::internal(format!("failed to allocate requested HealthCheck NodePort {port}: {why}"))
            }
            (None, true) => ApiError::internal(format!("failed to allocate a HealthCheck NodePort 0: {why}")),
            (Some(_), false) => invalid(why),
            (None, false) => ApiError::internal(format!("failed to allocate a nodePort: {why}")),
        })
    }
}

fn invalid_ip(name: &str, ip: &str, why: &str) -> ApiError {
    let value = Bad::Raw(format!("[]string{{{}}}", field::go_quote(ip)));
    let cause: Cause =
        field::invalid(&Path::new("spec.clusterIPs"), value, &format!("failed to allocate IP {ip}: {why}"));
    ApiError::invalid("", "Service", name, vec![cause])
}

#[async_trait::async_trait]
impl AddressAllocator for ServiceAllocators {
    /// Reserves a value for a Service being written: the next free one for a claim without a
    /// value, exactly the chosen one otherwise. A dry run finds the value without reserving it.
    /// Errors are kube's: for addresses, 500 `failed to allocate a serviceIP: range is full`
    /// and 422 on `spec.clusterIPs` for a taken or out-of-range one; for node ports, 422 on the
    /// port's `nodePort` for a taken or out-of-range one and 500 `failed to allocate a nodePort:
    /// range is full`.
    async fn reserve(&self, claim: &Claim, name: &str, skipped: &[String], dry_run: bool) -> Result<String, ApiError> {
        match claim.pool {
            Pool::ClusterIps => self.reserve_ip(claim, name, skipped, dry_run).await,
            Pool::NodePorts => self.reserve_port(claim, name, skipped, dry_run).await,
        }
    }

    /// Gives a value back (the Service holding it is gone, changed, or its write failed).
    /// Values outside the range (kept from an earlier range) are ignored.
    async fn release(&self, pool: Pool, value: &str) -> Result<(), ApiError> {
        let released = match pool {
            Pool::ClusterIps => self.ips.release(value).await,
            Pool::NodePorts => self.ports.release(value).await,
        };
        match released {
            Ok(()) | Err(AllocError::Full | AllocError::Taken | AllocError::AlreadyFree) => Ok(()),
            Err(AllocError::Storage(e)) => Err(ApiError::internal(e)),
        }
    }
}

impl<R: Range> Bitmap<R> {
    async fn release(&self, value: &str) -> Result<(), AllocError> {
        let Some(offset) = self.range.offset_of(value) else { return Ok(()) };
        self.change(Change::Release(offset), false).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_exclude_network_and_broadcast() {
        let r = ServiceRange::parse("10.96.0.0/12").unwrap();
        assert_eq!(r.first().to_string(), "10.96.0.1");
        assert_eq!(r.size(), (1 << 20) - 2);
        assert_eq!(r.address(r.size() - 1).to_string(), "10.111.255.254");
        assert_eq!(r.offset("10.111.255.255".parse().unwrap()), None, "broadcast");
        assert_eq!(r.offset("10.96.0.0".parse().unwrap()), None, "network");
        assert_eq!(r.offset("10.96.1.0".parse().unwrap()), Some(255));
        assert_eq!(ServiceRange::parse("10.96.7.9/24").unwrap().to_string(), "10.96.7.0/24");
        let v6 = ServiceRange::parse("fd00::/120").unwrap();
        assert_eq!((v6.first().to_string(), v6.size()), ("fd00::1".to_string(), 255));
        assert!(ServiceRange::parse("10.0.0.0/8").unwrap_err().contains("too large"));
        assert!(ServiceRange::parse("10.0.0.0").is_err());
        assert!(ServiceRange::parse("10.0.0.0/31").is_err());
    }

    #[test]
    fn the_static_band_is_kept_for_chosen_addresses() {
        let r = ServiceRange::parse("10.0.0.0/24").unwrap();
        assert_eq!(r.static_band(), 16);
        let big = ServiceRange::parse("10.96.0.0/12").unwrap();
        assert_eq!(big.static_band(), 256);
        assert_eq!(big.address(big.static_band()).to_string(), "10.96.1.1");
    }

    #[test]
    fn port_ranges_are_read_and_shown_as_kube_does() {
        let r = PortRange::parse("30000-32767").unwrap();
        assert_eq!((r, r.to_string()), (PortRange::default(), "30000-32767".to_string()));
        assert_eq!(Range::size(&r), 2768);
        assert_eq!(Range::static_band(&r), 86, "kube's calculateRangeOffset");
        assert_eq!(r.offset_of("30000"), Some(0));
        assert_eq!(r.offset_of("32767"), Some(2767));
        assert_eq!(r.offset_of("32768"), None);
        assert_eq!(r.offset_of("80"), None);
        assert_eq!(r.value_at(86), "30086");
        // A bitmap stored for another range keeps the ports still in this one.
        assert_eq!(r.translate("30100-30200", 0), Some(100));
        assert_eq!(r.translate("20000-20100", 5), None);
        assert_eq!(Range::static_band(&PortRange::parse("30000-30010").unwrap()), 0);
        assert_eq!(Range::static_band(&PortRange::parse("1-65535").unwrap()), 128);
        assert!(PortRange::parse("32767-30000").is_err());
        assert!(PortRange::parse("0-10").is_err());
        assert!(PortRange::parse("a-b").is_err());
    }

    #[test]
    fn the_lowest_free_address_is_found_past_full_words() {
        let mut a = Allocations::empty(300);
        for o in 0..130 {
            a.set(o, true);
        }
        a.set(131, true);
        assert_eq!(a.first_free(0, 300), Some(130));
        assert_eq!(a.first_free(131, 300), Some(132));
        assert_eq!(a.first_free(0, 130), None);
        assert_eq!(a.count(), 131);
    }
}
