//! The API port's HTTPS listener: actix-http over TLS, each connection's first head read by
//! [`FirstHead`] so that SPDY upgrades reach the relay.
//!
//! Everything else is what actix-web's `HttpServer::bind_rustls_0_23` builds, with its
//! defaults: the TLS handshake, keep-alive and request timeouts, and the graceful shutdown.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_http::{HttpService, KeepAlive, Protocol};
use actix_service::{IntoServiceFactory, ServiceFactoryExt, fn_service, map_config};
use actix_tls::accept::rustls_0_23::{Acceptor, TlsStream};
use actix_web::dev::{AppConfig, Extensions};
use actix_web::rt::net::TcpStream;
use actix_web::{App, web};

use crate::first_head::FirstHead;
use crate::state::ServerState;

/// How the API port is served.
pub struct ListenOptions {
    /// The address and port to bind.
    pub address: SocketAddr,
    /// Worker threads, each with its own event loop.
    pub workers: usize,
    /// TLS handshakes in progress per worker.
    pub max_handshakes: usize,
    /// How long the workers finish what is in flight once the listener closes.
    pub shutdown_timeout: Duration,
}

/// Binds the API port and returns its server, not yet polled.
pub fn serve_api(
    options: ListenOptions,
    state: web::Data<ServerState>,
    tls: rustls::ServerConfig,
) -> io::Result<actix_web::dev::Server> {
    // ALPN as actix offers it: HTTP/2 first, then HTTP/1.1, then any configured.
    let mut tls = tls;
    let mut protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    protocols.append(&mut tls.alpn_protocols);
    tls.alpn_protocols = protocols;
    let tls = Arc::new(tls);
    actix_tls::accept::max_concurrent_tls_connect(options.max_handshakes);
    let builder = actix_server::Server::build();
    let shutdown = builder.graceful_shutdown_signal();
    builder
        .workers(options.workers)
        .backlog(1024)
        // Signals start kube's shutdown sequence (`lifecycle`), not actix's own.
        .disable_signals()
        .shutdown_timeout(options.shutdown_timeout.as_secs())
        .bind("api", options.address, move || {
            let state = state.clone();
            let shutdown = shutdown.clone();
            let app = App::new().app_data(state).default_service(web::to(crate::chain::dispatch));
            let http = HttpService::build()
                .keep_alive(KeepAlive::default())
                .client_request_timeout(Duration::from_secs(5))
                .client_disconnect_timeout(Duration::from_secs(1))
                .graceful_shutdown_signal(move || {
                    let signal = shutdown.clone();
                    async move { signal.notified().await }
                })
                .on_connect_ext(|io: &FirstHead<TlsStream<TcpStream>>, ext: &mut Extensions| {
                    crate::chain::note_peer(io.get_ref(), ext);
                    ext.insert(io.spdy());
                })
                // No handler reads the app's host or scheme from its configuration.
                .finish(map_config(app.into_factory().map_err(|e: actix_web::Error| e.error_response()), |_| {
                    AppConfig::default()
                }));
            let mut acceptor = Acceptor::new((*tls).clone());
            acceptor.set_handshake_timeout(Duration::from_secs(3));
            acceptor
                .map_init_err(|_| unreachable!("a TLS acceptor does not fail to start"))
                .map_err(|e| tracing::debug!("TLS handshake: {e:?}"))
                .and_then(fn_service(|io: TlsStream<TcpStream>| async move {
                    // Watch events and list chunks are written as they come; Nagle would hold a
                    // small write back until the client ACKs the previous one.
                    let _ = io.get_ref().0.set_nodelay(true);
                    let peer = io.get_ref().0.peer_addr().ok();
                    // SPDY upgrades come over HTTP/1.1 only: an HTTP/2 connection is left alone.
                    if io.get_ref().1.alpn_protocol() == Some(b"h2") {
                        return Ok::<_, ()>((FirstHead::through(io), Protocol::Http2, peer));
                    }
                    Ok((FirstHead::new(io), Protocol::Http1, peer))
                }))
                .and_then(http.map_err(|e| tracing::debug!("HTTP connection: {e}")))
        })
        .map(|b| b.run())
}
