//! String formats supported by CRD schemas (kube-openapi `strfmt.Default` as filtered by
//! apiextensions' `StripUnsupportedFormatsPostProcessor`), and Go-compatible duration/time parsing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use regex::Regex;

/// Formats validated for `type: string` (and for int-or-string), after go-openapi's name
/// normalisation (dashes removed). Unknown formats are ignored.
const STRING_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

fn normalize(format: &str) -> String {
    format.replace('-', "")
}

/// The format kube actually enforces for a node (`StripUnsupportedFormatsPostProcessorForVersion`):
/// unsupported formats become "".
pub(crate) fn effective_format(ty: &str, int_or_string: bool, format: &str) -> String {
    if format.is_empty() {
        return String::new();
    }
    let schema_type = if int_or_string { "" } else { ty };
    let keep = match schema_type {
        "" | "string" => STRING_FORMATS.contains(&normalize(format).as_str()),
        "integer" => format == "int32" || format == "int64",
        "number" => format == "float" || format == "double",
        _ => false,
    };
    if keep {
        format.to_string()
    } else {
        String::new()
    }
}

/// Whether `format` is a known string format of the default registry.
pub(crate) fn is_string_format(format: &str) -> bool {
    STRING_FORMATS.contains(&normalize(format).as_str())
}

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

macro_rules! static_re {
    ($name:ident, $pat:expr) => {
        fn $name() -> Option<&'static Regex> {
            static CELL: OnceLock<Option<Regex>> = OnceLock::new();
            re(&CELL, $pat)
        }
    };
}

