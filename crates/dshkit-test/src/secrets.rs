//! Generated secrets in their public formats, and look-alikes that are not
//! secrets: the corpus the redaction tests and the peer cross-check share. Every
//! run draws new values from a printed seed (`DSHKIT_SECRET_SEED` replays one).

/// A small deterministic generator (xorshift64*).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The seed of this run: `DSHKIT_SECRET_SEED`, else the clock. Printed, so a
    /// failure can be replayed.
    pub fn from_env() -> Self {
        let seed = std::env::var("DSHKIT_SECRET_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| {
                        u64::try_from(d.as_nanos() & u128::from(u64::MAX)).unwrap_or(1)
                    })
            });
        announce(seed);
        Self::new(seed)
    }

    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }
}

#[expect(clippy::print_stderr, reason = "the seed of a failure must be seen")]
fn announce(seed: u64) {
    eprintln!("secret corpus seed: {seed} (replay with DSHKIT_SECRET_SEED={seed})");
}

impl Rng {
    pub fn draw(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// `n` characters drawn from `alphabet`.
    pub fn chars(&mut self, alphabet: &str, n: usize) -> String {
        let alphabet: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| alphabet[usize::try_from(self.draw() % alphabet.len() as u64).unwrap_or(0)])
            .collect()
    }

    pub fn alnum(&mut self, n: usize) -> String {
        self.chars(ALNUM, n)
    }

    pub fn hex(&mut self, n: usize) -> String {
        self.chars("0123456789abcdef", n)
    }

    pub fn digits(&mut self, n: usize) -> String {
        self.chars("0123456789", n)
    }
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const URL_SAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// One secret in context: the family it belongs to, the text it appears in, and
/// the secret itself (what must not survive redaction).
#[derive(Debug, Clone)]
pub struct Sample {
    pub family: &'static str,
    pub line: String,
    pub secret: String,
}

fn sample(family: &'static str, secret: String, context: impl FnOnce(&str) -> String) -> Sample {
    Sample {
        family,
        line: context(&secret),
        secret,
    }
}

/// A 1Password service account token: `ops_` and base64 JSON whose `}`
/// stands alone in its last group (`fQ==`), as secretlint expects it.
fn one_password_token(rng: &mut Rng) -> String {
    let mut json = format!(
        "{{\"email\":\"{}@1passwordserviceaccounts.lcl\",\"muk\":{{\"k\":\"{}\"}},\"srpX\":\"{}\",\"signInAddress\":\"my.1password.com\"",
        rng.chars("abcdefghijklmnopqrstuvwxyz0123456789", 13),
        rng.chars(URL_SAFE, 43),
        rng.hex(64)
    );
    while !json.len().is_multiple_of(3) {
        json.push(' ');
    }
    json.push('}');
    format!("ops_{}", base64(json.as_bytes()))
}

/// Base64 lines of a key's DER as a PEM body holds them: the first starts as
/// DER's SEQUENCE does (`MII`), or as OpenSSH's own format (`openssh-key-v1`),
/// which secretlint checks before it reports a key.
fn key_body(rng: &mut Rng, openssh: bool, lines: usize) -> Vec<String> {
    let start = if openssh {
        "b3BlbnNzaC1rZXktdjEAAAAA"
    } else {
        "MII"
    };
    let mut body: Vec<String> = (0..lines).map(|_| rng.chars(BASE64, 64)).collect();
    body[0] = format!("{start}{}", &body[0][start.len()..]);
    body
}

/// RFC 4648's URL-safe alphabet, in its order (`URL_SAFE` above is a set).
const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `bytes` in unpadded base64url, as JWTs carry their parts.
fn base64url(bytes: &[u8]) -> String {
    encode(bytes, BASE64URL)
}

/// `bytes` in base64 (RFC 4648's first alphabet, `BASE64` above), padded.
fn base64(bytes: &[u8]) -> String {
    let mut out = encode(bytes, BASE64.as_bytes());
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// `bytes` in the 64 characters of `alphabet`, unpadded.
fn encode(bytes: &[u8], alphabet: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            let index = usize::try_from(n >> (18 - 6 * i) & 63).unwrap_or(0);
            out.push(char::from(alphabet[index]));
        }
    }
    out
}

