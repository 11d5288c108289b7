//! Optional plain HTTP for scrapers, probes and people: `GET /metrics`
//! (Prometheus text), `GET /status` (the `Status` reply as JSON), and the
//! probes `GET /healthz` (the process answers) and `GET /readyz` (it takes
//! jobs). The probes want no token: they say nothing a token protects,
//! and an orchestrator's probe seldom carries one.

use std::sync::Arc;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::daemon::Daemon;

/// The routes; with `token`, each wants `authorization: Bearer <token>`.
pub fn router(daemon: Arc<Daemon>, token: Option<String>) -> Router {
    let token = Arc::new(token);
    let allowed = move |headers: &HeaderMap, token: &Option<String>| match token {
        None => true,
        Some(t) => crate::listen::bearer_matches(headers, t),
    };
    let metrics = {
        let d = daemon.clone();
        let token = token.clone();
        move |headers: HeaderMap| async move {
            if !allowed(&headers, &token) {
                return unauthorized();
            }
            (
                [(CONTENT_TYPE, "text/plain; version=0.0.4")],
                d.metrics_text(),
            )
                .into_response()
        }
    };
    let ready = {
        let d = daemon.clone();
        move || async move {
            match d.readiness() {
                Ok(()) => (StatusCode::OK, "ready\n".to_string()),
                Err(why) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("not ready: {why}\n"),
                ),
            }
        }
    };
    let status = move |headers: HeaderMap| async move {
        if !allowed(&headers, &token) {
            return unauthorized();
        }
        let body = serde_json::to_string_pretty(&daemon.status())
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        ([(CONTENT_TYPE, "application/json")], body).into_response()
    };
    Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
}

fn unauthorized() -> axum::response::Response {
    (
        StatusCode::UNAUTHORIZED,
        "this daemon wants `authorization: Bearer <token>` (daemon.token_file)\n",
    )
        .into_response()
}
