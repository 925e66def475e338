//! The cachers by storage path: the built-in resources' started with the server, custom
//! resources' started and stopped as their CustomResourceDefinitions come and go.
//!
//! Readers take a clone of a resource's [`Reads`] for the request (two `Arc`s), so a cacher
//! stopped meanwhile finishes that request from its last snapshot.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use actors::{ActorDirectory, Deadline, MailboxSpec, StageArbiter, StageHandle, WhenFull};
use apimachinery::catalogue::ResourceDef;
use apimachinery::error::ApiError;
use apimachinery::messages::WatchObjects;
use cacher::{CacheReader, CacherActor, CacherOptions, StopCaching};
use storage::Storage;
use storage::router::StorageRouter;

/// What every cacher is started with: the flags of the watch cache and the stages' mailboxes.
#[derive(Clone, Debug)]
pub struct CacheSettings {
    /// The storage prefix keys live under (`--etcd-prefix`).
    pub storage_prefix: String,
    /// `--watch-cache-sizes`: the window of single resources, by qualified name.
    pub window_sizes: Vec<(String, usize)>,
    /// The window of every other resource.
    pub default_window_size: usize,
    /// How long an event stays in the window however full it is.
    pub window_freshness: Duration,
    /// How long a watcher may lag before it is cut off.
    pub slow_watcher_budget: Duration,
    /// Each cacher's mailbox: messages in progress and queued.
    pub mailbox_capacity: usize,
    /// How long a message waits for room before it is shed with 429.
    pub mailbox_wait: Duration,
}

impl CacheSettings {
    /// The window of `qualified_resource` (`pods`, `deployments.apps`).
    pub fn window_size(&self, qualified_resource: &str) -> usize {
        self.window_sizes.iter().find(|(r, _)| r == qualified_resource).map_or(self.default_window_size, |(_, n)| *n)
    }
}

/// Handles to one resource's cacher.
#[derive(Clone)]
pub struct Reads {
    /// Gets and lists, answered from the cacher's snapshots without its mailbox.
    pub reader: CacheReader,
    /// Watches.
    pub watch: StageHandle<WatchObjects>,
}

/// One running cacher.
#[derive(Clone)]
struct Running {
    reads: Reads,
    stop: StageHandle<StopCaching>,
}

impl Running {
    /// Stops the cacher (its watchers' streams end).
    async fn stop(self, storage_path: &str) {
        if let Err(e) = self.stop.ask(StopCaching, Deadline::after(Duration::from_secs(10))).await {
            tracing::warn!(storage_path, error = %e, "stopping a cacher");
        }
    }
}

/// What starting a cacher needs.
struct Starter {
    arbiter: StageArbiter,
    directory: ActorDirectory,
    router: Arc<StorageRouter>,
    /// What the cachers of resources stored by other processes follow instead of storage: the
    /// feeds of their storage stage processes, by storage path.
    feeds: HashMap<String, Arc<dyn Storage>>,
    settings: CacheSettings,
}

/// The running cachers, shared by every request handler and controller.
#[derive(Clone)]
pub struct Caches {
    running: Arc<RwLock<HashMap<String, Running>>>,
    starter: Arc<Starter>,
}

impl Caches {
    /// No cacher yet; cachers run on `arbiter`, read storage through `router`, or through
    /// `feeds` for the storage paths other processes store.
    pub fn new(
        arbiter: StageArbiter,
        directory: ActorDirectory,
        router: Arc<StorageRouter>,
        feeds: HashMap<String, Arc<dyn Storage>>,
        settings: CacheSettings,
    ) -> Self {
        let starter = Starter { arbiter, directory, router, feeds, settings };
        Caches { running: Arc::default(), starter: Arc::new(starter) }
    }

    /// The cacher of `def`'s store.
    pub fn reads(&self, def: &ResourceDef) -> Result<Reads, ApiError> {
        self.get(&def.storage_path)
            .ok_or_else(|| ApiError::unavailable(format!("the watch cache of {} is not running", def.qualified())))
    }

    /// The cacher of a storage path, if one runs.
    pub fn get(&self, storage_path: &str) -> Option<Reads> {
        self.lock_read().get(storage_path).map(|r| r.reads.clone())
    }

    /// Every running cacher, by storage path.
    pub fn all(&self) -> Vec<(String, Reads)> {
        let mut all: Vec<_> = self.lock_read().iter().map(|(p, r)| (p.clone(), r.reads.clone())).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Starts the cacher of `def`'s store unless one runs; returns it.
    pub fn start(&self, def: Arc<ResourceDef>) -> Reads {
        let mut running = self.running.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(r) = running.get(&def.storage_path) {
            return r.reads.clone();
        }
        let s = &self.starter;
        let cacher_options = CacherOptions {
            window_capacity: s.settings.window_size(&def.qualified()),
            window_freshness: s.settings.window_freshness,
            slow_watcher_budget: s.settings.slow_watcher_budget,
            ..CacherOptions::default()
        };
        let backend = match s.feeds.get(&def.storage_path) {
            Some(feed) => feed.clone(),
            None => s.router.backend(&def.key_prefix(&s.settings.storage_prefix)).clone(),
        };
        let path = def.storage_path.clone();
        let spec = MailboxSpec {
            stage: "cacher".to_string(),
            resource: def.qualified(),
            capacity: s.settings.mailbox_capacity,
            when_full: WhenFull::Shed { wait: s.settings.mailbox_wait },
        };
        let (actor, reader) = CacherActor::new(def, backend, &s.settings.storage_prefix, cacher_options);
        let cacher = actors::start(&s.arbiter, &s.directory, &spec, actor);
        let reads = Reads { reader: reader.register(&s.directory), watch: cacher.handle() };
        running.insert(path, Running { reads: reads.clone(), stop: cacher.handle() });
        reads
    }

    /// Replaces the cacher of `def`'s store by one built from `def`, as kube rebuilds a CRD's
    /// storage when its spec changes: what objects read back as (their schema's defaults)
    /// changed with it. The old cacher's watchers end and resume on the new one from their
    /// last resourceVersion (or get 410 and re-list, as kube's do).
    pub fn restart(&self, def: Arc<ResourceDef>) -> Reads {
        let def_path = def.storage_path.clone();
        let old = self.running.write().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&def_path);
        let reads = self.start(def);
        if let Some(old) = old {
            let path = def_path;
            actix_rt::spawn(async move { old.stop(&path).await });
        }
        reads
    }

    /// Stops the cacher of a storage path: its watches end, and it leaves the admin listing.
    pub async fn stop(&self, storage_path: &str) {
        let gone = self.running.write().unwrap_or_else(std::sync::PoisonError::into_inner).remove(storage_path);
        if let Some(gone) = gone {
            gone.stop(storage_path).await;
        }
    }

    fn lock_read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Running>> {
        self.running.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