fn pem(rng: &mut Rng, kind: &str) -> String {
    let body = key_body(rng, kind == "OPENSSH ", 6);
    format!(
        "-----BEGIN {kind}PRIVATE KEY-----\n{}\n-----END {kind}PRIVATE KEY-----",
        body.join("\n")
    )
}

/// One secret of every family the redaction covers, with fresh random values.
#[expect(clippy::too_many_lines, reason = "one line per token family")]
pub fn secret_corpus(rng: &mut Rng) -> Vec<Sample> {
    let mut samples = vec![
        sample("github", format!("ghp_{}", rng.alnum(36)), |s| {
            format!("GITHUB_TOKEN {s}")
        }),
        sample("github", format!("gho_{}", rng.alnum(36)), |s| {
            format!("oauth {s}")
        }),
        sample(
            "github",
            format!("github_pat_{}", rng.chars(&format!("{ALNUM}_"), 82)),
            |s| format!("pat: {s}"),
        ),
        sample("gitlab", format!("glpat-{}", rng.chars(URL_SAFE, 20)), |s| {
            format!("gitlab token {s}")
        }),
        sample(
            "aws-access-key",
            format!("AKIA{}", rng.chars(UPPER_ALNUM, 16)),
            |s| format!("aws_access_key_id = {s}"),
        ),
        sample("aws-secret-key", rng.chars(BASE64, 40), |s| {
            format!("aws_secret_access_key={s}")
        }),
        sample("stripe", format!("sk_live_{}", rng.alnum(24)), |s| {
            format!("stripe {s}")
        }),
        sample("stripe", format!("rk_live_{}", rng.alnum(24)), |s| {
            format!("restricted {s}")
        }),
        sample("npm", format!("npm_{}", rng.alnum(36)), |s| {
            format!("//registry.npmjs.org/:_authToken {s}")
        }),
        sample(
            "pypi",
            format!("pypi-AgEIcHlwaS5vcmc{}", rng.chars(URL_SAFE, 70)),
            |s| format!("pypi upload {s}"),
        ),
        sample("huggingface", format!("hf_{}", rng.chars(LETTERS, 34)), |s| {
            format!("hub {s}")
        }),
        sample(
            "sendgrid",
            format!("SG.{}.{}", rng.chars(URL_SAFE, 22), rng.chars(URL_SAFE, 43)),
            |s| format!("sendgrid {s}"),
        ),
        sample("twilio", format!("SK{}", rng.hex(32)), |s| {
            format!("twilio api key {s}")
        }),
        sample("twilio", format!("AC{}", rng.hex(32)), |s| {
            format!("twilio account {s}")
        }),
        sample(
            "slack",
            format!("xoxb-{}-{}-{}", rng.digits(12), rng.digits(13), rng.alnum(24)),
            |s| format!("slack bot {s}"),
        ),
        sample(
            "slack-webhook",
            format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                rng.chars(UPPER_ALNUM, 8),
                rng.chars(UPPER_ALNUM, 10),
                rng.alnum(24)
            ),
            |s| format!("notify {s}"),
        ),
        sample("private-key", pem(rng, "RSA "), |s| format!("key file:\n{s}\n")),
        sample("private-key", pem(rng, "EC "), ToOwned::to_owned),
        sample("private-key", pem(rng, "OPENSSH "), ToOwned::to_owned),
        sample("private-key", pem(rng, ""), ToOwned::to_owned),
        sample("azure-storage-key", format!("{}==", rng.chars(BASE64, 86)), |s| {
            format!(
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net"
            )
        }),
        sample("connection-string", rng.alnum(14), |s| {
            format!("Server=tcp:db.internal,1433;Database=app;User Id=sa;Password={s};")
        }),
        sample("password", rng.alnum(10), |s| format!("password={s}")),
        sample("password", rng.alnum(9), |s| format!("DB_PASSWORD: {s}")),
        sample("openai", format!("sk-proj-{}", rng.chars(URL_SAFE, 48)), |s| {
            format!("OPENAI_API_KEY={s}")
        }),
        sample(
            "anthropic",
            format!("sk-ant-api03-{}AA", rng.chars(URL_SAFE, 93)),
            |s| format!("anthropic {s}"),
        ),
        sample("deepseek", format!("sk-{}", rng.hex(32)), |s| {
            format!("deepseek {s}")
        }),
        sample("google", format!("AIza{}", rng.chars(URL_SAFE, 35)), |s| {
            format!("maps key {s}")
        }),
        sample("groq", format!("gsk_{}", rng.alnum(52)), |s| format!("groq {s}")),
        sample("mistral", rng.alnum(32), |s| format!("MISTRAL_API_KEY={s}")),
        sample(
            "jwt",
            format!(
                "eyJhbGciOiJIUzI1NiJ9.{}.{}",
                base64url(
                    format!(
                        "{{\"sub\":\"{}\",\"name\":\"{}\"}}",
                        rng.digits(10),
                        rng.alnum(12)
                    )
                    .as_bytes()
                ),
                rng.chars(URL_SAFE, 43)
            ),
            |s| format!("session {s}"),
        ),
        sample("bearer", rng.alnum(32), |s| format!("Authorization: Bearer {s}")),
        sample("basic-auth", rng.alnum(16), |s| {
            format!("https://deploy:{s}@git.example.com/repo.git")
        }),
        sample(
            "discord-bot-token",
            format!(
                "M{}.{}.{}",
                rng.chars(URL_SAFE, 23),
                rng.chars(URL_SAFE, 6),
                rng.chars(URL_SAFE, 27)
            ),
            |s| format!("discord bot {s}"),
        ),
        sample(
            "discord-webhook",
            format!(
                "https://discord.com/api/webhooks/{}/{}",
                rng.digits(18),
                rng.chars(URL_SAFE, 68)
            ),
            |s| format!("hook {s}"),
        ),
        sample(
            "telegram-bot",
            format!("{}:AA{}", rng.digits(9), rng.chars(URL_SAFE, 33)),
            |s| format!("telegram {s}"),
        ),
        sample("digitalocean", format!("dop_v1_{}", rng.hex(64)), |s| {
            format!("do {s}")
        }),
        sample("shopify", format!("shpat_{}", rng.hex(32)), |s| {
            format!("shopify {s}")
        }),
        sample(
            "atlassian",
            format!("ATATT3{}", rng.chars(&format!("{URL_SAFE}="), 186)),
            |s| format!("jira {s}"),
        ),
        sample(
            "mailchimp",
            format!("{}-us{}", rng.hex(32), 1 + rng.draw() % 20),
            |s| format!("mailchimp {s}"),
        ),
        sample("square", format!("sq0csp-{}", rng.chars(URL_SAFE, 43)), |s| {
            format!("square {s}")
        }),
        sample("artifactory", format!("AKC{}", rng.alnum(60)), |s| {
            format!("artifactory: {s}")
        }),
        sample("databricks", format!("dapi{}", rng.hex(32)), |s| {
            format!("databricks {s}")
        }),
        sample("docker", format!("dckr_pat_{}", rng.chars(URL_SAFE, 27)), |s| {
            format!("docker {s}")
        }),
        sample("figma", format!("figd_{}", rng.chars(URL_SAFE, 40)), |s| {
            format!("figma {s}")
        }),
        sample("grafana", format!("glsa_{}_{}", rng.alnum(32), rng.hex(8)), |s| {
            format!("grafana {s}")
        }),
        sample(
            "hashicorp-vault",
            format!("hvs.{}", rng.chars(URL_SAFE, 95)),
            |s| format!("vault {s}"),
        ),
        sample("linear", format!("lin_api_{}", rng.alnum(40)), |s| {
            format!("linear {s}")
        }),
        sample(
            "notion",
            format!("ntn_{}{}", rng.digits(11), rng.alnum(35)),
            |s| format!("notion {s}"),
        ),
        sample(
            "tailscale",
            format!("tskey-auth-{}-{}", rng.alnum(12), rng.alnum(32)),
            |s| format!("tailscale {s}"),
        ),
        sample("vercel", format!("vcp_{}", rng.alnum(24)), |s| {
            format!("vercel {s}")
        }),
        sample(
            "cloudflare",
            format!("cfut_{}{}", rng.alnum(40), rng.hex(8)),
            |s| format!("cloudflare {s}"),
        ),
        // A service account token is base64 JSON: it ends as `}` does (`fQ`).
        sample("1password", one_password_token(rng), |s| format!("op {s}")),
        sample("env-assignment", rng.hex(32), |s| format!("API_KEY={s}")),
        sample("yaml-assignment", rng.alnum(30), |s| {
            format!("client_secret: {s}")
        }),
    ];
    // A GCP service account key file, as JSON text.
    let body = key_body(rng, false, 4).join("\\n");
    let key_id = rng.hex(40);
    samples.push(Sample {
        family: "gcp-service-account",
        line: format!(
            "{{\"type\": \"service_account\", \"project_id\": \"demo\", \"private_key_id\": \"{key_id}\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n\", \"client_email\": \"svc@demo.iam.gserviceaccount.com\"}}"
        ),
        secret: body,
    });
    samples.extend(maintained_set_samples(rng));
    samples.extend(high_entropy_samples(rng));
    samples
}

