//! Optional plain HTTP for scrapers and people: `GET /metrics` (Prometheus
//! text) and `GET /status` (the `Status` reply as JSON).

use std::sync::Arc;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::daemon::Daemon;

/// The routes.
pub fn router(daemon: Arc<Daemon>) -> Router {
    let metrics = {
        let d = daemon.clone();
        move || async move {
            (
                [(CONTENT_TYPE, "text/plain; version=0.0.4")],
                d.metrics_text(),
            )
                .into_response()
        }
    };
    let status = move || async move {
        let body = serde_json::to_string_pretty(&daemon.status())
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        ([(CONTENT_TYPE, "application/json")], body).into_response()
    };
    Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
}
