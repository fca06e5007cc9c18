//! Whether a value under a secret-sounding name looks random enough to be a
//! secret: the check of the entropy rule ([`super::rules::HIGH_ENTROPY`]).

/// The least Shannon entropy, in bits per character, of a value the entropy rule
/// takes for a secret: gitleaks' generic-api-key threshold. Random hex of 20 or
/// more characters has about 3.7 to 4, random base64 4.2 and more; words,
/// identifiers and versions stay under it or fail the other checks.
/// detect-secrets' plugins, which read every quoted string whatever its name,
/// ask for more (4.5 for base64, 3 for hex).
pub const MIN_SECRET_ENTROPY_BITS: f64 = 3.5;

/// The fewest characters of a value the entropy rule takes for a secret.
pub const MIN_RANDOM_SECRET_CHARS: usize = 20;

/// The least entropy of a random value without a digit: letters alone must look
/// more random than an identifier in camel case does (about 3.6).
const MIN_LETTERS_ONLY_ENTROPY_BITS: f64 = 4.0;

/// Whether `value` looks like a random secret: long enough, made of the
/// characters tokens are made of, not a UUID, with [`MIN_SECRET_ENTROPY_BITS`]
/// per character, and mixed as random text is: some part of it (between `-`,
/// `_`, `.`, `+`, `/`, `=`) holds letters and digits together, or it has no
/// digit and both cases at [`MIN_LETTERS_ONLY_ENTROPY_BITS`]. So identifiers
/// (`user-settings-profile-2`, `CamelCaseName`), versions
/// (`1.2.3-rc.4+build.20261207`) and numbers are not.
pub(crate) fn looks_random(value: &str) -> bool {
    let bytes = value.as_bytes();
    let separator = |b: &u8| matches!(b, b'+' | b'/' | b'=' | b'_' | b'.' | b'-');
    if bytes.len() < MIN_RANDOM_SECRET_CHARS
        || !bytes.iter().all(|b| b.is_ascii_alphanumeric() || separator(b))
        || is_uuid(bytes)
    {
        return false;
    }
    let entropy = shannon_entropy(bytes);
    let mixed_part = bytes
        .split(separator)
        .any(|part| part.iter().any(u8::is_ascii_alphabetic) && part.iter().any(u8::is_ascii_digit));
    let letters_only = !bytes.iter().any(u8::is_ascii_digit)
        && bytes.iter().any(u8::is_ascii_lowercase)
        && bytes.iter().any(u8::is_ascii_uppercase)
        && entropy >= MIN_LETTERS_ONLY_ENTROPY_BITS;
    entropy >= MIN_SECRET_ENTROPY_BITS && (mixed_part || letters_only)
}

/// Bits per character of `bytes` (Shannon).
pub(crate) fn shannon_entropy(bytes: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    #[expect(clippy::cast_precision_loss, reason = "a length as a float")]
    let length = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| {
            let p = f64::from(n) / length;
            -p * p.log2()
        })
        .sum()
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(bytes: &[u8]) -> bool {
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                *b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_is_measured_as_detect_secrets_measures_it() {
        // detect-secrets' own figures (its HighEntropyStringsPlugin over the
        // base64 charset): `aaaa` 0, `ab` 1, all 64 base64 characters 6.
        assert!(shannon_entropy(b"aaaa").abs() < 1e-9);
        assert!((shannon_entropy(b"ab") - 1.0).abs() < 1e-9);
        let all = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        assert!((shannon_entropy(all) - 6.0).abs() < 1e-9);
    }

    #[test]
    fn random_tokens_look_random_and_ordinary_values_do_not() {
        for secret in [
            "8f14e45fceea167a5a36dedd4bea2543a8d1c6b2",
            "tR9xQ2mZ7vL4kP1sW8yB3nC6hJ0gF5dA",
            "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg==",
            "k3J_9x-Qm2vZ8pL4tR7sW1yB",
            "tRxQmZvLkPsWyBnChJgFdAqE",
        ] {
            assert!(looks_random(secret), "{secret}");
        }
        for clean in [
            "short1A",
            "created_at_timestamp_desc",
            "0123456789012345678901234567",
            "3f2a9c1e-8b7d-4e6f-a5c4-1d2e3f4a5b6c",
            "the value with spaces 1234 ABC",
            "https://example.com/a/b/c/d/e/1",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaa1",
            "1.2.3-rc.4+build.20261207",
            "user-settings-profile-2",
            "CamelCaseIdentifierName",
        ] {
            assert!(!looks_random(clean), "{clean}");
        }
    }
}
