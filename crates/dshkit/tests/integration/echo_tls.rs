//! `dshkit echo` against an `https://` MCP server: the real server-everything
//! (Streamable HTTP) behind a TLS front (Node's TLS) whose certificate a CA made
//! in the test signed; and servers that cannot be reached, each with its own
//! error and exit code, never a missing answer.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dshkit_test::{ChildGuard, Peers, spawn_ready};

use crate::echo::{sdk_session, sdk_session_http};
use crate::support::{Home, dshkit, dshkit_command, everything_http, free_port, output, stdout_json};

/// The exit code of a server that cannot be reached (docs/mcp.md, `exit.rs`).
const UNREACHABLE: i32 = 6;

/// A CA and a server certificate for 127.0.0.1 it signed, made by the openssl
/// command line in `dir`.
struct Certificates {
    ca: PathBuf,
    key: PathBuf,
    cert: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("openssl is needed to make test certificates ({e}): apt-get install openssl")
        });
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn make_certificates(dir: &Path, name: &str) -> Certificates {
    let dir = dir.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=dshkit test CA"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(&dir, &ca);
    let mut request = vec![
        "req",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ];
    request.extend(ec);
    openssl(&dir, &request);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
    Certificates {
        ca: dir.join("ca.pem"),
        key: dir.join("server.key"),
        cert: dir.join("server.pem"),
    }
}

/// A TLS front on a free loopback port for the plain server on `upstream_port`,
/// once it listens; returns its guard and its `https://…/mcp` URL.
fn tls_front(peers: &Peers, certificates: &Certificates, upstream_port: u16) -> (ChildGuard, String) {
    let (guard, url) = spawn_ready(
        Command::new(peers.node())
            .arg(peers.script("tls-front.mjs"))
            .arg(&certificates.key)
            .arg(&certificates.cert)
            .arg(upstream_port.to_string()),
        "tls-front: ",
        Duration::from_secs(20),
    );
    (guard, url.trim().to_owned())
}

fn port_of(url: &str) -> u16 {
    let authority = url.split('/').nth(2).unwrap();
    authority.rsplit(':').next().unwrap().parse().unwrap()
}

/// How a test tells dshkit to trust the CA.
#[derive(Debug, Clone, Copy)]
enum Trust {
    SslCertFile,
    CaFile,
}

impl Trust {
    fn apply(self, command: &mut Command, ca: &Path) {
        match self {
            Self::SslCertFile => {
                command.env("SSL_CERT_FILE", ca);
            }
            Self::CaFile => {
                command.arg("--ca-file").arg(ca);
            }
        }
    }
}

#[test]
fn an_https_server_is_recorded_trusting_ssl_cert_file_or_ca_file_and_replays_identically() {
    let peers = Peers::get();
    let dir = Home::new();
    let certificates = make_certificates(dir.path(), "pki");
    let (mut server, server_url) = everything_http(&peers);
    let (_front, https_url) = tls_front(&peers, &certificates, port_of(&server_url));
    assert!(https_url.starts_with("https://127.0.0.1:"), "{https_url}");
    let bin = dshkit();
    for trust in [Trust::SslCertFile, Trust::CaFile] {
        let cassette = dir.path().join(format!("{trust:?}.jsonl"));
        let mut record = dshkit_command(dir.path());
        record
            .args(["echo", "record", "--http", &https_url, "-o"])
            .arg(&cassette);
        trust.apply(&mut record, &certificates.ca);
        let (mut proxy, ready) = spawn_ready(&mut record, "dshkit echo: ", Duration::from_secs(20));
        let mut live = sdk_session_http(&peers, dir.path(), ready.trim());
        let status = proxy
            .interrupt(Duration::from_secs(10))
            .expect("the recorder did not stop on SIGINT");
        assert!(status.success(), "{trust:?}: {status:?}");

        let inspect = stdout_json(&dir.run(["--json", "echo", "inspect", cassette.to_str().unwrap()]));
        assert_eq!(inspect["header"]["transport"], "http", "{trust:?}");
        assert_eq!(
            inspect["header"]["serverInfo"]["name"], "mcp-servers/everything",
            "{trust:?}"
        );
        let mut replayed = sdk_session(
            &peers,
            dir.path(),
            &[
                bin.to_str().unwrap(),
                "echo",
                "replay",
                cassette.to_str().unwrap(),
            ],
        );
        let (_, progress) = (live["progress"].take(), replayed["progress"].take());
        assert_eq!(
            live, replayed,
            "{trust:?}: recorded over https, replayed: the same results"
        );
        assert_eq!(progress.as_array().unwrap().len(), 2, "{trust:?}: {progress}");

        // The same server verifies over https, trusted the same way.
        let mut verify = dshkit_command(dir.path());
        verify
            .args(["--json", "echo", "verify"])
            .arg(&cassette)
            .args(["--url", &https_url]);
        trust.apply(&mut verify, &certificates.ca);
        let out = output(&mut verify);
        let report = stdout_json(&out);
        assert!(report["checks"].as_array().unwrap().len() >= 6, "{report}");
        assert_eq!(out.status.code(), Some(0), "{trust:?}: {report:#}");
    }
    let _ = server.terminate(Duration::from_secs(5));
}

