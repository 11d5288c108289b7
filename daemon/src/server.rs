//! `zkpipe serve`: the daemon's life from start to a clean exit. On
//! SIGTERM or SIGINT it stops taking jobs, gives running ones
//! `drain_timeout_s` to finish, cancels the rest (their callers get a
//! CANCELLED result saying why), stops serving and removes its socket.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sd_notify::NotifyState;
use tokio::sync::watch;
use tonic::transport::Server;
use zkpipe_core::Error;

use crate::config::Config;
use crate::cuzk::CuzkService;
use crate::cuzk_proto::proving_engine_server::ProvingEngineServer;
use crate::daemon::Daemon;
use crate::incoming::{self, Incoming};
use crate::listen::{self, TokenCheck};
use crate::proto::prover_server::ProverServer;
use crate::service::Service;
use crate::status_http;

/// What the serving binary says about itself: in the startup line and in
/// `zkpipe_build_info`.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The commit the binary was built from (`unknown` outside a checkout).
    pub commit: String,
    /// The config file read, if one was.
    pub config_file: Option<std::path::PathBuf>,
}

/// Where a started daemon listens (printed once it is ready).
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The Unix socket.
    pub socket: std::path::PathBuf,
    /// The TCP address, when listening on TCP.
    pub tcp: Option<std::net::SocketAddr>,
    /// The HTTP status address, when serving it.
    pub http: Option<std::net::SocketAddr>,
}

impl Endpoints {
    /// `listening unix:PATH`, then `listening tcp:ADDR` and `listening
    /// http:ADDR` where served: what `zkpipe serve` prints when ready.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("listening unix:{}", self.socket.display())];
        lines.extend(self.tcp.map(|a| format!("listening tcp:{a}")));
        lines.extend(self.http.map(|a| format!("listening http:{a}")));
        lines
    }
}

