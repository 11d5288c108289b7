//! What the CLI test files share: the binary, pointed at this build's plugins.
//! The daemon's process tests (`daemon/tests/serve.rs`) include this folder
//! by path, so that the two share one copy.
#![allow(dead_code)]

pub mod binary;
pub mod circom_files;
pub mod filecoin_fixtures;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use zkpipe_core::groth16::{self, KeyInfo, KeyStore, PreparedVerifyingKey, Proof, VerifyingKey};
use zkpipe_daemon::proto;

/// Where `cargo test --workspace` put the plugins (next to the test binary).
pub fn plugin_dir() -> PathBuf {
    std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `zkpipe --plugin-dir <this build>`, with no plugin folders from the
/// environment.
pub fn zkpipe_command() -> Command {
    let mut cmd = Command::new(binary::zkpipe_binary());
    cmd.arg("--plugin-dir")
        .arg(plugin_dir())
        .env_remove("ZKPIPE_PLUGIN_PATH");
    cmd
}

/// The prepared verifying key of a built-in circuit's cached test keys.
pub fn pvk(keys: &Path, circuit: &str, size: &str) -> PreparedVerifyingKey {
    let entry = KeyStore::new(keys.join("keys")).entry(&KeyInfo {
        circuit: circuit.into(),
        size: size.into(),
        synthetic: false,
    });
    PreparedVerifyingKey::new(&VerifyingKey::load(&entry.join("vk.bin")).unwrap())
}

/// Whether a returned proof verifies with its public inputs.
pub fn verifies(pvk: &PreparedVerifyingKey, p: &proto::PartitionProof) -> bool {
    let proof = Proof::from_bytes(&p.proof).unwrap();
    let inputs: Vec<_> = p
        .public_inputs
        .iter()
        .map(|s| groth16::fr_from_decimal(s).unwrap())
        .collect();
    groth16::verify(pvk, &proof, &inputs).unwrap()
}

/// Spawns `cmd`; its stdout lines arrive on the channel.
pub fn spawn_with_lines(mut cmd: Command) -> (Child, mpsc::Receiver<String>) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// A CA, a server certificate for localhost and 127.0.0.1, and a client
/// certificate, all PEM, written under `dir`: (ca, cert, key, client cert,
/// client key).
pub fn tls_files(dir: &Path) -> [PathBuf; 5] {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let signed = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = signed(vec!["localhost".into(), "127.0.0.1".into()]);
    let (client_cert, client_key) = signed(vec!["client".into()]);
    let files = [
        ("ca.pem", ca.pem()),
        ("server.pem", server_cert),
        ("server.key", server_key),
        ("client.pem", client_cert),
        ("client.key", client_key),
    ];
    files.map(|(name, text)| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    })
}