/// A cassette of one `ping`, for a verification that never gets to send it.
fn one_ping(dir: &Path) -> PathBuf {
    let cassette = dir.join("ping.jsonl");
    let header = r#"{"type":"header","formatVersion":1,"recorder":"test","transport":"http","era":"2025","protocolVersion":"2025-11-25","serverInfo":{"name":"s","version":"1"},"redacted":true,"createdAt":0}"#;
    let ping = r#"{"type":"interaction","ordinal":1,"request":{"jsonrpc":"2.0","id":1,"method":"ping"},"responses":[{"jsonrpc":"2.0","id":1,"result":{}}],"ms":1}"#;
    std::fs::write(&cassette, format!("{header}\n{ping}\n")).unwrap();
    cassette
}

/// `echo verify` and `echo record --http` against `url`, neither trusting any
/// CA but the system's: each must fail with exit 6 and a message that names
/// the URL and holds `words`; the recorder never binds.
fn assert_unreachable(dir: &Home, url: &str, words: &str) {
    let cassette = one_ping(dir.path());
    let verify = output(
        dshkit_command(dir.path())
            .args(["echo", "verify"])
            .arg(&cassette)
            .args(["--url", url]),
    );
    let stderr = String::from_utf8_lossy(&verify.stderr);
    assert_eq!(verify.status.code(), Some(UNREACHABLE), "verify {url}: {stderr}");
    assert!(stderr.contains(&format!("cannot reach {url}: ")), "{stderr}");
    assert!(stderr.contains(words), "verify {url}: {stderr}");
    assert!(
        !stderr.contains("MISSING") && verify.stdout.is_empty(),
        "{stderr}"
    );

    let recorded = dir.path().join("never.jsonl");
    let record = output(
        dshkit_command(dir.path())
            .args(["echo", "record", "--http", url, "-o"])
            .arg(&recorded),
    );
    let stderr = String::from_utf8_lossy(&record.stderr);
    assert_eq!(record.status.code(), Some(UNREACHABLE), "record {url}: {stderr}");
    assert!(stderr.contains(&format!("cannot reach {url}: ")), "{stderr}");
    assert!(stderr.contains(words), "record {url}: {stderr}");
    assert!(record.stdout.is_empty(), "no proxy was announced");
    assert!(!recorded.exists(), "no cassette for a server never reached");
}

#[test]
fn a_refused_port_is_unreachable_with_its_own_exit_code_never_a_missing_answer() {
    let dir = Home::new();
    let port = free_port();
    for scheme in ["http", "https"] {
        assert_unreachable(
            &dir,
            &format!("{scheme}://127.0.0.1:{port}/mcp"),
            "the connection was refused",
        );
    }
}

#[test]
fn an_untrusted_certificate_is_unreachable_and_says_how_to_trust_it() {
    let peers = Peers::get();
    let dir = Home::new();
    let certificates = make_certificates(dir.path(), "pki");
    let (mut server, server_url) = everything_http(&peers);
    let (_front, https_url) = tls_front(&peers, &certificates, port_of(&server_url));
    assert_unreachable(&dir, &https_url, "its TLS certificate is not trusted");
    let verify = output(
        dshkit_command(dir.path())
            .args(["echo", "verify"])
            .arg(one_ping(dir.path()))
            .args(["--url", &https_url]),
    );
    let stderr = String::from_utf8_lossy(&verify.stderr);
    assert!(stderr.contains("--ca-file PATH or SSL_CERT_FILE"), "{stderr}");
    // A CA that did not sign it is no better.
    let other = make_certificates(dir.path(), "other");
    let out = output(
        dshkit_command(dir.path())
            .args(["echo", "verify"])
            .arg(one_ping(dir.path()))
            .args(["--url", &https_url, "--ca-file"])
            .arg(&other.ca),
    );
    assert_eq!(
        out.status.code(),
        Some(UNREACHABLE),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = server.terminate(Duration::from_secs(5));
}