/// Runs the daemon until SIGTERM or SIGINT, calling `ready` once it
/// listens.
///
/// # Errors
/// Start-up errors: backend, policy, devices, a live daemon on the socket,
/// addresses that cannot be bound, a bad token file.
pub async fn serve(
    config: Config,
    origin: Origin,
    ready: impl FnOnce(&Endpoints),
) -> Result<(), Error> {
    let socket = config.socket_path();
    // Before the backend starts: a bad certificate or key file is refused
    // at once.
    let tls = listen::server_tls(&config.daemon)?;
    let start_config = config.clone();
    let daemon = tokio::task::spawn_blocking(move || Daemon::start(start_config))
        .await
        .map_err(|e| Error::Failed(format!("start-up task: {e}")))??;
    let status_token = (!config.daemon.token_file.is_empty())
        .then(|| listen::read_token(std::path::Path::new(&config.daemon.token_file)))
        .transpose()?;
    if config.daemon.tcp_open() {
        tracing::warn!(
            "TCP without a token (daemon.tcp_without_token): every local user may submit work and read the status"
        );
    }
    let per_listener = incoming::connection_limit(incoming::raise_open_files_limit());
    let uds = listen::bind_socket(&socket).await?;
    let tcp = if config.daemon.listen.is_empty() {
        None
    } else {
        Some(listen::bind_tcp(&config.daemon.listen, &config.daemon.token_file).await?)
    };
    let http = if config.daemon.status_http.is_empty() {
        None
    } else {
        let l = tokio::net::TcpListener::bind(&config.daemon.status_http)
            .await
            .map_err(|e| Error::Failed(format!("binding {}: {e}", config.daemon.status_http)))?;
        Some(l)
    };
    let endpoints = Endpoints {
        socket: socket.clone(),
        tcp: tcp.as_ref().and_then(|(l, _)| l.local_addr().ok()),
        http: http.as_ref().and_then(|l| l.local_addr().ok()),
    };

    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let max = config.daemon.max_message_bytes;
    let fleet = if config.queue.enabled() {
        let queue = zkpipe_fleet::Queue::new(&config.queue.url, config.queue.queue_config())
            .map_err(crate::fleet_jobs::error)?;
        Some(Arc::new(queue))
    } else {
        None
    };
    let service = match &fleet {
        Some(queue) => Service::with_fleet(daemon.clone(), queue.clone()),
        None => Service::new(daemon.clone()),
    };
    let (fleet_stop, fleet_stopped) = watch::channel(false);
    let fleet_node = fleet.map(|queue| {
        let stop = stopped(fleet_stopped);
        tokio::spawn(crate::fleet_node::run(daemon.clone(), queue, stop))
    });
    let cuzk = Arc::new(CuzkService::new(daemon.clone()));
    let cuzk_svc = || {
        ProvingEngineServer::new(cuzk.clone())
            .max_decoding_message_size(crate::cuzk::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(crate::cuzk::MAX_MESSAGE_BYTES)
    };
    let mut servers = tokio::task::JoinSet::new();
    {
        let svc = ProverServer::new(service.clone())
            .max_decoding_message_size(max)
            .max_encoding_message_size(max);
        let cuzk_svc = cuzk_svc();
        let incoming = Incoming::new(uds, per_listener, "unix");
        let stop = stopped(stop_rx.clone());
        servers.spawn(async move {
            Server::builder()
                .add_service(svc)
                .add_service(cuzk_svc)
                .serve_with_incoming_shutdown(incoming, stop)
                .await
                .map_err(|e| e.to_string())
        });
    }
    if let Some((listener, token)) = tcp {
        let svc = ProverServer::new(service.clone())
            .max_decoding_message_size(max)
            .max_encoding_message_size(max);
        let cuzk_svc = tonic::service::interceptor::InterceptedService::new(
            cuzk_svc(),
            TokenCheck {
                token: token.clone(),
            },
        );
        let svc = tonic::service::interceptor::InterceptedService::new(svc, TokenCheck { token });
        let incoming = Incoming::new(listener, per_listener, "tcp");
        let stop = stopped(stop_rx.clone());
        let mut builder = Server::builder();
        if let Some(tls) = tls {
            builder = builder
                .tls_config(tls)
                .map_err(|e| Error::InvalidInput(format!("daemon TLS files: {e}")))?;
        }
        servers.spawn(async move {
            builder
                .add_service(svc)
                .add_service(cuzk_svc)
                .serve_with_incoming_shutdown(incoming, stop)
                .await
                .map_err(|e| e.to_string())
        });
    }
    if let Some(listener) = http {
        let stop = stopped(stop_rx.clone());
        let app = status_http::router(daemon.clone(), status_token);
        servers.spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
                .map_err(|e| e.to_string())
        });
    }
    let ticker = {
        let daemon = daemon.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(250));
            loop {
                every.tick().await;
                daemon.tick();
            }
        })
    };
    // One line that says what started: a log reader needs no other.
    let status = daemon.status();
    let devices: Vec<String> = (status.devices.iter())
        .map(|d| format!("{} {}", d.index, d.name))
        .collect();
    daemon
        .metrics
        .set_build_info(&origin.commit, &status.backend);
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        commit = %origin.commit,
        config = origin.config_file.as_ref().map(|p| tracing::field::display(p.display())),
        backend = %status.backend,
        devices = %devices.join(", "),
        policy = %status.policy,
        socket = %socket.display(),
        tcp = endpoints.tcp.as_ref().map(tracing::field::display),
        http = endpoints.http.as_ref().map(tracing::field::display),
        "zkpipe daemon listening"
    );
    let stop = StopSignals::install()?;
    ready(&endpoints);
    notify_systemd(&[NotifyState::Ready]);

    stop.wait().await;
    notify_systemd(&[
        NotifyState::Stopping,
        NotifyState::Status("draining: finishing the jobs in flight"),
    ]);
    // Leave the fleet first: jobs it held go back to the queue for others.
    let _ = fleet_stop.send(true);
    if let Some(node) = fleet_node {
        match node.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "the fleet node stopped with an error"),
            Err(e) => tracing::error!(error = %e, "the fleet node task failed"),
        }
    }
    drain(&daemon, Duration::from_secs(config.daemon.drain_timeout_s)).await;
    let _ = stop_tx.send(true);
    while let Some(r) = servers.join_next().await {
        if let Ok(Err(e)) = r {
            tracing::warn!(error = %e, "a listener ended with an error");
        }
    }
    ticker.abort();
    let _ = std::fs::remove_file(&socket);
    tracing::info!("zkpipe daemon stopped");
    Ok(())
}

/// Waits for SIGTERM or SIGINT.
/// Tells systemd (a `Type=notify` unit: `$NOTIFY_SOCKET` set) where the
/// daemon is; nothing when not run by systemd. A failure is logged, never
/// fatal: the daemon serves either way.
fn notify_systemd(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "could not notify systemd");
    }
}

/// SIGTERM and SIGINT, caught from now on: installed before the daemon
/// says it is ready, so a stop sent the moment it is drains it instead of
/// killing it.
struct StopSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn install() -> Result<Self, Error> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignals {
            term: signal(SignalKind::terminate())
                .map_err(|e| Error::Failed(format!("installing a SIGTERM handler: {e}")))?,
            int: signal(SignalKind::interrupt())
                .map_err(|e| Error::Failed(format!("installing a SIGINT handler: {e}")))?,
        })
    }

    async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => tracing::info!("SIGTERM: draining"),
            _ = self.int.recv() => tracing::info!("SIGINT: draining"),
        }
    }
}

/// Stops taking jobs, waits up to `deadline` for running ones, cancels the rest.
async fn drain(daemon: &Arc<Daemon>, deadline: Duration) {
    daemon.start_draining();
    let t0 = Instant::now();
    while daemon.in_flight() > 0 && t0.elapsed() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = daemon.in_flight();
    if left > 0 {
        tracing::warn!(
            jobs = left,
            "drain deadline passed: cancelling the jobs left"
        );
        daemon.cancel_all("cancelled: the daemon is shutting down");
    }
    // Lets callers blocked in Await receive their results before the
    // listeners close.
    tokio::time::sleep(Duration::from_millis(100)).await;
}
