//! The built-in rules of redaction and the words that make a JSON key secret:
//! data, written from the public token formats (see [`super`]).

/// Words that make a JSON key's value a secret wherever they stand in the key
/// (`auth` and `pwd` only as the whole key).
pub const SECRET_KEY_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "api_key",
    "api-key",
    "apikey",
    "authorization",
    "credential",
    "cookie",
    "private_key",
    "private-key",
    "privatekey",
    "session_id",
    "session-id",
    "sessionid",
    "access_key",
    "access-key",
    "accesskey",
];

/// The built-in rules `(id, keywords, regex)`, most specific first: a secret that
/// one rule replaced is a placeholder for the next.
pub const BUILT_IN: &[(&str, &[&str], &str)] = &[
    // Structural rules.
    (
        "private-key",
        &["PRIVATE KEY"],
        r"(?s)(-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\z))",
    ),
    // The `@` goes with them: `scheme://[REDACTED:…]@host` would read as a
    // user `[REDACTED` with a password to scanners that parse the URL
    // (secretlint's database-connection-string rule does).
    (
        "url-credentials",
        &["://"],
        r#"(?i)\b[a-z][a-z0-9+.-]{1,20}://([^/\s:@'"<>]{1,256}:[^/\s@'"<>]{1,256}@)"#,
    ),
    (
        "azure-storage-key",
        &["accountkey", "sharedaccesskey"],
        r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/]{40,100}={0,2})",
    ),
    (
        "connection-string",
        &["password=", "pwd=", "password =", "pwd ="],
        r#"(?i)(?:^|[;\s"'?&])(?:password|pwd)\s*=\s*([^;"'\s&]{3,})"#,
    ),
    (
        "basic-auth",
        &["basic"],
        r#"(?i)authorization["']?\s*[:=]\s*["']?basic\s+([A-Za-z0-9+/]{8,}={0,2})"#,
    ),
    ("bearer", &["bearer"], r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})"),
    (
        "jwt",
        &["eyJ"],
        r"\b(eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,})",
    ),
    // Tokens with a recognisable prefix.
    (
        "github",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        r"\b((?:gh[pousr]_[A-Za-z0-9_]{36,255})|(?:github_pat_[A-Za-z0-9_]{22,255}))",
    ),
    (
        "gitlab",
        &[
            "glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glft-", "glimt-", "glsoat-", "glagent-",
            "gloas-",
        ],
        r"\b(gl(?:pat|ptt|dt|rt|cbt|ft|imt|soat|agent|oas)-[A-Za-z0-9_-]{20,128})",
    ),
    ("anthropic", &["sk-ant-"], r"\b(sk-ant-[A-Za-z0-9_-]{20,})"),
    ("deepseek", &["sk-"], r"\b(sk-[a-f0-9]{32})\b"),
    (
        "openai",
        &["sk-"],
        r"\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})",
    ),
    ("groq", &["gsk_"], r"\b(gsk_[A-Za-z0-9]{40,60})\b"),
    ("huggingface", &["hf_"], r"\b(hf_[A-Za-z0-9]{30,40})\b"),
    (
        "mistral",
        &["mistral"],
        r#"(?i)mistral[a-z_-]{0,20}["']?\s*[:=]\s*["']?([A-Za-z0-9]{32})\b"#,
    ),
    ("google", &["AIza"], r"\b(AIza[0-9A-Za-z_-]{35})"),
    (
        "aws-access-key",
        &[
            "akia", "asia", "abia", "acca", "a3t", "agpa", "aida", "aroa", "aipa", "anpa", "anva",
        ],
        r"\b((?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16})\b",
    ),
    (
        "aws-secret-key",
        &["aws"],
        r#"(?i)aws[a-z_-]{0,30}(?:secret|key)[a-z_-]{0,30}["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    ),
    ("npm", &["npm_"], r"\b(npm_[A-Za-z0-9]{36})\b"),
    // `.npmrc`'s `//registry/:_authToken=…`: the older tokens are bare UUIDs.
    // The name goes with the value: secretlint reports any `_authToken=` in an
    // `.npmrc` whose value does not start with `$`, a placeholder too.
    (
        "npmrc-auth-token",
        &["_authtoken"],
        r#"(?i)(_authToken\s*=\s*["']?[^\s"'$][^\s"']{7,})"#,
    ),
    (
        "pypi",
        &["pypi-AgEIcHlwaS5vcmc"],
        r"\b(pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,})",
    ),
    (
        "stripe",
        &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
        r"\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,99})\b",
    ),
    ("twilio", &["AC", "SK"], r"\b((?:AC|SK)[a-z0-9]{32})\b"),
    (
        "sendgrid",
        &["SG."],
        r"\b(SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64})",
    ),
    (
        "slack",
        &["xox", "xapp-"],
        r"\b((?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,})",
    ),
    (
        "slack-webhook",
        &["hooks.slack.com"],
        r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,})",
    ),
    (
        "discord-webhook",
        &["/api/webhooks/"],
        r"(https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{20,})",
    ),
    (
        "discord-bot-token",
        &[],
        // No `\b` at the end: the token may end in `-`.
        r"\b([MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?:[^A-Za-z0-9_-]|$)",
    ),
    ("telegram-bot", &[":AA"], r"\b([0-9]{8,10}:AA[0-9A-Za-z_-]{33})"),
    ("digitalocean", &["_v1_"], r"\b(do[opr]_v1_[a-f0-9]{64})\b"),
    (
        "shopify",
        &["shpat_", "shpca_", "shppa_", "shpss_"],
        r"\b(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32,64})\b",
    ),
    (
        "atlassian",
        &["atatt3", "atctt3"],
        r"\b(AT[AC]TT3[A-Za-z0-9_=-]{100,})",
    ),
    (
        "softlayer",
        &["softlayer"],
        r"(?i)\bapi\.softlayer\.com/soap/v3(?:\.1)?/([a-z0-9]{64})\b",
    ),
    ("mailchimp", &["-us"], r"\b([0-9a-f]{32}-us[0-9]{1,2})\b"),
    (
        "artifactory",
        &["AKC", "AP"],
        r#"(?:^|[\s=:"'])(AKC[a-zA-Z0-9]{10,}|AP[0-9ABCDEF][a-zA-Z0-9]{8,})\b"#,
    ),
    ("square", &["sq0"], r"\b(sq0(?:csp|atp)-[0-9A-Za-z_-]{22,43})"),
    ("1password", &["ops_ey"], r"\b(ops_ey[A-Za-z0-9+/=_-]{100,})"),
    (
        "cloudflare",
        &["cfk_", "cfut_", "cfat_"],
        r"\b((?:cfk|cfut|cfat)_[A-Za-z0-9]{40}[0-9a-f]{8})\b",
    ),
    ("databricks", &["dapi"], r"\b(dapi[a-f0-9]{32}(?:-[0-9])?)\b"),
    ("docker", &["dckr_pat_"], r"\b(dckr_pat_[A-Za-z0-9_-]{27,})"),
    ("figma", &["figd_"], r"\b(figd_[A-Za-z0-9_-]{40,200})"),
    (
        "grafana",
        &["glc_", "glsa_"],
        r"\b(glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})",
    ),
    (
        "hashicorp-vault",
        &["hvs.", "hvb.", "hvr."],
        r"\b(hv[sbr]\.[A-Za-z0-9_-]{90,300})",
    ),
    ("linear", &["lin_api_"], r"\b(lin_api_[A-Za-z0-9_]{32,128})"),
    (
        "notion",
        &["ntn_", "secret_"],
        r"\b(ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})\b",
    ),
    (
        "tailscale",
        &["tskey-"],
        r"\b(tskey-[a-z]{2,20}-[0-9A-Za-z_]{8,40}-[0-9A-Za-z_]{16,60})",
    ),
    (
        "vercel",
        &["vcp_", "vci_", "vca_", "vcr_", "vck_"],
        r"\b((?:vcp|vci|vca|vcr|vck)_[A-Za-z0-9]{20,60})\b",
    ),
    // A secret-named assignment (`.env`, YAML, JSON, query strings): password-like
    // names take any value of 4 or more characters, other names a long one.
    (
        "secret-assignment",
        &[
            "pass",
            "pwd",
            "secret",
            "token",
            "credential",
            "api_key",
            "api-key",
            "apikey",
            "access_key",
            "access-key",
            "auth_key",
            "auth-key",
            "private_key",
            "private-key",
            // detect-secrets' KeywordDetector names these too.
            "contrase",
            "servicekey",
            "service_key",
            "service-key",
            "accountkey",
            "account_key",
            "account-key",
            "dbkey",
            "db_key",
            "db-key",
            "databasekey",
            "database_key",
            "database-key",
            "privkey",
            "priv_key",
            "priv-key",
            "clientkey",
            "client_key",
            "client-key",
        ],
        r#"(?i)(?:^|[^a-z0-9])(?:[a-z0-9]{0,30}[_.-])?(?:(?:password|passwd|passphrase|pass|pwd|contrase(?:ñ|n)a)["']?\s*[:=]\s*["']?([^\s"',;&<>{}\[\]]{4,})|(?:secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|private[_-]?key|(?:service|account|db|database|priv|client)[_-]?key|client[_-]?secret|secret[_-]?key|credentials?)(?:[_-]?id)?["']?\s*[:=]\s*["']?([^\s"',;&<>{}\[\]]{12,}))"#,
    ),
    // A long random value under any other secret-sounding name (`SIGNING_KEY=…`,
    // `"clientKey": "…"`, `x-webhook-key: …`): what no pattern names. The name
    // is one of HIGH_ENTROPY_KEY_WORDS; the value is a secret only when
    // `entropy::looks_random` says so, so hashes, UUIDs and words survive.
    (
        HIGH_ENTROPY,
        HIGH_ENTROPY_KEY_WORDS,
        // ASCII only (`-u`) and nothing before the word: a name's counted
        // Unicode classes would cost the regex its fast engine (4x on the
        // redaction benchmark, whose base64 image holds `pwd`).
        r#"(?i-u)(?:key|secret|token|pass|pwd|auth|cred|salt|signature|hmac)[a-z0-9_.-]{0,20}["']?[ \t]*[:=][ \t]*["']?([A-Za-z0-9+/=_.-]{20,})"#,
    ),
];

/// The id of the entropy rule, in text and under JSON keys.
pub const HIGH_ENTROPY: &str = "high-entropy";

/// Words that make a name secret-sounding enough for a random value under it to
/// be a secret (wherever they stand in the name, in any case): the entropy rule's
/// keywords, and the JSON keys whose random values it hides.
pub const HIGH_ENTROPY_KEY_WORDS: &[&str] = &[
    "key",
    "secret",
    "token",
    "pass",
    "pwd",
    "auth",
    "cred",
    "salt",
    "signature",
    "hmac",
];