/// A UUID (version 4).
fn uuid(rng: &mut Rng) -> String {
    format!(
        "{}-{}-4{}-a{}-{}",
        rng.hex(8),
        rng.hex(4),
        rng.hex(3),
        rng.hex(3),
        rng.hex(12)
    )
}

/// Shapes the maintained scanners name that the list above lacks: read from
/// secretlint's recommended preset (13.0.7) and detect-secrets' plugins
/// (1.5.0), in the forms their rules match.
fn maintained_set_samples(rng: &mut Rng) -> Vec<Sample> {
    let account = rng.chars("abcdefghijklmnopqrstuvwxyz", 10);
    vec![
        // Both judges know OpenAI's keys by the `T3BlbkFJ` in their middle.
        sample(
            "openai",
            format!("sk-{}T3BlbkFJ{}", rng.alnum(20), rng.alnum(20)),
            |s| format!("openai legacy {s}"),
        ),
        sample(
            "openai",
            format!("sk-proj-{}T3BlbkFJ{}", rng.chars(URL_SAFE, 74), rng.alnum(74)),
            |s| format!("OPENAI_API_KEY={s}"),
        ),
        sample("stripe", format!("sk_test_{}", rng.alnum(24)), |s| {
            format!("stripe test {s}")
        }),
        sample("npmrc-auth-token", uuid(rng), |s| {
            format!("//registry.npmjs.org/:_authToken={s}")
        }),
        sample("database-url", rng.alnum(16), |s| {
            format!("mongodb+srv://app:{s}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true")
        }),
        sample("database-url", rng.alnum(16), |s| {
            format!("DATABASE_URL=mysql://root:{s}@db.internal:3306/app")
        }),
        sample("cloudant", rng.hex(64), |s| {
            format!("https://{account}:{s}@{account}.cloudant.com")
        }),
        sample(
            "softlayer",
            rng.chars("abcdefghijklmnopqrstuvwxyz0123456789", 64),
            |s| format!("https://api.softlayer.com/soap/v3.1/{s}"),
        ),
        sample("ibm-cos-hmac", rng.hex(48), |s| {
            format!("cos_hmac_secret_access_key = {s}")
        }),
        // detect-secrets' KeywordDetector: its names, quoted values.
        sample("keyword-assignment", rng.alnum(16), |s| {
            format!("db_pass = \"{s}\"")
        }),
        sample("keyword-assignment", rng.alnum(24), |s| {
            format!("service_key: \"{s}\"")
        }),
        sample("keyword-assignment", rng.alnum(24), |s| {
            format!("client_key = \"{s}\"")
        }),
        sample("keyword-assignment", rng.alnum(12), |s| {
            format!("contraseña = \"{s}\"")
        }),
    ]
}