static_re!(
    rx_hostname,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
static_re!(
    rx_uuid,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
static_re!(
    rx_uuid3,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
static_re!(
    rx_uuid4,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
static_re!(
    rx_uuid5,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
static_re!(
    rx_base64,
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
);
static_re!(rx_ssn, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$");
static_re!(rx_hexcolor, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
static_re!(
    rx_rgbcolor,
    r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$"
);
static_re!(
    rx_creditcard,
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11}|6[27][0-9]{14})$"
);
static_re!(rx_short_name, r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
static_re!(
    rx_long_name,
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
);
static_re!(
    rx_time_part,
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
);
static_re!(rx_scala_duration, r"(([0-9]+)\s*([A-Za-zµ]+))");
static_re!(rx_email_local, r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+$");

fn matches(r: Option<&'static Regex>, s: &str) -> bool {
    r.is_some_and(|r| r.is_match(s))
}

/// Validates `s` against a (known) string format; unknown formats pass.
pub(crate) fn validate_string_format(format: &str, s: &str) -> bool {
    match normalize(format).as_str() {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => is_hostname(s),
        "ipv4" => parse_ip_sloppy(s).is_some() && s.contains('.'),
        "ipv6" => parse_ip_sloppy(s).is_some() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "uuid" => matches(rx_uuid(), s),
        "uuid3" => matches(rx_uuid3(), s),
        "uuid4" => matches(rx_uuid4(), s),
        "uuid5" => matches(rx_uuid5(), s),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "ssn" => matches(rx_ssn(), s),
        "hexcolor" => matches(rx_hexcolor(), s),
        "rgbcolor" => matches(rx_rgbcolor(), s),
        "byte" => matches(rx_base64(), s),
        "password" => true,
        "date" => parse_date(s).is_some(),
        "duration" => parse_duration_loose(s).is_some(),
        "datetime" => is_date_time(s),
        "k8sshortname" => s.len() <= 63 && matches(rx_short_name(), s),
        "k8slongname" => s.len() <= 253 && matches(rx_long_name(), s),
        _ => true,
    }
}

fn is_hostname(s: &str) -> bool {
    matches(rx_hostname(), s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// Go's `url.ParseRequestURI` acceptance, approximately: an absolute URI (`scheme:...`) or an
/// absolute path, without ASCII control characters and with a space-free authority.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut sc = scheme.chars();
    let first_ok = sc.next().is_some_and(|c| c.is_ascii_alphabetic());
    if !first_ok || !sc.all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.') {
        return false;
    }
    if let Some(auth) = rest.strip_prefix("//") {
        let authority = auth.split(['/', '?', '#']).next().unwrap_or("");
        if authority.contains(' ') {
            return false;
        }
        let host = authority.rsplit('@').next().unwrap_or("");
        if let Some(h) = host.strip_prefix('[') {
            if !h.contains(']') {
                return false;
            }
        }
        return true;
    }
    // rootless paths after a scheme are opaque URIs, which Go accepts
    true
}

/// Go's `net/mail.ParseAddress`, approximately: `local@domain` or `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = if let (Some(open), true) = (s.rfind('<'), s.ends_with('>')) {
        &s[open + 1..s.len() - 1]
    } else {
        s
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        true
    } else {
        !local.is_empty()
            && matches(rx_email_local(), local)
            && !local.starts_with('.')
            && !local.ends_with('.')
            && !local.contains("..")
    };
    let domain_ok = if domain.starts_with('[') && domain.ends_with(']') {
        true
    } else {
        !domain.is_empty()
            && domain.split('.').all(|l| {
                !l.is_empty()
                    && l.chars()
                        .all(|c| c.is_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c))
            })
    };
    local_ok && domain_ok
}

/// Go's `netutils.ParseIPSloppy`: IPv4 octets may have leading zeros.
pub(crate) fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if s.contains(':') {
        return s.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut oct = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        oct[i] = p.parse::<u8>().ok()?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(oct)))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Some(addr) = parse_ip_sloppy(ip) else {
        return false;
    };
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    if bits.len() > 1 && bits.starts_with('0') {
        return false;
    }
    let Ok(n) = bits.parse::<u32>() else {
        return false;
    };
    match addr {
        IpAddr::V4(_) => n <= 32,
        IpAddr::V6(_) => n <= 128,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets separated by ':' or '-', or dot-separated 4-digit groups.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    let sizes = [6usize, 8, 20];
    for sep in [':', '-'] {
        if s.contains(sep) {
            let parts: Vec<&str> = s.split(sep).collect();
            return sizes.contains(&parts.len()) && parts.iter().all(|p| hex(p, 2));
        }
    }
    if s.contains('.') {
        let parts: Vec<&str> = s.split('.').collect();
        return sizes.contains(&(parts.len() * 2)) && parts.iter().all(|p| hex(p, 4));
    }
    false
}

fn is_isbn10(s: &str) -> bool {
    let clean: Vec<char> = s.chars().filter(|c| *c != ' ' && *c != '-').collect();
    if clean.len() != 10 {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in clean.iter().enumerate() {
        let v = if i == 9 && (*c == 'X') {
            10
        } else if let Some(d) = c.to_digit(10) {
            d
        } else {
            return false;
        };
        sum += (i as u32 + 1) * v;
    }
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let clean: Vec<char> = s.chars().filter(|c| *c != ' ' && *c != '-').collect();
    if clean.len() != 13 {
        return false;
    }
    let mut sum = 0u32;
    for (i, c) in clean.iter().enumerate() {
        let Some(d) = c.to_digit(10) else {
            return false;
        };
        sum += if i % 2 == 0 { d } else { 3 * d };
    }
    sum.is_multiple_of(10)
}

fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    if !matches(rx_creditcard(), &digits) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for c in digits.chars().rev() {
        let mut d = c.to_digit(10).unwrap_or(0);
        if double {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// RFC 3339 full-date, as Go's `time.Parse("2006-01-02", s)`.
pub(crate) fn parse_date(s: &str) -> Option<chrono::NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(|c| c.is_ascii_digit());
    if !digits(0..4) || !digits(5..7) || !digits(8..10) {
        return None;
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
}

/// kube-openapi `strfmt.IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || parse_date(parts[0]).is_none() {
        return false;
    }
    let Some(re) = rx_time_part() else {
        return false;
    };
    let Some(c) = re.captures(parts[1]) else {
        return false;
    };
    let g = |i: usize| c.get(i).map(|m| m.as_str()).unwrap_or("");
    g(1) <= "23" && g(2) <= "59" && g(3) <= "59"
}

/// kube-openapi `strfmt.ParseDateTime` (used to turn `format: date-time` strings into CEL timestamps).
pub(crate) fn parse_date_time(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t);
    }
    // ISO8601 local time without a zone is interpreted as UTC.
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S")
        .ok()
        .map(|n| n.and_utc().fixed_offset())
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub(crate) fn parse_go_duration(s: &str) -> Option<i64> {
    let mut rest = s;
    let mut neg = false;
    if let Some(r) = rest.strip_prefix('-') {
        neg = true;
        rest = r;
    } else if let Some(r) = rest.strip_prefix('+') {
        rest = r;
    }
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." {
            return None;
        }
        let value: f64 = num.parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let mult: f64 = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += value * mult;
    }
    if total > i64::MAX as f64 {
        return None;
    }
    let v = total as i64;
    Some(if neg { -v } else { v })
}

/// kube-openapi `strfmt.ParseDuration`: Go durations, or scala-like "5 days", in nanoseconds.
pub(crate) fn parse_duration_loose(s: &str) -> Option<i64> {
    if let Some(d) = parse_go_duration(s) {
        return Some(d);
    }
    const UNITS: &[(&[&str], i64)] = &[
        (&["ns", "nano"], 1),
        (&["us", "µs", "micro"], 1_000),
        (&["ms", "milli"], 1_000_000),
        (&["s", "sec"], 1_000_000_000),
        (&["m", "min"], 60_000_000_000),
        (&["h", "hr", "hour"], 3_600_000_000_000),
        (&["d", "day"], 86_400_000_000_000),
        (&["w", "wk", "week"], 604_800_000_000_000),
    ];
    let re = rx_scala_duration()?;
    let mut ok = false;
    let mut total: i64 = 0;
    for cap in re.captures_iter(s) {
        let factor: i64 = cap.get(2)?.as_str().parse().ok()?;
        let unit = cap.get(3)?.as_str().trim().to_lowercase();
        for (variants, mult) in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || unit.eq_ignore_ascii_case(v) {
                    ok = true;
                    total = total.wrapping_add(factor.wrapping_mul(*mult));
                }
            }
        }
    }
    ok.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_formats() {
        assert_eq!(effective_format("string", false, "date-time"), "date-time");
        assert_eq!(effective_format("string", false, "foo"), "");
        assert_eq!(effective_format("integer", false, "int32"), "int32");
        assert_eq!(effective_format("integer", false, "date"), "");
        assert_eq!(effective_format("number", false, "double"), "double");
        assert_eq!(effective_format("object", false, "byte"), "");
        assert_eq!(effective_format("", true, "byte"), "byte");
    }

    fn check(format: &str, good: &[&str], bad: &[&str]) {
        for g in good {
            assert!(
                validate_string_format(format, g),
                "{format}: {g} should be valid"
            );
        }
        for b in bad {
            assert!(
                !validate_string_format(format, b),
                "{format}: {b} should be invalid"
            );
        }
    }

    #[test]
    fn string_formats() {
        check("byte", &["aGVsbG8=", "YWJj"], &["hello!", "", "abc"]);
        check("date", &["2024-02-29"], &["2023-02-29", "2024-1-01", "x"]);
        check(
            "date-time",
            &["2024-01-02T03:04:05Z", "2024-01-02t03:04:05.123+01:00"],
            &["2024-01-02", "2024-01-02T25:00:00Z", "2024-01-02T03:04:05"],
        );
        check(
            "duration",
            &["1h30m", "1.5s", "-5m", "0", "3 days", "5 weeks"],
            &["", "abc", "1x"],
        );
        check(
            "uuid",
            &[
                "123e4567-e89b-12d3-a456-426614174000",
                "123E4567E89B12D3A456426614174000",
            ],
            &["123e4567"],
        );
        check(
            "email",
            &["a@b.com", "John <john@example.com>"],
            &["nope", "@b", "a@"],
        );
        // go-openapi's hostname regex only allows a dash right after the first character of a
        // single-label name, so "my-host" is (faithfully) rejected.
        check(
            "hostname",
            &["example.com", "a", "a-host", "my-host.example.com"],
            &["-a", "a..b", "", "my-host"],
        );
        check(
            "ipv4",
            &["10.0.0.1", "010.0.0.1"],
            &["10.0.0", "::1", "256.0.0.1"],
        );
        check("ipv6", &["::1", "fe80::1"], &["10.0.0.1", "fe80::z"]);
        check(
            "cidr",
            &["10.0.0.0/8", "fe80::/10"],
            &["10.0.0.0", "10.0.0.0/33"],
        );
        check(
            "uri",
            &["https://example.com/x", "/abs/path", "mailto:a@b"],
            &["rel/path", ""],
        );
        check(
            "mac",
            &["01:23:45:67:89:ab", "0123.4567.89ab"],
            &["01:23:45"],
        );
        check("k8s-short-name", &["my-name"], &["My-Name", "-x"]);
        check("k8s-long-name", &["a.b-c.d"], &["a..b"]);
        check("isbn10", &["0321751043"], &["0321751044"]);
        check("isbn13", &["978-0321751041"], &["978-0321751042"]);
        check(
            "creditcard",
            &["4111 1111 1111 1111"],
            &["4111 1111 1111 1112"],
        );
        check("ssn", &["123-45-6789"], &["12-345-6789"]);
        check("hexcolor", &["#fff", "a0a0a0"], &["#ggg"]);
        check("rgbcolor", &["rgb(1, 2, 255)"], &["rgb(256,0,0)"]);
        check("bsonobjectid", &["507f1f77bcf86cd799439011"], &["507f1f77"]);
        check("password", &["anything"], &[]);
        check("unknown-format", &["anything"], &[]);
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse_go_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_go_duration("-2ms"), Some(-2_000_000));
        assert_eq!(parse_go_duration("300us"), Some(300_000));
        assert_eq!(parse_go_duration("1"), None);
        assert_eq!(parse_go_duration("1d"), None);
        assert_eq!(parse_duration_loose("1d"), Some(86_400_000_000_000));
    }

    #[test]
    fn date_times() {
        assert!(parse_date_time("2024-01-02T03:04:05Z").is_some());
        assert!(parse_date_time("2024-01-02T03:04:05").is_some());
        assert!(parse_date_time("nope").is_none());
    }
}
