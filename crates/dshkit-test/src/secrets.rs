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

fn pem(rng: &mut Rng, kind: &str) -> String {
    let body: Vec<String> = (0..6).map(|_| rng.chars(BASE64, 64)).collect();
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
                "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
                rng.chars(URL_SAFE, 30),
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
        sample("1password", format!("ops_ey{}", rng.chars(BASE64, 260)), |s| {
            format!("op {s}")
        }),
        sample("env-assignment", rng.hex(32), |s| format!("API_KEY={s}")),
        sample("yaml-assignment", rng.alnum(30), |s| {
            format!("client_secret: {s}")
        }),
    ];
    // A GCP service account key file, as JSON text.
    let body = (0..4)
        .map(|_| rng.chars(BASE64, 64))
        .collect::<Vec<_>>()
        .join("\\n");
    let key_id = rng.hex(40);
    samples.push(Sample {
        family: "gcp-service-account",
        line: format!(
            "{{\"type\": \"service_account\", \"project_id\": \"demo\", \"private_key_id\": \"{key_id}\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n\", \"client_email\": \"svc@demo.iam.gserviceaccount.com\"}}"
        ),
        secret: body,
    });
    samples
}

/// Values that look like secrets to a careless scanner but are ordinary data:
/// they must survive redaction verbatim.
pub fn lookalikes(rng: &mut Rng) -> Vec<String> {
    let uuid = format!(
        "{}-{}-4{}-a{}-{}",
        rng.hex(8),
        rng.hex(4),
        rng.hex(3),
        rng.hex(3),
        rng.hex(12)
    );
    vec![
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
    ]
}