/// Random values under names no token format covers, for the entropy rule
/// (detect-secrets' Base64 and Hex high-entropy plugins judge the quoted ones),
/// and the secret-named assignments it sits behind.
fn high_entropy_samples(rng: &mut Rng) -> Vec<Sample> {
    vec![
        sample("high-entropy", rng.chars(BASE64, 40), |s| {
            format!("SIGNING_KEY=\"{s}\"")
        }),
        sample("high-entropy", rng.hex(40), |s| {
            format!("{{\"clientKey\": \"{s}\"}}")
        }),
        sample("high-entropy", rng.chars(URL_SAFE, 32), |s| {
            format!("x-webhook-key: {s}")
        }),
        sample("high-entropy", rng.chars(URL_SAFE, 44), |s| {
            format!("IBM_CLOUD_IAM_KEY={s}")
        }),
        sample("secret-assignment", rng.chars(BASE64, 40), |s| {
            format!("{{\"client_secret\": \"{s}\"}}")
        }),
        sample("secret-assignment", rng.hex(40), |s| format!("TOKEN={s}")),
        sample("secret-assignment", rng.chars(URL_SAFE, 32), |s| {
            format!("x-api-key: {s}")
        }),
    ]
}

/// Values that look like secrets to a careless scanner but are ordinary data:
/// they must survive redaction verbatim.
pub fn lookalikes(rng: &mut Rng) -> Vec<String> {
    let uuid = uuid(rng);
    let mut clean = high_entropy_lookalikes(rng);
    clean.extend([
        format!("commit {}", rng.hex(40)),
        format!("id {uuid}"),
        format!("sha256:{}", rng.hex(64)),
        format!("sha512-{}", rng.hex(128)),
        format!("integrity sha512-{}==", rng.chars(BASE64, 86)),
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABQAAAAUCAYAAACNiR0NAAAAKklEQVR4nGNgGAWjYBSMglEwCkbBKBgFo2AUjIJRMApGwSgYBaNgFIyCUTAKAO1FAUG4ed9xAAAAAElFTkSuQmCC".to_owned(),
        format!("version {}.{}.{}-rc.{}", rng.draw() % 10, rng.draw() % 40, rng.draw() % 99, rng.draw() % 9),
        "released 2026-12-01T06:25:36.123Z".to_owned(),
        "The quick brown fox jumps over the lazy dog; passwords must be long.".to_owned(),
        "pip install scikit-learn; import sk-learn alias".to_owned(),
        "the password field is required".to_owned(),
        "token count: 4096, max tokens 8192".to_owned(),
        "{\"progressToken\": 7, \"total\": 2}".to_owned(),
        "API key missing: set OPENAI_API_KEY".to_owned(),
        "password: ${DB_PASSWORD}".to_owned(),
        "secret: <your-secret-here>".to_owned(),
        format!("https://example.com/items/{}?page=2&sort=asc", rng.digits(6)),
        "mailto:someone@example.com".to_owned(),
        format!("md5 {}", rng.hex(32)),
        "SGVsbG8sIHdvcmxkIQ==".to_owned(),
        format!("request-id: req_{}", rng.alnum(12)),
        "Echo: hello from the cassette".to_owned(),
        "ACME Corp ships SKUs every Monday".to_owned(),
        "AKIA is the prefix of AWS access key ids".to_owned(),
        "The APACHE license; APPROVED; APPLICATION".to_owned(),
    ]);
    clean
}

