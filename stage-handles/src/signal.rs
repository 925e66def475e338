//! One-way events of the server's life, shared by the shutdown sequence and the controllers
//! that stop with it.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::watch;

/// A one-way event of the server's life (kube's `lifecycleSignal`): fired once, observed by
/// many, awaited by any. A watch channel, so a task that starts waiting after it fired returns
/// at once, and a check is a load.
#[derive(Clone)]
pub struct Signal {
    /// kube's name for it, logged when it fires.
    name: &'static str,
    /// `true` once fired. The sender is kept here, so a waiter never sees it closed.
    fired: Arc<watch::Sender<bool>>,
}

impl Signal {
    /// A signal not fired yet, named `name`.
    pub fn new(name: &'static str) -> Self {
        Signal { name, fired: Arc::new(watch::channel(false).0) }
    }

    /// kube's name of the signal.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Fires it (again: nothing happens) and logs the event.
    pub fn signal(&self) {
        if !self.fired.send_replace(true) {
            tracing::info!(name = self.name, "[graceful-termination] shutdown event");
        }
    }

    /// Whether it has fired.
    pub fn signaled(&self) -> bool {
        *self.fired.borrow()
    }

    /// Resolves once it has fired; owns what it needs, so a stream can be cut by it.
    pub fn wait(&self) -> impl Future<Output = ()> + 'static {
        let mut fired = self.fired.subscribe();
        async move {
            let _ = fired.wait_for(|f| *f).await;
        }
    }
}
