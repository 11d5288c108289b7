//! TLS to a throwaway PostgreSQL that accepts TLS connections only, with
//! certificates made here: libpq's `sslmode` meanings, and no password in
//! any message.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use zkpipe_fleet::testing::{ServerTls, TestPostgres};
use zkpipe_fleet::{Error, JobState, NewJob, NodeInfo, Queue, QueueConfig};

const PASSWORD: &str = "tls-only-s3cret";

type Ca = CertifiedIssuer<'static, KeyPair>;

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

/// A server certificate for `127.0.0.1` signed by `ca`.
fn server_tls(ca: &Ca) -> ServerTls {
    let key = KeyPair::generate().unwrap();
    let params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = params.signed_by(&key, ca).unwrap();
    ServerTls {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        client_ca_pem: None,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn config() -> QueueConfig {
    QueueConfig {
        connect_timeout: Duration::from_secs(5),
        ..QueueConfig::default()
    }
}

/// The cluster's URL with the password and `query` added.
fn url(pg: &TestPostgres, host: &str, query: &str) -> String {
    format!(
        "postgres://zkpipe:{PASSWORD}@{host}:{}/postgres?{query}",
        pg.port()
    )
}

/// A cluster serving a certificate from its own CA, and that CA's file.
fn tls_cluster() -> Option<(TestPostgres, PathBuf)> {
    let ca = ca("zkpipe test CA");
    let pg = TestPostgres::start_with_tls_or_skip(Some(PASSWORD), &server_tls(&ca))?;
    let dir = pg.scratch_dir("client").unwrap();
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    Some((pg, ca_file))
}

/// Connecting fails; returns the message, checked to hold no password.
async fn refused(url: &str) -> Error {
    let e = Queue::connect(url, config())
        .await
        .expect_err("connection must be refused");
    for shown in [e.to_string(), format!("{e:?}")] {
        assert!(!shown.contains(PASSWORD), "password shown: {shown}");
    }
    eprintln!("refused as expected: {e}");
    e
}

/// Submit, claim and complete one job.
async fn round_trip(q: &Queue) {
    q.migrate().await.expect("migrate");
    let node = NodeInfo {
        id: "tls-node".to_owned(),
        backend: "cpu".to_owned(),
        devices: serde_json::json!([]),
        device_memory: 1 << 30,
        host_memory: 0,
        kinds: vec!["groth16".to_owned()],
        runnable_keys: None,
        resident_keys: vec![],
    };
    q.register(&node).await.expect("register");
    let id = q
        .submit(&NewJob::new("groth16", "sha256-1", b"witness".to_vec()))
        .await
        .expect("submit")
        .id;
    let job = q.claim(&node).await.expect("claim").expect("a job");
    assert_eq!(job.id, id);
    q.complete(&node.id, job.lease(), b"proof", &serde_json::json!({}))
        .await
        .expect("complete");
    let r = q.job(id).await.expect("job");
    assert_eq!(r.state, JobState::Succeeded);
    assert_eq!(r.result.as_deref(), Some(&b"proof"[..]));
}

#[tokio::test]
async fn verify_full_with_the_right_ca_runs_a_job() {
    let Some((pg, ca_file)) = tls_cluster() else {
        return;
    };
    let u = url(
        &pg,
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={}", ca_file.display()),
    );
    let q = Queue::connect(&u, config()).await.expect("connect");
    round_trip(&q).await;
    // The listening connection uses TLS too: a wait sees the job end.
    let id = q
        .submit(&NewJob::new("groth16", "sha256-1", b"other".to_vec()))
        .await
        .unwrap()
        .id;
    assert!(q.cancel(id, "test").await.unwrap());
    let r = q.await_job(id, Duration::from_secs(10)).await.unwrap();
    assert_eq!(r.state, JobState::Cancelled);
}

#[tokio::test]
async fn verify_full_with_another_ca_is_refused() {
    let Some((pg, _)) = tls_cluster() else {
        return;
    };
    let other = write(
        &pg.scratch_dir("other").unwrap(),
        "ca.pem",
        &ca("another CA").pem(),
    );
    for mode in ["verify-full", "verify-ca"] {
        let u = url(
            &pg,
            "127.0.0.1",
            &format!("sslmode={mode}&sslrootcert={}", other.display()),
        );
        let e = refused(&u).await;
        let m = e.to_string();
        assert!(
            m.contains("certificate") && m.contains("UnknownIssuer"),
            "{m}"
        );
    }
}

#[tokio::test]
async fn verify_full_with_a_host_name_not_in_the_certificate_is_refused() {
    let Some((pg, ca_file)) = tls_cluster() else {
        return;
    };
    // The TLS name is `host`; the connection goes to `hostaddr`.
    let query = |mode: &str| {
        format!(
            "hostaddr=127.0.0.1&sslmode={mode}&sslrootcert={}",
            ca_file.display()
        )
    };
    let e = refused(&url(&pg, "db.example", &query("verify-full"))).await;
    let m = e.to_string();
    assert!(m.contains("certificate") && m.contains("name"), "{m}");
    // verify-ca checks the chain only.
    let q = Queue::connect(&url(&pg, "db.example", &query("verify-ca")), config())
        .await
        .expect("verify-ca ignores the name");
    q.migrate().await.unwrap();
}

#[tokio::test]
async fn require_connects_without_a_ca_and_disable_is_refused() {
    let Some((pg, _)) = tls_cluster() else {
        return;
    };
    let q = Queue::connect(&url(&pg, "127.0.0.1", "sslmode=require"), config())
        .await
        .expect("require: no certificate check");
    round_trip(&q).await;
    // The default, prefer, uses TLS when offered (the server accepts
    // nothing else).
    let q = Queue::connect(&url(&pg, "127.0.0.1", "connect_timeout=5"), config())
        .await
        .expect("prefer");
    q.migrate().await.unwrap();
    // The cluster accepts TLS only: plain TCP proves TLS was used above.
    let e = refused(&url(&pg, "127.0.0.1", "sslmode=disable")).await;
    assert!(e.to_string().contains("no encryption"), "{e}");
}

#[tokio::test]
async fn verify_full_against_a_server_without_tls_is_refused() {
    let Some(pg) = TestPostgres::start_with_password_or_skip(PASSWORD) else {
        return;
    };
    let ca_file = write(
        &pg.scratch_dir("client").unwrap(),
        "ca.pem",
        &ca("CA").pem(),
    );
    let u = url(
        &pg,
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={}", ca_file.display()),
    );
    let e = refused(&u).await;
    assert!(e.to_string().contains("TLS"), "{e}");
    // prefer falls back to plain TCP.
    let q = Queue::connect(&url(&pg, "127.0.0.1", "sslmode=prefer"), config())
        .await
        .expect("prefer without TLS");
    q.migrate().await.unwrap();
}

#[tokio::test]
async fn verify_full_without_a_root_certificate_is_refused_early() {
    let e = Queue::new(
        "postgres://u:hunter2@db.example/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        QueueConfig::default(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[tokio::test]
async fn a_client_certificate_is_shown_when_given() {
    let server_ca = ca("server CA");
    let client_ca = ca("client CA");
    let tls = ServerTls {
        client_ca_pem: Some(client_ca.pem()),
        ..server_tls(&server_ca)
    };
    let Some(pg) = TestPostgres::start_with_tls_or_skip(Some(PASSWORD), &tls) else {
        return;
    };
    let dir = pg.scratch_dir("client").unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, "zkpipe");
    let cert = write(
        &dir,
        "client.crt",
        &params.signed_by(&key, &client_ca).unwrap().pem(),
    );
    let key_file = write(&dir, "client.key", &key.serialize_pem());
    let with_cert = format!(
        "sslmode=require&sslcert={}&sslkey={}",
        cert.display(),
        key_file.display()
    );
    use std::os::unix::fs::PermissionsExt;
    // A key file others may read is refused before connecting.
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Queue::new(&url(&pg, "127.0.0.1", &with_cert), config()).unwrap_err();
    assert!(
        matches!(e, Error::InvalidInput(_)) && e.to_string().contains("chmod 600"),
        "{e}"
    );
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let q = Queue::connect(&url(&pg, "127.0.0.1", &with_cert), config())
        .await
        .expect("connect with a client certificate");
    q.migrate().await.unwrap();
    let e = refused(&url(&pg, "127.0.0.1", "sslmode=require")).await;
    assert!(e.to_string().contains("certificate"), "{e}");
}