/// Random values under names that are not secret, and plain values under
/// names that are: the entropy rule leaves them as they are.
fn high_entropy_lookalikes(rng: &mut Rng) -> Vec<String> {
    vec![
        format!(
            "{{\"sha\": \"{}\", \"etag\": \"W/\\\"{}\\\"\", \"integrity\": \"sha512-{}==\"}}",
            rng.hex(40),
            rng.hex(32),
            rng.chars(BASE64, 86)
        ),
        format!("sha: {}", rng.hex(40)),
        format!("ETag: \"{}\"", rng.hex(32)),
        format!("{{\"checksum\": \"{}\", \"digest\": \"sha256:{}\"}}", rng.hex(64), rng.hex(64)),
        format!("{{\"blob\": \"q{}\"}}", rng.chars(BASE64, 43)),
        format!("{{\"idempotencyKey\": \"{}\", \"requestId\": \"{}\"}}", uuid(rng), uuid(rng)),
        "{\"primaryKey\": \"user-settings-profile-2\", \"sortKey\": \"created_at_timestamp_desc\"}".to_owned(),
        "{\"cacheKey\": \"1.2.3-rc.4+build.20261207\", \"version\": \"1.2.3-rc.4+build.20261207\"}".to_owned(),
        "{\"thumbnailKey\": \"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABQAAAAUCAYAAACNiR0NAAAAKklEQVR4nGNgGAWjYBSMglEwCkbBKBgFo2AUjIJRMApGwSgYBaNgFIyCUTAKAO1FAUG4ed9xAAAAAElFTkSuQmCC\"}".to_owned(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_base64url_encode_as_rfc_4648_does() {
        // RFC 4648's test vectors, unpadded, in the URL-safe alphabet.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
            ("{\"sub\":\"1\"}", "eyJzdWIiOiIxIn0"),
        ] {
            assert_eq!(base64url(plain.as_bytes()), encoded);
        }
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
        assert_eq!(base64(b"fooba"), "Zm9vYmE=");
        assert!(one_password_token(&mut Rng::new(7)).ends_with("fQ=="));
    }
}
